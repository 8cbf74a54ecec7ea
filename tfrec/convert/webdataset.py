"""tar / tar.gz archives and directories in the webdataset layout -> samples (convert layer).

Files are grouped by basename: ``000123.jpg`` and ``000123.cls`` become one sample
``{"__key__": "000123", "jpg": b"...", "cls": b"..."}``. The key is the path up to the first dot
of the file name, the extension (the sample's key) everything after it (``a.seg.png`` -> ``seg.png``).
A sample is the run of consecutive members sharing a basename, so archives are read as one stream
(``tar`` writes them in order; directories are walked in sorted order), and memory holds one
sample at a time.

A member is read whole (it becomes one value), so members larger than :data:`MAX_MEMBER_BYTES`
(1 GiB; ``max_member_bytes=`` changes it) are refused from their tar header, before any of their
bytes is read: a ``.tar.gz`` of zeros cannot make the converter run out of memory. A member within
the limit that does not fit in memory is a :class:`~tfrec.ConvertError` too, naming it.

Values are then typed: by a types map (``cls=int64``), else by extension (``cls``, ``id``, ``index``
-> int64; ``txt`` -> text; ``png``, ``jpg``, ``jpeg`` -> image; anything else bytes).

Example:
    >>> samples = read_webdataset("shards/train-000.tar", types={"cls": "int64"})
    >>> samples.features
    FeaturesDict({'cls': Tensor(shape=(), dtype=int64), 'jpg': Image(shape=(None, None, 3), dtype=uint8)})
    >>> next(iter(samples))
    {'cls': 3, 'jpg': b'\\xff\\xd8...'}
"""

from __future__ import annotations

import gzip
import itertools
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

from ..errors import ConvertError, InvalidArgumentError
from ..features import FeaturesDict, Text
from .samples import Samples, connector_from_value
from .transforms import KEY, Transform, apply, original_name
from .types import coerce, connector_for, parse_types

__all__ = ["MAX_MEMBER_BYTES", "default_type", "read_members", "read_webdataset", "split_name"]

# The largest member read by default. A value becomes one feature of one Example, and protobuf
# (TensorFlow's parser too) refuses messages of 2 GiB or more.
MAX_MEMBER_BYTES = 1 << 30

_DEFAULT_TYPES = {
    **dict.fromkeys(("cls", "cls2", "class", "count", "index", "inx", "id"), "int64"),
    **dict.fromkeys(("txt", "text", "transcript"), "text"),
    **dict.fromkeys(("png", "jpg", "jpeg"), "image"),
}


def default_type(extension: str) -> str:
    """The type a member gets from its extension alone: ``cls`` -> int64, ``png`` -> image, ..."""
    return _DEFAULT_TYPES.get(extension.rsplit(".", 1)[-1].lower(), "bytes")


def split_name(name: str) -> tuple[str, str]:
    """``"dir/000123.seg.png"`` -> ``("dir/000123", "seg.png")`` (webdataset's rule)."""
    directory, _, base = name.rpartition("/")
    stem, _, extension = base.partition(".")
    return (f"{directory}/{stem}" if directory else stem), extension


def _tar_files(source: str | IO[bytes], where: str, limit: int) -> Iterator[tuple[str, bytes]]:
    """``(name, data)`` of each regular file of a tar (or tar.gz) stream, read in one pass.

    The 512-byte headers are read directly (ustar, GNU long names, pax ``path`` records): three
    times faster than :mod:`tarfile` for archives of small files, which is what webdatasets hold.
    """
    raw: IO[bytes] = open(source, "rb") if isinstance(source, str) else source  # noqa: SIM115
    try:
        head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        if not head and isinstance(source, str):
            head = raw.read(2)
            raw.seek(0)
        stream: Any = gzip.GzipFile(fileobj=raw, mode="rb") if head == b"\x1f\x8b" else raw
        yield from _members(stream, where, limit)
    except (OSError, EOFError, zlib.error) as exc:
        raise ConvertError(f"damaged tar archive: {exc}", path=where) from None
    finally:
        if isinstance(source, str):
            raw.close()


def _octal(field: bytes, where: str) -> int:
    text = field.rstrip(b" \0").lstrip(b" ")
    try:
        return int(text or b"0", 8)
    except ValueError:
        raise ConvertError(f"not a tar archive (bad header field {field!r})", path=where) from None


def _member_name(header: bytes, long_name: str | None) -> str:
    if long_name is not None:
        return long_name
    name = header[0:100].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
    if header[257:262] == b"ustar" and header[345]:
        prefix = header[345:500].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        name = f"{prefix}/{name}"
    return name


def _read_member(
    stream: IO[bytes], size: int, name: str, offset: int | None, where: str, limit: int
) -> bytes:
    """A member's bytes, refused from its header when larger than ``limit`` or than memory allows."""
    place = f"member {name!r}" + (f" at byte {offset}" if offset is not None else "")
    if size > limit:
        raise ConvertError(
            f"the member holds {size} bytes, larger than the limit of {limit} bytes for one value "
            "(max_member_bytes); split it, or raise the limit if it really is one value",
            path=where,
            where=place,
        )
    try:
        return stream.read(size)
    except MemoryError:
        raise ConvertError(
            f"the member holds {size} bytes: more than memory allows", path=where, where=place
        ) from None


def _members(stream: IO[bytes], where: str, limit: int) -> Iterator[tuple[str, bytes]]:
    long_name: str | None = None
    offset = 0
    while True:
        header = stream.read(512)
        if len(header) < 512 or header == bytes(512):
            if header and len(header) < 512:
                raise ConvertError(f"truncated tar header at byte {offset}", path=where)
            return
        stored = _octal(header[148:156], where)
        if stored != sum(header) - sum(header[148:156]) + 256:
            raise ConvertError(f"not a tar archive (header checksum mismatch at byte {offset})", path=where)
        if header[124] & 0x80:
            raise ConvertError(f"a member at byte {offset} is larger than 8 GiB", path=where)
        size = _octal(header[124:136], where)
        kind = header[156:157]
        data = _read_member(stream, size, _member_name(header, long_name), offset, where, limit)
        if len(data) < size:
            raise ConvertError(f"truncated tar member at byte {offset}", path=where)
        padding = -size % 512
        if padding:
            stream.read(padding)
        offset += 512 + size + padding
        if kind == b"L":  # GNU: the next member's long name
            long_name = data.rstrip(b"\0").decode("utf-8", "surrogateescape")
            continue
        if kind == b"x":  # pax: records "LEN key=value\n"; only the path matters here
            for record in data.split(b"\n"):
                key, _, value = record.partition(b" ")[2].partition(b"=")
                if key == b"path":
                    long_name = value.decode("utf-8", "surrogateescape")
            continue
        if kind not in (b"0", b"\0", b"7"):  # directories, links, global pax headers...: no sample data
            long_name = None
            continue
        name = _member_name(header, long_name)
        long_name = None
        yield name.removeprefix("./"), data


def _directory_files(root: str, limit: int) -> Iterator[tuple[str, bytes]]:
    names: list[str] = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories.sort()
        names.extend(os.path.relpath(os.path.join(directory, f), root).replace(os.sep, "/") for f in files)
    for name in sorted(names):
        if name.rpartition("/")[2].startswith("."):
            continue  # hidden files (editors' and OSes' leftovers) are no sample's part
        with open(os.path.join(root, name), "rb") as file:
            size = os.fstat(file.fileno()).st_size
            yield name, _read_member(file, size, name, None, root, limit)


def read_members(
    source: str | os.PathLike[str] | IO[bytes], *, max_member_bytes: int = MAX_MEMBER_BYTES
) -> Iterator[dict[str, Any]]:
    """The raw samples of a tar archive, tar.gz, directory or binary stream: bytes values, by extension.

    Raises:
        ConvertError: the archive is damaged, or a member is larger than ``max_member_bytes`` (or
            than memory allows), named with its byte offset in the (decompressed) archive.

    Example:
        >>> next(read_members("train.tar"))
        {'__key__': '000000', 'cls': b'3', 'png': b'\\x89PNG...'}
    """
    if isinstance(source, (str, os.PathLike)):
        where = os.fspath(source)
        if os.path.isdir(where):
            files = _directory_files(where, max_member_bytes)
        else:
            files = _tar_files(where, where, max_member_bytes)
    else:
        where = getattr(source, "name", "<stdin>")
        files = _tar_files(source, str(where), max_member_bytes)
    sample: dict[str, Any] | None = None
    for name, data in files:
        key, extension = split_name(name)
        if not extension:
            raise ConvertError(
                f"member {name!r} has no extension: the extension names the value within a sample",
                path=str(where),
            )
        if sample is not None and sample[KEY] != key:
            yield sample
            sample = None
        if sample is None:
            sample = {KEY: key}
        if extension in sample:
            raise ConvertError(f"sample {key!r} has two {extension!r} members", path=str(where))
        sample[extension] = data
    if sample is not None:
        yield sample


def _typed(sample: dict[str, Any], type_of: Callable[[str], str]) -> dict[str, Any]:
    name = sample[KEY]
    out = {}
    for key, value in sample.items():
        if key == KEY:
            out[key] = value
        elif isinstance(value, (bytes, bytearray)):
            out[key] = coerce(value, type_of(key), where=f"sample {name!r}, {key!r}")
        else:
            out[key] = value  # a --map function made it; stored as its Python type says
    return out


def _checked(
    samples: Iterable[dict[str, Any]], expected: Sequence[str], where: str
) -> Iterator[dict[str, Any]]:
    wanted = set(expected)
    for sample in samples:
        found = set(sample) - {KEY}
        if found != wanted:
            missing, extra = sorted(wanted - found), sorted(found - wanted)
            problem = []
            if missing:
                partners = ", ".join(sorted(found)) or "nothing"
                problem.append(
                    f"has no {', '.join(repr(k) for k in missing)} (a member without a partner: "
                    f"found only {partners})"
                )
            if extra:
                problem.append(f"has {', '.join(repr(k) for k in extra)}, which the first sample lacks")
            raise ConvertError(
                f"{' and '.join(problem)}; every sample needs {', '.join(sorted(wanted))}",
                path=where,
                where=f"sample {sample[KEY]!r}",
            )
        yield sample


def read_webdataset(
    source: str | os.PathLike[str] | IO[bytes],
    *,
    types: Mapping[str, str] | str | None = None,
    transforms: Sequence[Transform] = (),
    features: FeaturesDict | None = None,
    key_name: str | None = None,
    max_member_bytes: int = MAX_MEMBER_BYTES,
) -> Samples:
    """Samples of a webdataset-style tar, tar.gz or directory, typed and checked.

    Args:
        source: a tar or tar.gz path, a directory, or a binary stream of a tar archive.
        types: ``{extension: type}`` or ``"cls=int64,jpg=image"``; other extensions by
            :func:`default_type`. Type names: int64, float32, text, bytes, image.
        transforms: selections, renames, ``drop_empty`` and user functions
            (:mod:`tfrec.convert.transforms`), applied to the raw bytes samples before typing.
        features: the FeaturesDict to store samples with; by default proposed from the types
            and the first sample.
        key_name: also store each sample's ``__key__`` as text under this name.
        max_member_bytes: the largest member read (:data:`MAX_MEMBER_BYTES`, 1 GiB, by default);
            a larger one is a :class:`~tfrec.ConvertError` naming it, raised before it is read.

    Every sample must have the same keys as the first; a member without its partner is a
    :class:`~tfrec.ConvertError` naming the sample.

    Example:
        >>> samples = read_webdataset("digits.tar", types="cls=int64", transforms=[keep(names=["png"])])
    """
    type_map = parse_types(types)
    where = (
        os.fspath(source)
        if isinstance(source, (str, os.PathLike))
        else str(getattr(source, "name", "<stdin>"))
    )
    raw = apply(read_members(source, max_member_bytes=max_member_bytes), transforms)
    try:
        first = next(raw)
    except StopIteration:
        raise ConvertError(
            "no samples: the archive holds no file (after the selections)", path=where
        ) from None

    def type_of(key: str) -> str:  # a type names a key as stored or its member's extension (before renames)
        extension = original_name(key, transforms)
        return type_map.get(key) or type_map.get(extension) or default_type(extension)

    unknown = sorted(set(type_map) - set(first) - {original_name(key, transforms) for key in first})
    if unknown and features is None:
        raise InvalidArgumentError(
            f"types: {', '.join(unknown)} not found in the first sample {first[KEY]!r} "
            f"(its keys: {', '.join(sorted(set(first) - {KEY}))})"
        )
    if features is None:
        proposed: dict[str, Any] = {}
        for key, value in first.items():
            if key == KEY:
                continue
            if isinstance(value, (bytes, bytearray)):
                proposed[key] = connector_for(type_of(key), value)
            else:  # made by a --map function: stored as its Python type says
                proposed[key] = connector_from_value(value, key)
        if key_name is not None:
            proposed[key_name] = Text()
        features = FeaturesDict(proposed)
    expected = sorted(set(first) - {KEY})

    def samples() -> Iterator[dict[str, Any]]:
        for sample in _checked(itertools.chain([first], raw), expected, where):
            typed = _typed(sample, type_of)
            if key_name is not None:
                typed[key_name] = sample[KEY]
            yield typed

    return Samples(features, samples(), where)
