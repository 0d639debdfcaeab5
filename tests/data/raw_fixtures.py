"""Writers of small raw files in the real datasets' formats (IDX, Unix .Z, ARFF, CelebA lists/zip)."""

from __future__ import annotations

import gzip
import io
import struct
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image


def write_idx(path: Path, array: np.ndarray) -> None:
    """An unsigned-byte IDX file, gzip-compressed (the MNIST distribution format)."""
    header = b"\x00\x00\x08" + bytes([array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb", compresslevel=1) as stream:
        stream.write(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def write_mnist_like(
    raw_dir: Path, train: np.ndarray, train_labels: np.ndarray, test: np.ndarray, test_labels: np.ndarray
) -> None:
    raw_dir.mkdir(parents=True, exist_ok=True)
    write_idx(raw_dir / "train-images-idx3-ubyte.gz", train)
    write_idx(raw_dir / "train-labels-idx1-ubyte.gz", train_labels)
    write_idx(raw_dir / "t10k-images-idx3-ubyte.gz", test)
    write_idx(raw_dir / "t10k-labels-idx1-ubyte.gz", test_labels)


def unix_compress(data: bytes, max_bits: int = 16) -> bytes:
    """LZW-compress ``data`` in the Unix ``compress`` (.Z) format: block mode, 9..max_bits-bit codes.

    Codes are packed LSB-first; when the code width grows, the stream is padded to a whole group of
    8 codes of the old width (counted from where that width began), as ``compress`` and ``gzip -d`` do.
    """
    table = {bytes([value]): value for value in range(256)}
    codes, word = [], b""
    for value in data:
        extended = word + bytes([value])
        if extended in table:
            word = extended
            continue
        codes.append(table[word])
        if len(table) + 1 < (1 << max_bits):
            table[extended] = len(table) + 1  # code 256 is CLEAR, so new entries start at 257
        word = bytes([value])
    if word:
        codes.append(table[word])
    packed, segment_start, position, n_bits = 0, 0, 0, 9
    for number, code in enumerate(codes, start=1):
        decoder_free_entry = 257 + max(number - 2, 0)
        if decoder_free_entry > (1 << n_bits) - 1 and n_bits < max_bits:
            group = 8 * n_bits
            position = segment_start + -(-(position - segment_start) // group) * group
            segment_start, n_bits = position, n_bits + 1
        packed |= code << position
        position += n_bits
    return b"\x1f\x9d" + bytes([0x80 | max_bits]) + packed.to_bytes((position + 7) // 8, "little")


def write_arff(path: Path, frame: pd.DataFrame, nominal: dict[str, list[str]]) -> None:
    """A dense ARFF file; columns in ``nominal`` are declared (and written) as quoted nominal values."""
    lines = ["% fixture", "@RELATION fixture", ""]
    for name in frame.columns:
        kind = "{" + ",".join(f"'{value}'" for value in nominal[name]) + "}" if name in nominal else "REAL"
        lines.append(f"@ATTRIBUTE '{name}' {kind}")
    lines += ["", "@DATA"]
    body = frame.copy()
    for name in nominal:
        body[name] = [f"'{value}'" for value in body[name]]
    buffer = io.StringIO()
    body.to_csv(buffer, header=False, index=False, quoting=3)
    path.write_text("\n".join(lines) + "\n" + buffer.getvalue())


def write_celeba(raw_dir: Path, partitions: list[int], male: list[int], rng: np.random.Generator) -> list[str]:
    """img_align_celeba.zip (178x218 JPEGs: green 178x178 centre, red 20-row bands top and bottom),
    list_eval_partition.txt and list_attr_celeba.txt. Returns the image names."""
    raw_dir.mkdir(parents=True, exist_ok=True)
    names = [f"{index + 1:06d}.jpg" for index in range(len(partitions))]
    with zipfile.ZipFile(raw_dir / "img_align_celeba.zip", "w") as archive:
        for name in names:
            pixels = np.zeros((218, 178, 3), dtype=np.uint8)
            pixels[:20, :, 0] = pixels[198:, :, 0] = 255
            pixels[20:198, :, 1] = rng.integers(200, 256)
            buffer = io.BytesIO()
            Image.fromarray(pixels).save(buffer, format="JPEG", quality=95)
            archive.writestr(f"img_align_celeba/{name}", buffer.getvalue())
    (raw_dir / "list_eval_partition.txt").write_text("".join(f"{n} {p}\n" for n, p in zip(names, partitions)))
    attributes = ["5_o_Clock_Shadow", "Male", "Young"]
    rows = "".join(f"{n}  -1 {'1' if m else '-1'}  1\n" for n, m in zip(names, male))
    (raw_dir / "list_attr_celeba.txt").write_text(f"{len(names)}\n{' '.join(attributes)}\n{rows}")
    return names
