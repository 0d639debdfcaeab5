"""Datasets declared in the configuration (`datasets: {<id>: {...}}`): your own table or image arrays.

A table is a CSV or Parquet file with a label column (`path`, `label`, its public domain: `columns`,
`labels` or `positive`, `domain`, `domain_epsilon` (see `dpvae.data.domain`); optional `drop`,
`test_fraction` or `test_path`); image arrays are an `.npz` with `x` [N, H, W], [N, C, H, W] or
[N, H, W, C] (`layout`, detected where unambiguous; uint8, or float in [0, 1]), integer labels `y` and the
declared `labels`. The split comes first (a seeded holdout unless a test file is given); the domain is then
fitted on the training split only where the declaration says so, and both splits are encoded by it: tables
into [0, 1] per column (bounds clipped, categories coded in their declared order), images as [N, C, H, W]
in [0, 1]. The prepared meta records the domain (`domain`), which every run's ledger reads.

Identity: the sha256 of the file(s) with the preparation options (`identity`), never the path. The fetch
step copies the files into `<root>/raw/<id>/` (as `data<suffix>`, `test<suffix>`), checking them against the
sha256 computed while planning, and records the declaration there (`dataset.json`); the prepared meta carries
the identity and every run's spec its keyed fingerprint (`fingerprint`: an HMAC under the data root's secret
key, so that a run directory does not name the private file's hash), so a changed file is a different
dataset: its runs are trained again, and a run never loads a prepared set of another identity
(`check_identity`).
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from dpvae import paths
from dpvae.data import domain
from dpvae.data.errors import DataError
from dpvae.data.sources import RemoteFile, copy_verified, file_digests
from dpvae.data.store import Prepared, Split, holdout_rows
from dpvae.files import write_json, write_text

TABLE_SUFFIXES = (".csv", ".parquet", ".pq")
IMAGE_SUFFIXES = (".npz",)
DECLARATION = "dataset.json"
ROLES = {"path": "data", "test_path": "test"}  # config key -> name of its copy in <root>/raw/<id>/
OPTION_KEYS = (
    "label", "categorical", "positive", "drop", "test_fraction", "labels", "domain", "domain_epsilon", "columns",
    "layout",
)  # fmt: skip
LAYOUTS = ("NCHW", "NHWC")
CHANNELS = (1, 3, 4)  # the channel counts a layout can be recognised by


@dataclass(frozen=True)
class Facts:
    """What validation needs to know of a dataset: record shape, split sizes, label classes."""

    record_shape: tuple[int, ...]
    n_train: int
    n_test: int
    classes: int

    @property
    def kind(self) -> str:
        """'image' for [C, H, W] records, else 'table'."""
        return "image" if len(self.record_shape) == 3 else "table"

    @property
    def attributes(self) -> int:
        """Values per record: a table's columns, an image's pixels times its channels."""
        return math.prod(self.record_shape)


def kind_of(path: str | Path) -> str | None:
    """'table' or 'image' from a file's suffix (None if neither)."""
    suffix = Path(path).suffix.lower()
    return "table" if suffix in TABLE_SUFFIXES else "image" if suffix in IMAGE_SUFFIXES else None


def copies(entry: Mapping[str, Any]) -> dict[str, str]:
    """{name of the copy in <root>/raw/<id>/: the declared path} ('data.csv', 'test.csv', ...)."""
    return {
        f"{ROLES[key]}{Path(entry[key]).suffix.lower()}": str(entry[key]) for key in ROLES if entry.get(key) is not None
    }


def options(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The preparation options of a declaration, defaults filled in (part of its identity)."""
    defaults = {"drop": [], "test_fraction": 0.1}
    return {key: entry.get(key, defaults.get(key)) for key in OPTION_KEYS}


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    return file_digests(path).sha256


def sha256(path: str | Path) -> str:
    """sha256 of a file (cached per size and modification time within one process)."""
    stat = Path(path).stat()
    return _sha256(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


def identity(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The dataset's identity: the sha256 of each file and the preparation options (not the paths)."""
    return {"files_sha256": {name: sha256(path) for name, path in copies(entry).items()}, **options(entry)}


#: [choice] the fewest training records per declared label class, on average (a rule of N and the declaration alone,
#: both public): below it no model has room to learn the labels (a 3-row table), refused before any work
MIN_PER_LABEL = 2


def problems(dataset_id: str, entry: Mapping[str, Any]) -> list[str]:
    """What is wrong with a declaration (missing file, unknown suffix, absent columns), naming the key."""
    key = f"datasets.{dataset_id}"
    found = _file_problems(key, entry)
    if found:
        return found
    if entry.get("test_path") is not None and kind_of(entry["test_path"]) != kind_of(entry["path"]):
        return [f"config key '{key}.test_path': {entry['test_path']} is not of the same kind as {entry['path']}"]
    found = _table_problems(key, entry) if kind_of(entry["path"]) == "table" else _image_problems(key, entry)
    if found:
        return found
    try:
        found_facts = facts(entry)
    except DataError as error:
        return [f"config key '{key}.path': {error}"]
    needed = MIN_PER_LABEL * max(found_facts.classes, 1)
    if found_facts.n_train < needed or found_facts.n_test < 1:
        found.append(
            f"config key '{key}.path': {entry['path']} holds too few records: {found_facts.n_train} for training "
            f"and {found_facts.n_test} for testing, where a release needs at least {needed} for training "
            f"({MIN_PER_LABEL} per declared label) and 1 for testing"
        )
    return found


def _file_problems(key: str, entry: Mapping[str, Any]) -> list[str]:
    """Each declared file (`path`, `test_path`) exists and has a known suffix."""
    found = []
    for name in ROLES:
        path = entry.get(name)
        if path is None:
            continue
        if kind_of(path) is None:
            known = ", ".join(TABLE_SUFFIXES + IMAGE_SUFFIXES)
            found.append(f"config key '{key}.{name}': {path} is neither a table nor image arrays (suffixes: {known})")
        elif not Path(path).is_file():
            found.append(
                f"config key '{key}.{name}': no such file {path} (relative paths are to the working directory)"
            )
    return found


def _table_problems(key: str, entry: Mapping[str, Any]) -> list[str]:
    """A table's label column named, the named columns in every file, then its domain."""
    found = []
    if entry.get("label") is None:
        found.append(f"config key '{key}.label': a table needs its label column named")
        return found
    for name in ROLES:
        if entry.get(name) is None:
            continue
        try:
            columns = _columns(str(entry[name]))
        except DataError as error:
            return [*found, f"config key '{key}.{name}': {error}"]
        wanted = [entry["label"], *(entry.get("categorical") or []), *(entry.get("drop") or [])]
        if missing := [c for c in dict.fromkeys(wanted) if c not in columns]:
            found.append(
                f"config key '{key}': {entry[name]} has no column {', '.join(map(repr, missing))} "
                f"(its columns: {', '.join(columns)})"
            )
    if found:
        return found
    features, numeric = _features(entry)
    found.extend(domain.problems(key, entry, "table", features, numeric))
    return found


def _image_problems(key: str, entry: Mapping[str, Any]) -> list[str]:
    """Image arrays take no table options and a known layout, then their domain."""
    found = []
    for option in ("label", "categorical", "drop"):
        if entry.get(option):
            found.append(f"config key '{key}.{option}': image arrays take their labels from `y`; remove it")
    if entry.get("layout") is not None and entry["layout"] not in LAYOUTS:
        found.append(f"config key '{key}.layout': {entry['layout']!r} is not one of {', '.join(LAYOUTS)}")
    found.extend(domain.problems(key, entry, "image", (), set()))
    return found


def _features(entry: Mapping[str, Any]) -> tuple[list[str], set[str]]:
    """A table's feature columns (all but the label and `drop`) and those that hold numbers (in every file)."""
    import pandas as pd

    frames = [_read_table(str(entry[name])) for name in ROLES if entry.get(name) is not None]
    drop = set(entry.get("drop") or ())
    features = [c for c in map(str, frames[0].columns) if c != entry["label"] and c not in drop]
    numeric = {c for c in features if all(pd.api.types.is_numeric_dtype(f[c]) for f in frames if c in f)}
    return features, numeric


def facts(entry: Mapping[str, Any]) -> Facts:
    """Record shape, split sizes and label classes of a declaration, read cheaply from its file(s)."""
    paths = [str(entry["path"])] + ([str(entry["test_path"])] if entry.get("test_path") else [])
    stamps = tuple((p, Path(p).stat().st_size, Path(p).stat().st_mtime_ns) for p in paths)
    return _facts(json.dumps(options(entry), sort_keys=True, default=str), stamps)


@lru_cache(maxsize=64)
def _facts(options_json: str, stamps: tuple[tuple[str, int, int], ...]) -> Facts:
    opts = json.loads(options_json)
    paths = [p for p, _, _ in stamps]
    if kind_of(paths[0]) == "image":
        shapes, labels = zip(*(_npz_header(p) for p in paths))
        layout = image_layout(shapes[0], opts.get("layout"), paths[0])
        record = _chw(shapes[0], layout)[1:]
    else:
        columns = _columns(paths[0])
        record = (len([c for c in columns if c != opts["label"] and c not in (opts["drop"] or [])]),)
        labels = tuple(_read_table(p, usecols=[opts["label"]])[opts["label"]].to_numpy() for p in paths)
    declared_labels = domain.declared_labels(opts)
    # domain: from_data reads the label set of the training split when preparing; here, of every record
    classes = len(declared_labels) if declared_labels is not None else len(set(map(str, np.concatenate(labels))))
    sizes = [len(part) for part in labels]
    if len(paths) == 2:
        n_train, n_test = sizes
    else:
        n_test = math.ceil(opts["test_fraction"] * sizes[0])
        n_train = sizes[0] - n_test
    return Facts(tuple(int(s) for s in record), int(n_train), int(n_test), int(classes))


def spec_fields(dataset_id: str, entry: Mapping[str, Any], *, with_facts: bool = True) -> dict[str, Any]:
    """The `DatasetSpec` fields of a declaration (its files pinned by their sha256; facts unless asked not to)."""
    pinned = entry.get("identity", {}).get("files_sha256") or identity(entry)["files_sha256"]
    kind = kind_of(entry["path"])
    found = facts(entry) if with_facts else None
    split = (
        "train: the declared file; test: the declared test file"  # no path: a private file is not named
        if entry.get("test_path")
        else f"seeded holdout of all records (test = ceil({options(entry)['test_fraction']} N))"
    )
    return {
        "dataset_id": dataset_id,
        "description": entry.get("description") or f"declared in the configuration: {entry['path']}",
        "source": dataset_id,
        "files": tuple(
            RemoteFile(name, (), sha256=pinned[name], checksum_source="recorded on first use") for name in pinned
        ),
        "build": partial(build, entry=dict(entry)),
        "split": split,
        "scaling": TABLE_SCALING if kind == "table" else IMAGE_SCALING,
        "n_train": found.n_train if found else None,
        "n_test": found.n_test if found else None,
        "record_shape": found.record_shape if found else None,
        "classes": found.classes if found else None,
    }


TABLE_SCALING = (
    "split first; each column into [0, 1] by its domain (dpvae.data.domain): bounds clipped then (v - lo) / (hi - lo), "
    "category k of K (declared order) as k / (K - 1)"
)
IMAGE_SCALING = "uint8 pixel/255, or floats in [0, 1] as given; [N, H, W] -> [N, 1, H, W], [N, H, W, C] -> [N, C, H, W]"


# -- the fetch step: copy in, record ---------------------------------------------------------------------


def declaration(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What the fetch step gets (and records as <root>/raw/<id>/dataset.json): paths, options, identity."""
    keys = ("path", "test_path", "description", *OPTION_KEYS)
    return {**{k: entry[k] for k in keys if entry.get(k) is not None}, "identity": identity(entry)}


def copy_in(dataset_id: str, declared: Mapping[str, Any], root: str | Path) -> Path:
    """Copy a declared dataset's files into <root>/raw/<id>/, each checked against the sha256 of its
    identity (a file changed since planning is refused); write dataset.json and the SHA256SUMS marker."""
    raw_dir = paths.raw_dir(Path(root), dataset_id)
    pinned = declared["identity"]["files_sha256"]
    for name, path in copies(declared).items():
        try:
            copy_verified(Path(path), raw_dir / name, pinned[name])
        except DataError as error:
            raise DataError(
                f"dataset '{dataset_id}': {error}; it changed since the run was planned: run it again"
            ) from None
    write_json(raw_dir / DECLARATION, dict(declared))
    return write_text(
        paths.fetched_marker(Path(root), dataset_id),
        "".join(f"{digest}  {name}\n" for name, digest in sorted(pinned.items())),
    )


def recorded(dataset_id: str, root: str | Path) -> dict[str, Any] | None:
    """The declaration recorded in <root>/raw/<id>/dataset.json by the fetch step, or None."""
    path = paths.raw_dir(Path(root), dataset_id) / DECLARATION
    return json.loads(path.read_text()) if path.is_file() else None


def check_identity(prepared: Prepared, expected: Mapping[str, Any], where: str, root: str | Path) -> None:
    """Refuse a prepared set made from another version of a declared dataset's files (or other options):
    `expected` is a run spec's `data_identity` (`fingerprint`)."""
    found = prepared.meta.get("identity")
    if found is None or dict(found) != dict(expected):
        raise DataError(
            f"{where}: the prepared data is not the dataset this run was planned on: the file or its options "
            "changed. Run the workflow again: it prepares the dataset anew and trains its runs again"
        )


KEY_FILE = ".dataset-key"


def fingerprint(identity_: Mapping[str, Any], root: str | Path) -> dict[str, str]:
    """What a run spec (so its train.json) carries of a declared dataset's identity: an HMAC-SHA256 of it under
    a secret key of the data root (`<root>/.dataset-key`, made on first use). It changes with the file like the
    identity, but unlike the file's sha256 it does not let whoever holds a run and candidate files tell which
    file trained it (membership by fingerprint)."""
    import hashlib
    import hmac

    text = json.dumps(dict(identity_), sort_keys=True, default=str).encode()
    return {"hmac_sha256": hmac.new(_secret_key(Path(root)), text, hashlib.sha256).hexdigest()}


def _secret_key(root: Path) -> bytes:
    """The data root's 32-byte key: read, or made once (exclusively; a racing maker's key wins for both)."""
    import os
    import secrets

    path = root / KEY_FILE
    if not path.is_file():
        root.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(secrets.token_bytes(32))
    key = path.read_bytes()
    if len(key) != 32:
        raise DataError(
            f"{path}: not a 32-byte key (remove it: a new one is made, and declared datasets' runs retrain)"
        )
    return key


# -- the prepare step -----------------------------------------------------------------------------------


def build(raw_dir: Path, seed: int, *, entry: Mapping[str, Any], secret: bool = False) -> Prepared:
    """Prepare the copies in `raw_dir` of a declared dataset: split, fit the domain on the training split
    (where the declaration says so), encode both splits by it (see the module docstring); `secret`: for a release
    (a domain estimate's noise from the discrete sampler)."""
    names = copies(entry)
    files = [raw_dir / name for name in names]
    where = str(entry["path"])  # messages name the user's file, not the copy
    opts = options(entry)
    if kind_of(entry["path"]) == "image":
        arrays = [_read_images(path, opts.get("layout"), shown) for path, shown in zip(files, names.values())]
        stored = image_format(files[0], opts.get("layout"), names_shown(entry, "path") or where)
        train_rows, test_rows, split_meta = _split([len(a[1]) for a in arrays], seed, opts["test_fraction"])
        x, raw_labels = np.concatenate([a[0] for a in arrays]), np.concatenate([a[1] for a in arrays])
        fitted = domain.fit_images(opts, raw_labels[train_rows])
        train_x, test_x, columns, scaling = x[train_rows], x[test_rows], None, IMAGE_SCALING
    else:
        import pandas as pd

        frames = [_read_table(path) for path in files]
        frame = pd.concat(frames, ignore_index=True)
        features = [c for c in map(str, frames[0].columns) if c != opts["label"] and c not in opts["drop"]]
        train_rows, test_rows, split_meta = _split([len(f) for f in frames], seed, opts["test_fraction"])
        train_frame, test_frame = frame.iloc[train_rows], frame.iloc[test_rows]
        rng = np.random.default_rng([seed, 37])
        fitted = domain.fit_table(opts, train_frame, opts["label"], features, rng, secret)
        train_x = domain.encode_table(fitted, train_frame, where)
        test_x = domain.encode_table(fitted, test_frame, names_shown(entry, "test_path") or where)
        raw_labels = frame[opts["label"]].to_numpy()
        columns, scaling = [c.described() for c in fitted.columns], TABLE_SCALING
    y = domain.encode_labels(fitted, raw_labels, opts, where)
    root = raw_dir.parent.parent  # <root>/raw/<id>
    keyed = fingerprint(entry.get("identity") or identity(entry), root)
    meta: dict[str, Any] = {
        "label_names": list(fitted.labels),
        "split": split_meta,
        "scaling": scaling,
        "domain": fitted.to_dict(),
        "declared": {k: v for k, v in entry.items() if k not in ("identity", *ROLES, "description")},
        "identity": keyed,  # keyed: the files' sha256s would let whoever holds candidate files tell which one it was
        "raw_files_sha256": keyed,
        "description": "a dataset declared by its user (its file is private and not named here)",
    }
    if len(fitted.labels) == 2:
        meta["positive_class"] = 1
    if columns is not None:
        meta["columns"] = columns
        meta["label_column"] = opts["label"]
        kept = [c for c in map(str, frames[0].columns) if c not in opts["drop"]]
        meta["label_position"] = kept.index(opts["label"])  # where synth writes the label back (the file's order)
    else:
        meta["stored_as"] = stored  # the file's layout and dtypes (its format, not its values): synth writes them back
    return Prepared(Split(train_x, y[train_rows]), Split(test_x, y[test_rows]), meta)


def private_notes(raw_dir: Path, entry: Mapping[str, Any], fitted: domain.Domain) -> domain.Notes:
    """What preparing the copies in `raw_dir` (every record of every file) did to values outside the domain `fitted`
    (the prepared meta's), counted by the encoders `build` uses: for `dpvae synth`'s terminal only, in memory. The
    workflow never calls it (its jobs' output goes to log files)."""
    notes = domain.Notes()
    files = [raw_dir / name for name in copies(entry)]
    opts = options(entry)
    if kind_of(entry["path"]) == "image":
        labels = np.concatenate([_read_images(path, opts.get("layout"), str(path), notes)[1] for path in files])
    else:
        import pandas as pd

        frame = pd.concat([_read_table(path) for path in files], ignore_index=True)
        domain.encode_table(fitted, frame, str(entry["path"]), notes)
        labels = frame[opts["label"]].to_numpy()
    domain.encode_labels(fitted, labels, opts, str(entry["path"]), notes)
    return notes


def names_shown(entry: Mapping[str, Any], key: str) -> str | None:
    return None if entry.get(key) is None else str(entry[key])


def _split(sizes: list[int], seed: int, test_fraction: float) -> tuple[np.ndarray, np.ndarray, dict]:
    """Row indices of the training and test splits, decided before anything is fitted: the second file's rows
    when a test file is given, else a seeded holdout (`dpvae.data.store.holdout_split`'s rule)."""
    if len(sizes) == 2:
        rows = np.arange(sum(sizes))
        return rows[: sizes[0]], rows[sizes[0] :], {"rule": "train and test files as declared"}
    return holdout_rows(sizes[0], seed=seed, test_fraction=test_fraction)


def image_layout(shape: Sequence[int], declared: str | None, path: Path | str) -> str:
    """'NCHW' or 'NHWC' of a 4-d x (3-d: 'NHW'): as declared, else recognised by where a channel count
    (1, 3 or 4) stands; a shape that reads either way (or neither) is refused, naming it."""
    if len(shape) == 3:
        return "NHW"
    if declared is not None:
        return declared
    first, last = shape[1] in CHANNELS, shape[3] in CHANNELS
    if first != last:
        return "NCHW" if first else "NHWC"
    raise DataError(
        f"{path}: x has shape {list(shape)}, which reads as [N, C, H, W] or [N, H, W, C] alike (or as neither): "
        "declare layout: NCHW or NHWC"
    )


def _chw(shape: Sequence[int], layout: str) -> tuple[int, ...]:
    """The shape as [N, C, H, W]."""
    n, *rest = shape
    return (n, 1, *rest) if layout == "NHW" else (n, *rest) if layout == "NCHW" else (n, rest[2], rest[0], rest[1])


def _read_images(
    path: Path, layout: str | None, shown: str, notes: domain.Notes | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """x as float32 [N, C, H, W] in [0, 1] and y of an .npz (DataError naming the user's file `shown`). A float
    pixel is clipped into [0, 1] value by value (+inf: 1; -inf and NaN: 0, the lower end), so that no record's
    value can stop the run or reach a file; `notes` counts them."""
    try:
        with np.load(path, allow_pickle=False) as arrays:
            x, y = arrays["x"], arrays["y"]
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as error:
        raise DataError(f"{shown}: not an .npz with arrays x and y ({error})") from None
    _check_image_shape(x.shape, shown)
    found = image_layout(x.shape, layout, shown)
    x = x[:, None] if found == "NHW" else x.transpose(0, 3, 1, 2) if found == "NHWC" else x
    if x.dtype == np.uint8:
        x = x.astype(np.float32) / np.float32(255)
    elif x.dtype.kind == "f":
        x = x.astype(np.float32)
        if notes is not None:
            notes.add("pixels", "NaN, set to 0", np.isnan(x).sum())
            notes.add("pixels", "infinite, clipped to 0 or 1", np.isinf(x).sum())
            notes.add("pixels", "outside [0, 1], clipped", (np.isfinite(x) & ((x < 0) | (x > 1))).sum())
        x = np.clip(np.nan_to_num(x, nan=0.0, posinf=1.0, neginf=0.0), 0, 1)
    else:
        raise DataError(f"{shown}: x must be uint8 or float in [0, 1], got {x.dtype}")
    if y.ndim != 1 or len(y) != len(x) or y.dtype.kind not in "biu":
        raise DataError(f"{shown}: y must be {len(x)} integer labels, got {y.dtype} of shape {y.shape}")
    return np.ascontiguousarray(x), y


def image_format(path: Path, layout: str | None, shown: str) -> dict[str, str]:
    """How an .npz stores its images: x's layout (NCHW, NHWC or NHW) and dtype, y's dtype (read from the headers)."""
    shape, y = _npz_header(str(path))
    with zipfile.ZipFile(path) as archive, archive.open("x.npy") as stream:
        version = np.lib.format.read_magic(stream)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        dtype = read(stream)[2]
    return {"layout": image_layout(shape, layout, shown), "x_dtype": str(dtype), "y_dtype": str(y.dtype)}


def _check_image_shape(shape: tuple[int, ...], path: Path | str) -> None:
    if len(shape) not in (3, 4):
        raise DataError(f"{path}: x must be [N, H, W], [N, C, H, W] or [N, H, W, C], got shape {list(shape)}")


def _npz_header(path: str) -> tuple[tuple[int, ...], np.ndarray]:
    """x's shape (from its header, without reading it) and y of an .npz."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open("x.npy") as stream:
            version = np.lib.format.read_magic(stream)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape = read(stream)[0]
        with np.load(path, allow_pickle=False) as arrays:
            y = arrays["y"]
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as error:
        raise DataError(f"{path}: not an .npz with arrays x and y ({error})") from None
    _check_image_shape(shape, path)
    if y.ndim != 1 or len(y) != shape[0]:
        raise DataError(f"{path}: y must hold one label per image ({shape[0]}), got shape {list(y.shape)}")
    return tuple(shape), y


def _columns(path: str) -> list[str]:
    return [str(c) for c in _read_table(path, nrows=0).columns]


def _read_table(path: str | Path, **options: Any) -> Any:
    """A CSV or Parquet file as a DataFrame (Parquet needs pyarrow or fastparquet)."""
    import pandas as pd

    try:
        if Path(path).suffix.lower() == ".csv":
            return pd.read_csv(path, **options)
        columns = options.get("usecols")
        frame = pd.read_parquet(path, columns=columns)
        return frame.head(0) if options.get("nrows") == 0 else frame
    except ImportError as error:
        raise DataError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow): {error}") from None
    except (ValueError, OSError, pd.errors.ParserError) as error:
        raise DataError(f"{path}: cannot read it as a table ({error})") from None
