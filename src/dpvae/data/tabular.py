"""P3GM's tabular datasets: Adult, Kaggle Credit (ULB), UCI ISOLET and UCI ESR (docs/papers.md §3.2).

Each follows the reference code (``tkgsn/P3GM`` ``data_process.py``) unless stated otherwise: string
columns label-encoded (codes in sorted order, as scikit-learn's ``LabelEncoder``), columns min-max
scaled to [0, 1] on the whole (sub)set before the split, and a seeded 90/10 holdout (the reference's
split is unseeded). ``x`` never contains the label; ``y`` is the binary label of docs/papers.md §3.3.
"""

from __future__ import annotations

import io
import random
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.data.errors import DataError
from dpvae.data.sources import RemoteFile
from dpvae.data.store import Prepared, holdout_split

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
WAYBACK_UCI = "https://web.archive.org/web/20200318000445id_/http://archive.ics.uci.edu/ml/machine-learning-databases/"
NO_PUBLISHED_CHECKSUM = (
    "none published: searched UCI, OpenML, TFDS, torchvision and public repositories; "
    "accepted only with allow_unverified=True, then pinned by its recorded sha256"
)

ADULT_FEATURES = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
)  # fmt: skip
ADULT_CATEGORICAL = (
    "workclass", "education", "marital-status", "occupation", "relationship", "race", "sex", "native-country",
)  # fmt: skip
ADULT_LABELS = ("<=50K", ">50K")
ADULT_FILES = (
    RemoteFile(
        "adult.data", (UCI + "adult/adult.data", WAYBACK_UCI + "adult/adult.data"),
        sha256="5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
        md5="5d7c39d7b8804f071cdd1f2a7c460872", size=3974305,
        checksum_source="sha256 from the verified shared copy's MANIFEST.tsv; md5 equals the commonly cited UCI md5",
    ),
    RemoteFile(
        "adult.test", (UCI + "adult/adult.test", WAYBACK_UCI + "adult/adult.test"),
        sha256="a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
        md5="35238206dfdf7f1fe215bbb874adecdc", size=2003153,
        checksum_source="sha256 from the verified shared copy's MANIFEST.tsv; md5 equals the commonly cited UCI md5",
    ),
)  # fmt: skip

CREDIT_FEATURES = tuple(f"V{index}" for index in range(1, 29)) + ("Amount",)
CREDIT_N_NORMAL = 10_000
CREDIT_FILES = (
    RemoteFile(
        "creditcard.arff",
        (
            "https://api.openml.org/data/v1/download/1673544/creditcard.arff",
            "https://www.openml.org/data/v1/download/1673544/creditcard.arff",
        ),
        md5="178bcf9bb1f31a3dfe12d0e577884add",
        checksum_source=(
            "md5 published by OpenML for dataset 1597 version 1 (field md5_checksum of "
            "https://www.openml.org/api/v1/json/data/1597); OpenML publishes no sha256. The reference code's "
            "creditcard.Rdata (ulb.ac.be, offline) and Kaggle's creditcard.csv have no published checksum"
        ),
    ),
)  # fmt: skip

ISOLET_PARTS = ("isolet1+2+3+4.data.Z", "isolet5.data.Z")
ISOLET_N_FEATURES = 617
ISOLET_VOWELS = {1: "a", 5: "e", 9: "i", 15: "o", 21: "u"}  # letter codes 1..26
ISOLET_FILES = tuple(
    RemoteFile(name, (UCI + "isolet/" + name, WAYBACK_UCI + "isolet/" + name), checksum_source=NO_PUBLISHED_CHECKSUM)
    for name in ISOLET_PARTS
)

ESR_FEATURES = tuple(f"X{index}" for index in range(1, 179))
ESR_FILES = (
    RemoteFile(
        "data.csv", (UCI + "00388/data.csv", WAYBACK_UCI + "00388/data.csv"), checksum_source=NO_PUBLISHED_CHECKSUM
    ),
)


def scale_columns(frame: pd.DataFrame, categorical: tuple[str, ...] = ()) -> tuple[np.ndarray, list[dict]]:
    """Label-encode ``categorical`` columns (sorted codes), then min-max scale every column to [0, 1].

    Returns (float32 matrix, one description per column: name, kind, categories, min/max used).
    A constant column maps to 0 (scikit-learn's ``MinMaxScaler`` behaviour).
    """
    encoded, columns = {}, []
    for name in frame.columns:
        if name in categorical:
            categories, codes = np.unique(frame[name].to_numpy(dtype=str), return_inverse=True)
            encoded[name] = codes.astype(np.float64)
            columns.append({"name": name, "kind": "categorical", "categories": categories.tolist()})
        else:
            encoded[name] = frame[name].to_numpy(dtype=np.float64)
            columns.append({"name": name, "kind": "continuous"})
    matrix = np.column_stack(list(encoded.values()))
    from sklearn.preprocessing import MinMaxScaler  # imported on use: validation stays light

    scaler = MinMaxScaler().fit(matrix)
    for column, low, high in zip(columns, scaler.data_min_, scaler.data_max_):
        column.update(min=float(low), max=float(high))
    return scaler.transform(matrix).astype(np.float32), columns


def _binary_meta(label_names: tuple[str, str], split_meta: dict, columns: list[dict], scaling: str) -> dict:
    return {
        "label_names": list(label_names),
        "positive_class": 1,
        "split": split_meta,
        "columns": columns,
        "scaling": scaling,
    }


def read_adult(raw_dir: Path) -> pd.DataFrame:
    """adult.data followed by adult.test (its '|1x3 Cross validator' line skipped, trailing '.' of labels removed)."""
    names = [*ADULT_FEATURES, "income"]
    text_columns = {name: str for name in ADULT_CATEGORICAL}
    parts = [
        pd.read_csv(raw_dir / name, header=None, names=names, skipinitialspace=True, comment="|", dtype=text_columns)
        for name in ("adult.data", "adult.test")
    ]
    frame = pd.concat(parts, ignore_index=True)
    frame["income"] = frame["income"].str.rstrip(".")
    unexpected = set(frame["income"]) - set(ADULT_LABELS)
    if unexpected or frame[list(ADULT_FEATURES)].isna().any().any():
        raise DataError(
            f"{raw_dir / 'adult.data'} / adult.test: malformed rows (labels {sorted(unexpected)} or empty cells)"
        )
    return frame


def build_adult(raw_dir: Path, seed: int, *, drop_missing: bool) -> Prepared:
    """Adult (48,842 rows; '?' kept as a category) or, with ``drop_missing``, the 45,222 rows without '?'.

    x: the 14 features, label-encoded and min-max scaled on the whole set; y = 1 for '>50K'.
    """
    frame = read_adult(raw_dir)
    if drop_missing:
        frame = frame[~(frame[list(ADULT_CATEGORICAL)] == "?").any(axis=1)].reset_index(drop=True)
    x, columns = scale_columns(frame[list(ADULT_FEATURES)], ADULT_CATEGORICAL)
    y = (frame["income"] == ">50K").to_numpy(dtype=np.int64)
    train, test, split_meta = holdout_split(x, y, seed=seed)
    scaling = "label-encode strings (sorted), min-max every column on the whole set"
    meta = _binary_meta(ADULT_LABELS, split_meta, columns, scaling)
    meta["notes"] = (
        "P3GM's code scores the arg-min of the one-hot label, i.e. treats '<=50K' as positive (docs/papers.md A-G2); "
        "here y = 1 means '>50K'"
    )
    meta["options"] = {"drop_missing": drop_missing}
    return Prepared(train, test, meta)


def read_arff(path: Path) -> pd.DataFrame:
    """A dense ARFF file as a DataFrame (attribute names from the header; quotes stripped)."""
    names = []
    with open(path, encoding="utf-8") as stream:
        for n_header_lines, line in enumerate(stream, start=1):
            keyword = line.strip().lower()
            if keyword.startswith("@attribute"):
                names.append(line.split()[1].strip("'\""))
            elif keyword.startswith("@data"):
                break
        else:
            raise DataError(f"{path}: no @DATA section; not an ARFF file")
    return pd.read_csv(
        path, skiprows=n_header_lines, header=None, names=names, quotechar="'", comment="%", skipinitialspace=True
    )


def build_credit(raw_dir: Path, seed: int, *, n_normal: int | None = CREDIT_N_NORMAL) -> Prepared:
    """Kaggle Credit (ULB): drop Time; x = V1..V28 + Amount min-max scaled; y = 1 for fraud.

    With ``n_normal`` (P3GM's code) keep every fraud plus ``n_normal`` normal rows chosen by
    ``random.Random(seed).sample(positions of normal rows in file order, n_normal)``: for seed 0 this
    is exactly the reference's ``random.seed(0); random.sample(...)`` selection, provided the raw
    file's rows are in the order of the reference's creditcard.Rdata. Rows are ordered as in the
    reference (sampled normals in draw order, then frauds in file order) before scaling and the split.
    ``n_normal=None`` keeps all 284,807 rows.
    """
    path = raw_dir / "creditcard.arff"
    frame = read_arff(path)
    missing = {"Time", "Class", *CREDIT_FEATURES} - set(frame.columns)
    if missing:
        raise DataError(f"{path}: missing columns {sorted(missing)}")
    fraud = frame["Class"].astype(str).str.strip("'\"").astype(int).to_numpy()
    if set(np.unique(fraud)) - {0, 1}:
        raise DataError(f"{path}: Class must be 0/1")
    if n_normal is None:
        rows = np.arange(len(frame))
    else:
        normal_rows = np.flatnonzero(fraud == 0).tolist()
        if n_normal > len(normal_rows):
            raise ValueError(f"n_normal={n_normal} exceeds the {len(normal_rows)} normal rows of {path}")
        rows = np.array(random.Random(seed).sample(normal_rows, n_normal) + np.flatnonzero(fraud == 1).tolist())
    x, columns = scale_columns(frame[list(CREDIT_FEATURES)].iloc[rows])
    train, test, split_meta = holdout_split(x, fraud[rows].astype(np.int64), seed=seed)
    meta = _binary_meta(("normal", "fraud"), split_meta, columns, "min-max every feature on the kept rows")
    meta["options"] = {
        "n_normal": n_normal,
        "selection": None
        if n_normal is None
        else "random.Random(seed).sample(normal rows in file order, n_normal) + all frauds",
        "rows_time_sorted": bool(frame["Time"].is_monotonic_increasing),
    }
    return Prepared(train, test, meta)


def decompress_unix_z(path: Path) -> bytes:
    """Contents of a Unix ``compress`` (.Z, LZW) file, via ``gzip -dc`` (Python has no LZW decoder)."""
    try:
        result = subprocess.run(["gzip", "-dc", str(path)], capture_output=True, check=False)
    except FileNotFoundError as error:
        raise DataError(f"{path}: the gzip program is needed to decompress .Z files") from error
    if result.returncode != 0:
        raise DataError(f"{path}: cannot decompress ({result.stderr.decode(errors='replace').strip()})")
    return result.stdout


def build_isolet(raw_dir: Path, seed: int) -> Prepared:
    """ISOLET: isolet1+2+3+4 then isolet5 (7,797 rows); 617 features as-is; y = 1 for a vowel (a, e, i, o, u)."""
    parts = []
    for name in ISOLET_PARTS:
        table = pd.read_csv(io.BytesIO(decompress_unix_z(raw_dir / name)), header=None, skipinitialspace=True)
        if table.shape[1] != ISOLET_N_FEATURES + 1:
            raise DataError(f"{raw_dir / name}: expected {ISOLET_N_FEATURES + 1} columns, found {table.shape[1]}")
        parts.append(table.to_numpy(dtype=np.float64))
    table = np.concatenate(parts)
    x = table[:, :ISOLET_N_FEATURES].astype(np.float32)
    letters = table[:, ISOLET_N_FEATURES].astype(np.int64)
    if letters.min() < 1 or letters.max() > 26:
        raise DataError(f"{raw_dir}: ISOLET letter codes outside 1..26")
    y = np.isin(letters, list(ISOLET_VOWELS)).astype(np.int64)
    columns = [
        {"name": f"f{index + 1}", "kind": "continuous", "min": float(low), "max": float(high)}
        for index, (low, high) in enumerate(zip(x.min(axis=0), x.max(axis=0)))
    ]
    train, test, split_meta = holdout_split(x, y, seed=seed)
    scaling = "none: features kept as distributed (about [-1, 1]); min/max are observed"
    meta = _binary_meta(("consonant", "vowel"), split_meta, columns, scaling)
    return Prepared(train, test, meta)


def build_esr(raw_dir: Path, seed: int) -> Prepared:
    """UCI Epileptic Seizure Recognition: drop the id column; x = X1..X178 min-max scaled; y = 1 for y == 1."""
    path = raw_dir / "data.csv"
    frame = pd.read_csv(path)
    if tuple(frame.columns[1:]) != (*ESR_FEATURES, "y"):
        found = f"{list(frame.columns[:3])}... ({frame.shape[1]} columns)"
        raise DataError(f"{path}: expected columns <id>, X1..X178, y; found {found}")
    classes = frame["y"].to_numpy()
    if set(np.unique(classes)) - {1, 2, 3, 4, 5}:
        raise DataError(f"{path}: y must be in 1..5")
    x, columns = scale_columns(frame[list(ESR_FEATURES)])
    train, test, split_meta = holdout_split(x, (classes == 1).astype(np.int64), seed=seed)
    labels = ("non-seizure (y 2..5)", "seizure (y 1)")
    meta = _binary_meta(labels, split_meta, columns, "min-max every feature on the whole set")
    meta["notes"] = "P3GM read a pre-processed local file; label and scaling here are docs/papers.md §3.2's [choice]"
    return Prepared(train, test, meta)
