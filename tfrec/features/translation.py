"""Translation connectors (features layer): one text per language, as tensorflow_datasets stores them.

``Translation`` is a dict of :class:`Text`, one per language (``key/en``,
``key/fr``); ``TranslationVariableLanguages`` is a sequence of
``(language, translation)`` pairs sorted by language then text, stored as the
two lists ``key/language`` and ``key/translation``. The languages are
metadata, saved in features.json.

Example:
    >>> pair = Translation(languages=["en", "fr"])
    >>> pair.encode_flat({"en": "the cat", "fr": "le chat"}, "t")
    {'en': b'the cat', 'fr': b'le chat'}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import EncodeError
from .base import TFDS_PREFIX, Documentation
from .features_dict import FeaturesDict
from .sequence import Sequence
from .text import Text

__all__ = ["Translation", "TranslationVariableLanguages"]


class Translation(FeaturesDict):
    """The same text in each of a fixed set of languages: ``{"en": ..., "fr": ...}`` in and out.

    Example:
        >>> Translation(languages=["de", "en"]).languages
        ['de', 'en']
    """

    _tfds_name = TFDS_PREFIX + "translation_feature.Translation"
    _json_field = "translation"

    def __init__(
        self,
        languages: Iterable[str],
        *,
        doc: str | Documentation | None = None,
        value_range: str | None = None,
    ) -> None:
        super().__init__({language: Text() for language in languages}, doc=doc, value_range=value_range)

    @property
    def languages(self) -> list[str]:
        """The language codes, sorted."""
        return sorted(self.features)

    def __repr__(self) -> str:
        return f"Translation(languages={self.languages!r})"

    def _json_content(self) -> dict[str, Any]:
        return {"languages": self.languages}

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> Translation:
        return cls(languages=content.get("languages", []))

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> Translation:
        return cls(languages=content.get("languages", []))


class TranslationVariableLanguages(Sequence):
    """Translations in any languages, several per language allowed.

    A value maps a language code to a text or a list of texts; it is stored and
    decoded as ``{"language": [...], "translation": [...]}``, pairs sorted by
    language then text (tfds' layout).

    Args:
        languages: the language codes allowed, or ``None`` for any.

    Example:
        >>> tvl = TranslationVariableLanguages(languages=["en", "fr"])
        >>> tvl.encode_flat({"fr": ["le chat", "la chatte"], "en": "the cat"}, "t")["language"]
        array([b'en', b'fr', b'fr'], dtype=object)
    """

    _tfds_name = TFDS_PREFIX + "translation_feature.TranslationVariableLanguages"
    _json_field = "translation"

    def __init__(
        self,
        languages: Iterable[str] | None = None,
        *,
        doc: str | Documentation | None = None,
        value_range: str | None = None,
    ) -> None:
        self.language_set = frozenset(languages) if languages else None
        super().__init__({"language": Text(), "translation": Text()}, doc=doc, value_range=value_range)

    @property
    def languages(self) -> list[str] | None:
        """The allowed language codes, sorted, or None when any is allowed."""
        return sorted(self.language_set) if self.language_set else None

    @property
    def num_languages(self) -> int | None:
        return len(self.language_set) if self.language_set else None

    def __repr__(self) -> str:
        return f"TranslationVariableLanguages(languages={self.languages!r})"

    def _key(self) -> tuple[Any, ...]:
        return (*super()._key(), tuple(self.languages or ()))

    def encode_flat(self, value: Any, path: str) -> dict[str, Any]:
        where = f"{path} ({self!r})"
        if not isinstance(value, Mapping):
            raise EncodeError(f"{where}: expected a dict of language -> text(s), found {value!r}", key=path)
        if self.language_set is not None and set(value) - self.language_set:
            unknown = sorted(set(value) - self.language_set)
            raise EncodeError(f"{where}: languages {unknown} are not among {self.languages}", key=path)
        pairs = sorted(
            (language, text)
            for language, texts in value.items()
            for text in ([texts] if isinstance(texts, (str, bytes)) else texts)
        )
        items = {"language": [p[0] for p in pairs], "translation": [p[1] for p in pairs]}
        return super().encode_flat(items, path)

    def _json_content(self) -> dict[str, Any]:
        content: dict[str, Any] = {"variableLanguagesPerExample": True}
        if self.languages:
            content["languages"] = self.languages
        return content

    @classmethod
    def _from_json_content(cls, content: dict[str, Any]) -> TranslationVariableLanguages:
        return cls(languages=content.get("languages") or None)

    @classmethod
    def _from_legacy_content(cls, content: dict[str, Any]) -> TranslationVariableLanguages:
        return cls(languages=content.get("languages") or None)
