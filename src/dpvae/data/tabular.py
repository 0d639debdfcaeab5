"""P3GM's tabular datasets: Adult, Kaggle Credit (ULB), UCI ISOLET and UCI ESR (docs/papers.md §3.2).

Each dataset's public domain is declared here (`dpvae.data.domain`'s `Domain`/`Column`), every bound and
category list with its source: the rows are split first (a seeded 90/10 holdout; the reference's split is
unseeded), then both splits are encoded through the domain into [0, 1] (bounds clipped, categories in sorted
order, as scikit-learn's ``LabelEncoder`` numbers them, as k / (K - 1)); nothing is fitted on the records.
``x`` never contains the label; ``y`` is the binary label of docs/papers.md §3.3.

``scaling="reference-code"`` (the ``-refcode`` dataset ids) keeps the reference code's (``tkgsn/P3GM``
``data_process.py``) preprocessing instead: string columns label-encoded as found and every column min-max
scaled on the whole (sub)set before the split. Its domain is recorded as `reference_code`, so every run on it
has a ledger marked not DP.
"""

from __future__ import annotations

import io
import random
import subprocess
from pathlib import Path
from typing import Literal, get_args

import numpy as np
import pandas as pd

from dpvae.data.domain import Column, Domain, encode_table
from dpvae.data.errors import DataError
from dpvae.data.sources import RemoteFile
from dpvae.data.store import Prepared, Split, holdout_rows, holdout_split

Scaling = Literal["public", "reference-code"]
SCALINGS: tuple[str, ...] = get_args(Scaling)

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

#: Adult's categories as UCI's adult.names lists them (its "Listing of attributes"), in that order.
ADULT_PUBLISHED_CATEGORIES = {
    "workclass": (
        "Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov", "Without-pay",
        "Never-worked",
    ),
    "education": (
        "Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc", "9th", "7th-8th",
        "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool",
    ),
    "marital-status": (
        "Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed", "Married-spouse-absent",
        "Married-AF-spouse",
    ),
    "occupation": (
        "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial", "Prof-specialty",
        "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical", "Farming-fishing", "Transport-moving",
        "Priv-house-serv", "Protective-serv", "Armed-Forces",
    ),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": (
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany", "Outlying-US(Guam-USVI-etc)",
        "India", "Japan", "Greece", "South", "China", "Cuba", "Iran", "Honduras", "Philippines", "Italy", "Poland",
        "Jamaica", "Vietnam", "Mexico", "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador",
        "Taiwan", "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia",
        "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
    ),
}  # fmt: skip
#: The value the data use for unknown, and the columns that hold it (UCI's variables table: "Missing Values:
#: yes" for these three only); `adult-dropna` removes those rows, so its domain has no '?'.
ADULT_UNKNOWN = "?"
ADULT_UNKNOWN_COLUMNS = ("workclass", "occupation", "native-country")
#: Adult's numeric columns: [lo, hi] from the extraction and the Census coding, values outside clipped; each holds
#: whole numbers (adult.names: integer fields of the CPS), so a release writes them as integers.
ADULT_BOUNDS = {
    "age": (17.0, 90.0),  # adult.names: extracted with AAGE > 16; 90 is the March CPS public-use age top-code
    "fnlwgt": (1.0, 2_000_000.0),  # adult.names: AFNLWGT > 1; 2,000,000 a declared choice (no published bound)
    "education-num": (1.0, 16.0),  # the number of the education level: adult.names lists 16 levels
    "capital-gain": (0.0, 99_999.0),  # the CPS income field's top-code, $99,999 (five digits)
    "capital-loss": (0.0, 99_999.0),  # declared choice: the same five-digit field as capital-gain
    "hours-per-week": (1.0, 99.0),  # adult.names: HRSWK > 0; 99 is the CPS hours field's top-code (two digits)
}


def adult_domain(*, keep_unknown: bool) -> Domain:
    """Adult's public domain: the published categories (sorted: the reference's codes), '?' in the three
    columns that hold it unless its rows are dropped, `ADULT_BOUNDS`, labels {<=50K, >50K}. An unlisted
    category is refused, never added."""
    columns = []
    for name in ADULT_FEATURES:
        if name in ADULT_BOUNDS:
            columns.append(Column(name, bounds=ADULT_BOUNDS[name], integer=True))
            continue
        unknown = (ADULT_UNKNOWN,) if keep_unknown and name in ADULT_UNKNOWN_COLUMNS else ()
        columns.append(Column(name, categories=tuple(sorted(ADULT_PUBLISHED_CATEGORIES[name] + unknown))))
    return Domain("declared", ADULT_LABELS, tuple(columns))


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


#: Kaggle Credit (ULB): V1..V28 are PCA scores and Amount a sum of money; neither has a published range.
CREDIT_DOMAIN = Domain(
    "declared",
    ("normal", "fraud"),
    tuple(Column(name, bounds=(-128.0, 128.0)) for name in CREDIT_FEATURES[:-1])  # declared choice
    + (Column("Amount", bounds=(0.0, 32_768.0)),),  # declared choice; an amount is >= 0
)
#: UCI ISOLET: "All attributes are continuous, real-valued attributes scaled into the range -1.0 to 1.0"
#: (isolet.names, the publisher's own scaling).
ISOLET_DOMAIN = Domain(
    "declared",
    ("consonant", "vowel"),
    tuple(Column(f"f{index + 1}", bounds=(-1.0, 1.0)) for index in range(ISOLET_N_FEATURES)),
)
#: UCI ESR: the Bonn EEG segments were digitised with 12-bit A/D conversion (Andrzejak et al. 2001, Phys. Rev.
#: E 64, 061907), read as the signed range [-2048, 2047].
ESR_DOMAIN = Domain(
    "declared",
    ("non-seizure (y 2..5)", "seizure (y 1)"),
    tuple(Column(name, bounds=(-2048.0, 2047.0), integer=True) for name in ESR_FEATURES),  # A/D counts
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


PUBLIC_SCALING = (
    "split first; each column into [0, 1] by its declared public domain: bounds clipped then (v - lo) / (hi - lo), "
    "category k of K (sorted) as k / (K - 1)"
)
REFERENCE_SCALING = (
    "P3GM's reference code: label-encode strings as found (sorted), min-max every column on the whole set "
    "before the split (not DP: the ranges and categories come from the records, test split included)"
)


def prepare_table(
    frame: pd.DataFrame,
    y: np.ndarray,
    public: Domain,
    seed: int,
    scaling: Scaling,
    where: str,
    categorical: tuple[str, ...] = (),
) -> Prepared:
    """The seeded 90/10 holdout of `frame`'s rows (labels `y`), encoded through the `public` domain after the
    split; or, with `scaling="reference-code"`, min-max scaled on the whole set first (`scale_columns`) with the
    domain recorded as `reference_code`. Both splits take the same rows either way."""
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, got {scaling!r}")
    if scaling == "reference-code":
        x, columns = scale_columns(frame, categorical)
        train, test, split_meta = holdout_split(x, y, seed=seed)
        observed = tuple(
            Column(c["name"], categories=tuple(c["categories"]))
            if c["kind"] == "categorical"
            else Column(c["name"], bounds=(c["min"], c["max"]))
            for c in columns
        )
        used, text = Domain("reference_code", public.labels, observed), REFERENCE_SCALING
    else:
        train_rows, test_rows, split_meta = holdout_rows(len(y), seed=seed)
        train = Split(encode_table(public, frame.iloc[train_rows], where), y[train_rows])
        test = Split(encode_table(public, frame.iloc[test_rows], where), y[test_rows])
        used, text, columns = public, PUBLIC_SCALING, [c.described() for c in public.columns]
    meta = {
        "label_names": list(public.labels),
        "positive_class": 1,
        "split": split_meta,
        "columns": columns,
        "scaling": text,
        "domain": used.to_dict(),
        "options": {"scaling": scaling},
    }
    return Prepared(train, test, meta)


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


def build_adult(raw_dir: Path, seed: int, *, drop_missing: bool, scaling: Scaling = "public") -> Prepared:
    """Adult (48,842 rows; '?' kept as a category) or, with ``drop_missing``, the 45,222 rows without '?'.

    x: the 14 features through `adult_domain` (or the reference code's scaling); y = 1 for '>50K'.
    """
    frame = read_adult(raw_dir)
    if drop_missing:
        frame = frame[~(frame[list(ADULT_CATEGORICAL)] == ADULT_UNKNOWN).any(axis=1)].reset_index(drop=True)
    y = (frame["income"] == ">50K").to_numpy(dtype=np.int64)
    public = adult_domain(keep_unknown=not drop_missing)
    features = frame[list(ADULT_FEATURES)]
    prepared = prepare_table(features, y, public, seed, scaling, str(raw_dir / "adult.data"), ADULT_CATEGORICAL)
    prepared.meta["notes"] = (
        "P3GM's code scores the arg-min of the one-hot label, i.e. treats '<=50K' as positive (docs/papers.md "
        "A-G2); here y = 1 means '>50K'"
    )
    prepared.meta["options"]["drop_missing"] = drop_missing
    return prepared


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


def build_credit(
    raw_dir: Path, seed: int, *, n_normal: int | None = CREDIT_N_NORMAL, scaling: Scaling = "public"
) -> Prepared:
    """Kaggle Credit (ULB): drop Time; x = V1..V28 + Amount through `CREDIT_DOMAIN`; y = 1 for fraud.

    With ``n_normal`` (P3GM's code) keep every fraud plus ``n_normal`` normal rows chosen by
    ``random.Random(seed).sample(positions of normal rows in file order, n_normal)``: for seed 0 this
    is exactly the reference's ``random.seed(0); random.sample(...)`` selection, provided the raw
    file's rows are in the order of the reference's creditcard.Rdata. Rows are ordered as in the
    reference (sampled normals in draw order, then frauds in file order) before the split.
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
    features = frame[list(CREDIT_FEATURES)].iloc[rows]
    prepared = prepare_table(features, fraud[rows].astype(np.int64), CREDIT_DOMAIN, seed, scaling, str(path))
    prepared.meta["options"] |= {
        "n_normal": n_normal,
        "selection": None
        if n_normal is None
        else "random.Random(seed).sample(normal rows in file order, n_normal) + all frauds",
        "rows_time_sorted": bool(frame["Time"].is_monotonic_increasing),
    }
    return prepared


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
    """ISOLET: isolet1+2+3+4 then isolet5 (7,797 rows); 617 features through `ISOLET_DOMAIN` ([-1, 1] -> [0, 1]);
    y = 1 for a vowel (a, e, i, o, u). The reference code does not rescale ISOLET: there is no -refcode id."""
    parts = []
    for name in ISOLET_PARTS:
        table = pd.read_csv(io.BytesIO(decompress_unix_z(raw_dir / name)), header=None, skipinitialspace=True)
        if table.shape[1] != ISOLET_N_FEATURES + 1:
            raise DataError(f"{raw_dir / name}: expected {ISOLET_N_FEATURES + 1} columns, found {table.shape[1]}")
        parts.append(table.to_numpy(dtype=np.float64))
    table = np.concatenate(parts)
    letters = table[:, ISOLET_N_FEATURES].astype(np.int64)
    if letters.min() < 1 or letters.max() > 26:
        raise DataError(f"{raw_dir}: ISOLET letter codes outside 1..26")
    y = np.isin(letters, list(ISOLET_VOWELS)).astype(np.int64)
    features = pd.DataFrame(table[:, :ISOLET_N_FEATURES], columns=[c.name for c in ISOLET_DOMAIN.columns])
    return prepare_table(features, y, ISOLET_DOMAIN, seed, "public", str(raw_dir / ISOLET_PARTS[0]))


def build_esr(raw_dir: Path, seed: int, *, scaling: Scaling = "public") -> Prepared:
    """UCI Epileptic Seizure Recognition: drop the id column; x = X1..X178 through `ESR_DOMAIN`; y = 1 for y == 1."""
    path = raw_dir / "data.csv"
    frame = pd.read_csv(path)
    if tuple(frame.columns[1:]) != (*ESR_FEATURES, "y"):
        found = f"{list(frame.columns[:3])}... ({frame.shape[1]} columns)"
        raise DataError(f"{path}: expected columns <id>, X1..X178, y; found {found}")
    classes = frame["y"].to_numpy()
    if set(np.unique(classes)) - {1, 2, 3, 4, 5}:
        raise DataError(f"{path}: y must be in 1..5")
    seizure = (classes == 1).astype(np.int64)
    prepared = prepare_table(frame[list(ESR_FEATURES)], seizure, ESR_DOMAIN, seed, scaling, str(path))
    prepared.meta["notes"] = "P3GM read a pre-processed local file; the label here is docs/papers.md §3.2's [choice]"
    return prepared
