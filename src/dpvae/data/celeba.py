"""CelebA at 32×32 conditioned on gender, as DP²-VAE uses it (docs/papers.md §4.3).

Train: 60,000 images drawn (seeded, without replacement) from the official training partition;
test: the whole official test partition. Each aligned 178×218 image is centre-cropped to 178×178
(torchvision ``CenterCrop`` offsets) and resized to 32×32 with PIL bilinear (torchvision ``Resize`` on
PIL images); x = (N, 3, 32, 32) in [0, 1]; y = the "Male" attribute (1 male, 0 female).
"""

from __future__ import annotations

from pathlib import Path
from zipfile import ZipFile

import numpy as np
import pandas as pd
from PIL import Image

from dpvae.data.domain import images_domain
from dpvae.data.errors import DataError
from dpvae.data.sources import RemoteFile
from dpvae.data.store import Prepared, Split

IMAGE_SIZE = 32
N_TRAIN = 60_000
PARTITIONS = {"train": 0, "valid": 1, "test": 2}
LABEL_NAMES = ("female", "male")  # the Male attribute: -1 / 1 in list_attr_celeba.txt
CHECKSUM_NOTE = (
    "sha256 and size published by TensorFlow Datasets (tensorflow/datasets, "
    "tensorflow_datasets/datasets/celeb_a/checksums.tsv); md5 published by torchvision (datasets/celeba.py file_list)"
)


def _drive_urls(file_id: str) -> tuple[str, ...]:
    """Google Drive links of the official CelebA folder; the first skips Drive's large-file warning page."""
    return (
        f"https://drive.usercontent.google.com/download?id={file_id}&export=download&confirm=t",
        f"https://drive.google.com/uc?export=download&id={file_id}",
    )


CELEBA_FILES = (
    RemoteFile(
        "img_align_celeba.zip", _drive_urls("0B7EVK8r0v71pZjFTYXZWM3FlRnM"),
        sha256="46fb89443c578308acf364d7d379fe1b9efb793042c0af734b6112e4fd3a8c74",
        md5="00d2c5bc6d35e252742224ab0c1e8fcb", size=1443490838, checksum_source=CHECKSUM_NOTE,
    ),
    RemoteFile(
        "list_attr_celeba.txt", _drive_urls("0B7EVK8r0v71pblRyaVFSWGxPY0U"),
        sha256="f0e5da289d5ccf75ffe8811132694922b60f2af59256ed362afa03fefba324d0",
        md5="75e246fa4810816ffd6ee81facbd244c", size=26721026, checksum_source=CHECKSUM_NOTE,
    ),
    RemoteFile(
        "list_eval_partition.txt", _drive_urls("0B7EVK8r0v71pY0NSMzRuSXJEVkk"),
        sha256="fc955bcb3ef8fbdf7d5640d9a8693a8431b5f2ee291a5c1449a1549e7e073fe7",
        md5="d32c9cbf5e040fd4025c592c306e6668", size=2836386, checksum_source=CHECKSUM_NOTE,
    ),
)  # fmt: skip


def read_partition(path: Path) -> pd.Series:
    """Image name -> partition code (0 train, 1 valid, 2 test), in file order."""
    table = pd.read_csv(path, sep=r"\s+", header=None, names=["image", "partition"])
    if table["partition"].isna().any() or set(table["partition"]) - set(PARTITIONS.values()):
        raise DataError(f"{path}: expected '<image> <0|1|2>' lines")
    return table.set_index("image")["partition"]


def read_attributes(path: Path) -> pd.DataFrame:
    """The ±1 attribute table (index = image name); line 1 is the count, line 2 the 40 attribute names."""
    with open(path) as stream:
        stream.readline()
        names = stream.readline().split()
    table = pd.read_csv(path, sep=r"\s+", skiprows=2, header=None, names=["image", *names]).set_index("image")
    if "Male" not in table.columns or not table.isin([-1, 1]).all().all():
        raise DataError(f"{path}: expected a 'Male' column and ±1 attribute values")
    return table


def centre_square_resize(image: Image.Image, size: int) -> np.ndarray:
    """Centre-crop to the largest square (torchvision CenterCrop offsets), resize bilinearly to size×size (H, W, 3)."""
    width, height = image.size
    side = min(width, height)
    left, top = int(round((width - side) / 2.0)), int(round((height - side) / 2.0))
    square = image.convert("RGB").crop((left, top, left + side, top + side))
    return np.asarray(square.resize((size, size), Image.Resampling.BILINEAR))


def load_faces(archive_path: Path, names: list[str], size: int = IMAGE_SIZE) -> np.ndarray:
    """Decode, crop and resize the named images of ``img_align_celeba.zip``; uint8 (N, 3, size, size)."""
    faces = np.empty((len(names), size, size, 3), dtype=np.uint8)
    with ZipFile(archive_path) as archive:
        members = {Path(info.filename).name: info for info in archive.infolist() if not info.is_dir()}
        for index, name in enumerate(names):
            if name not in members:
                raise DataError(f"{archive_path}: image {name} listed in the partition file is missing")
            with archive.open(members[name]) as stream, Image.open(stream) as image:
                faces[index] = centre_square_resize(image, size)
    return faces.transpose(0, 3, 1, 2)


def build_celeba(raw_dir: Path, seed: int, *, n_train: int = N_TRAIN) -> Prepared:
    """CelebA 32×32: ``n_train`` seeded draws from the official train partition; the official test partition."""
    partition = read_partition(raw_dir / "list_eval_partition.txt")
    male = read_attributes(raw_dir / "list_attr_celeba.txt")["Male"]
    train_pool = partition.index[partition == PARTITIONS["train"]]
    if n_train > len(train_pool):
        raise ValueError(f"n_train={n_train} exceeds the {len(train_pool)} images of the official train partition")
    chosen = np.sort(np.random.default_rng(seed).choice(len(train_pool), n_train, replace=False))
    names = {"train": list(train_pool[chosen]), "test": list(partition.index[partition == PARTITIONS["test"]])}
    splits = {}
    for split, split_names in names.items():
        x = load_faces(raw_dir / "img_align_celeba.zip", split_names).astype(np.float32) / np.float32(255)
        y = (male.loc[split_names].to_numpy() == 1).astype(np.int64)
        splits[split] = Split(x, y)
    meta = {
        "scaling": "centre crop to 178x178, PIL bilinear resize to 32x32, pixel / 255",
        "split": {
            "rule": f"train = {n_train} images of the official train partition (numpy default_rng(seed).choice, "
            "sorted by file name); test = official test partition",
            "seed": seed,
        },
        "label_names": list(LABEL_NAMES),
        "positive_class": 1,
        "domain": images_domain(LABEL_NAMES).to_dict(),  # 8-bit JPEG pixels /255; the Male attribute's two values
        "options": {"n_train": n_train, "image_size": IMAGE_SIZE, "label_attribute": "Male"},
    }
    return Prepared(splits["train"], splits["test"], meta)
