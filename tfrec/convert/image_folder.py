"""Image folders -> samples: ``root/class_name/*.png`` -> Image + ClassLabel (convert layer).

Class names are the sub-directories' names in sorted order (label 0 is the first), as
``tfds.folder_dataset.ImageFolder`` and torchvision's ``ImageFolder`` number them. Images are
stored as their file bytes (PNG or JPEG), never re-encoded. Only the file names are listed ahead;
each image is read when its sample is written.

Example:
    >>> samples = read_image_folder("flowers/train")
    >>> samples.features["label"].names
    ['daisy', 'rose', 'tulip']
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ..errors import ConvertError
from ..features import ClassLabel, FeaturesDict, Image, Text
from ..features.image import image_channels
from .samples import Samples

__all__ = ["IMAGE_SUFFIXES", "read_image_folder"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


def read_image_folder(root: str | os.PathLike[str], *, shuffle_seed: int | None = None) -> Samples:
    """Samples ``{"image": bytes, "label": class name, "filename": "class/file.png"}`` of an image folder.

    Args:
        root: a directory with one sub-directory per class.
        shuffle_seed: write the images in a random order drawn from this seed (``None``:
            class by class, files in sorted order).

    Example:
        >>> next(iter(read_image_folder("digits/")))["label"]
        'zero'
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise ConvertError("not a directory of class folders", path=root)
    classes = sorted(
        d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)) and not d.startswith(".")
    )
    if not classes:
        raise ConvertError("no class folders (root/class_name/image.png)", path=root)
    files = [
        (name, os.path.join(name, f))
        for name in classes
        for f in sorted(os.listdir(os.path.join(root, name)))
        if f.lower().endswith(IMAGE_SUFFIXES)
    ]
    if not files:
        raise ConvertError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in the class folders", path=root)
    if shuffle_seed is not None:
        import random

        random.Random(shuffle_seed).shuffle(files)
    with open(os.path.join(root, files[0][1]), "rb") as file:
        channels = image_channels(file.read(64 * 1024))
    features = FeaturesDict(
        {
            "image": Image(shape=(None, None, channels if channels in (1, 3, 4) else 4)),
            "label": ClassLabel(names=classes),
            "filename": Text(),
        }
    )

    def samples() -> Iterator[dict[str, Any]]:
        for label, relative in files:
            with open(os.path.join(root, relative), "rb") as file:
                data = file.read()
            yield {"image": data, "label": label, "filename": relative.replace(os.sep, "/")}

    return Samples(features, samples(), root)
