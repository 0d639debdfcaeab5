"""The public domain of a declared dataset: the values every column and the label may take.

Nothing that shapes a release may come from the private records unnoised: a column's range, its category
set, the label set. A declaration (config key `datasets.<id>`, or `dpvae synth --declare FILE`) says where
the domain comes from (`domain:`):

* `declared` (the default): every feature column under `columns` with `bounds: [lo, hi]` (values outside
  are clipped, never widened) or `categories: [...]` (an unseen value maps to the declared `other`, else to the
  first category; a built-in dataset refuses it); the label set as `labels` (or `positive`, which makes it
  {not <positive>, <positive>}).
* `estimate`: the bounds of the numeric columns not declared are estimated under ε = `domain_epsilon`
  (pure ε-DP: Laplace counts over a fixed, data-independent grid of ±2^k bins, thresholded; see
  `estimate_bounds`), spent from every run's target and recorded in its ledger (`preprocessing`). Category
  sets and the label set must still be declared.
* `from_data`: ranges, categories and labels are read from the training split, unnoised. Not DP: every
  run's ledger says so in `not_dp`, and `dpvae synth` refuses it unless told `--allow-not-dp`.

The papers' datasets declare theirs in code (`dpvae.data.tabular`, `images`, `celeba`, `standins`), each fact
with its public source. One source is theirs alone, never declarable: `reference_code`, P3GM's reference
code's preprocessing (every column min-max scaled and the categories read from the whole set, training and
test split together, before the split), kept as the `-refcode` dataset ids; not DP, as `from_data`.

Fitting happens after the split, on the training split only; the test split never shapes the domain.
Images: pixels lie in [0, 1] by the file format (uint8/255, or floats in [0, 1]); their label set is declared
as `labels: K` (0..K-1) or a list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

import numpy as np

from dpvae.data.errors import DataError
from dpvae.runspec import RunSpec

Source = Literal["declared", "estimate", "from_data", "reference_code"]
#: What a declaration's `domain:` may say (`reference_code` is the papers' code's preprocessing, never declared).
SOURCES: tuple[str, ...] = tuple(s for s in get_args(Source) if s != "reference_code")

#: The estimate's grid: bin edges ±2^k for k in [GRID_MIN_POWER, GRID_MAX_POWER] (fixed, data-independent);
#: values beyond ±2^GRID_MAX_POWER fall into the outermost bins.
GRID_MIN_POWER, GRID_MAX_POWER = -20, 60
#: Probability that the threshold lets an empty bin through somewhere on a column's grid (Laplace tail).
ESTIMATE_FAILURE = 0.05

NOT_DP_FROM_DATA = (
    "domain: from_data - the columns' ranges, category sets and the label set were read unnoised from the "
    "training split, so one record can show in the output (declare the domain or use domain: estimate)"
)
NOT_DP_REFERENCE_CODE = (
    "domain: reference_code - P3GM's reference code's preprocessing: every column min-max scaled and the "
    "categories label-encoded as found in the whole set (training and test split together, before the split), "
    "unnoised, so one record, even a test record, can show in the output (the dataset id without -refcode "
    "uses the public domain)"
)
#: Why a domain of each source makes its releases not DP (a source not listed is public or paid for).
NOT_DP = {"from_data": NOT_DP_FROM_DATA, "reference_code": NOT_DP_REFERENCE_CODE}


@dataclass(frozen=True)
class Column:
    """One feature column's public domain: numeric `bounds` (lo < hi) or a `categories` list (+ `other`)."""

    name: str
    bounds: tuple[float, float] | None = None
    categories: tuple[str, ...] | None = None
    other: str | None = None
    integer: bool = False  # declared: a numeric column of whole numbers (samples are rounded back to them)

    @property
    def kind(self) -> str:
        return "categorical" if self.categories is not None else "continuous"

    def described(self) -> dict[str, Any]:
        """The column as the prepared meta's `columns` entry (read by samplers, `synth` and discretizers)."""
        if self.categories is not None:
            k = len(self.categories)
            return {"name": self.name, "kind": "categorical", "categories": list(self.categories), "min": 0.0,
                    "max": float(k - 1)}  # fmt: skip
        assert self.bounds is not None
        described = {"name": self.name, "kind": "continuous", "min": self.bounds[0], "max": self.bounds[1]}
        return described | ({"integer": True} if self.integer else {})

    def declared(self) -> dict[str, Any]:
        """The column as a declaration file (`synth --declare`, a dataset under `datasets:`) states it."""
        if self.categories is not None:
            return {"categories": list(self.categories)} | ({"other": self.other} if self.other else {})
        assert self.bounds is not None
        return {"bounds": list(self.bounds)} | ({"integer": True} if self.integer else {})


@dataclass(frozen=True)
class Estimate:
    """The ledgered estimate of numeric columns' bounds: a Laplace histogram per column on the fixed grid.

    Add/remove-one: one record adds 1 to one bin of each of the d columns (L1 sensitivity d); the noise
    scale is d / epsilon, so the release is epsilon-DP (2 epsilon under replace-one: two bins per column).
    `discrete`: drawn for a release, with the exact discrete Laplace of the same scale (`dpvae.samplers`).
    """

    epsilon: float
    columns: tuple[str, ...]
    threshold: float
    discrete: bool = False

    @property
    def scale(self) -> float:
        return len(self.columns) / self.epsilon

    def to_dict(self) -> dict[str, Any]:
        """The fields (`discrete` only when true: a seeded preparation's meta is as before)."""
        data = asdict(self)
        if not self.discrete:
            del data["discrete"]
        return data

    def sensitivity(self, adjacency: str) -> float:
        """L1 sensitivity of the d histograms: d under add/remove-one, 2d under replace-one."""
        return float(len(self.columns) * (1 if adjacency == "add/remove-one" else 2))


@dataclass(frozen=True)
class Domain:
    """A dataset's domain: its feature columns (tables), its label names in code order, where it came from."""

    source: Source
    labels: tuple[str, ...]
    columns: tuple[Column, ...] = ()
    estimate: Estimate | None = None

    @property
    def not_dp(self) -> str | None:
        """Why releases over this domain are not DP (None: the domain is public or paid for)."""
        return NOT_DP.get(self.source)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "labels": list(self.labels),
            "columns": [{k: v for k, v in asdict(c).items() if v is not None and v is not False} for c in self.columns],
            "estimate": None if self.estimate is None else self.estimate.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Domain:
        estimate = data.get("estimate")
        return cls(
            data["source"],
            tuple(data["labels"]),
            tuple(
                Column(
                    c["name"],
                    tuple(c["bounds"]) if "bounds" in c else None,
                    tuple(c["categories"]) if "categories" in c else None,
                    c.get("other"),
                    bool(c.get("integer", False)),
                )
                for c in data.get("columns", ())
            ),
            None
            if estimate is None
            else Estimate(
                estimate["epsilon"], tuple(estimate["columns"]), estimate["threshold"], estimate.get("discrete", False)
            ),
        )


# -- the declaration ----------------------------------------------------------------------------------------


def source(entry: Mapping[str, Any]) -> Source:
    return entry.get("domain") or "declared"


def declared_labels(entry: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The declared label values in code order ({not p, p} with `positive`), or None (from_data)."""
    labels = entry.get("labels")
    if entry.get("positive") is not None:
        positive = entry["positive"]
        if isinstance(labels, list):  # two declared values: the other one names the negative class
            return (next(v for v in labels if _text(v) != _text(positive)), positive)
        return (f"not {positive}", positive)
    if labels is None:
        return None
    return tuple(range(labels)) if isinstance(labels, int) and not isinstance(labels, bool) else tuple(labels)


def problems(key: str, entry: Mapping[str, Any], kind: str, features: Sequence[str], numeric: set[str]) -> list[str]:
    """What is wrong with a declaration's domain (`key` = 'datasets.<id>'), each naming the config key."""
    found = []
    mode = source(entry)
    if mode not in SOURCES:
        return [f"config key '{key}.domain': {mode!r} is not one of {', '.join(SOURCES)}"]
    found.extend(_label_problems(key, entry, mode))
    epsilon = entry.get("domain_epsilon")
    if mode == "estimate" and not (isinstance(epsilon, int | float) and math.isfinite(epsilon) and epsilon > 0):
        found.append(
            f"config key '{key}.domain_epsilon': domain: estimate needs the ε it spends (> 0), got {epsilon!r}"
        )
    elif mode != "estimate" and epsilon is not None:
        found.append(f"config key '{key}.domain_epsilon': only domain: estimate spends an ε on the domain")
    columns = entry.get("columns") or {}
    if kind == "image":
        if columns:
            found.append(f"config key '{key}.columns': image pixels lie in [0, 1]; columns are for tables")
        return found
    if entry.get("categorical") and mode != "from_data":
        found.append(
            f"config key '{key}.categorical': declare each categorical column's categories under "
            f"`columns` instead (`categorical` is for domain: from_data)"
        )
    found.extend(_feature_problems(key, columns, mode, features, numeric))
    return found


def _label_problems(key: str, entry: Mapping[str, Any], mode: str) -> list[str]:
    """The declared label set (`labels`, `positive`) is well formed, or may be read from the data."""
    found = []
    labels = entry.get("labels")
    positive = entry.get("positive")
    if labels is not None and positive is not None:
        if not (isinstance(labels, list) and len(labels) == 2 and _text(positive) in map(_text, labels)):
            found.append(f"config key '{key}.labels': with positive, the two label values, one of them {positive!r}")
    elif isinstance(labels, bool) or (isinstance(labels, int) and labels < 2):
        found.append(f"config key '{key}.labels': {labels!r}: give the number of classes (>= 2) or the label values")
    elif isinstance(labels, list) and (len(labels) < 2 or len(set(map(_text, labels))) != len(labels)):
        found.append(f"config key '{key}.labels': {labels!r}: at least two distinct values")
    elif labels is None and entry.get("positive") is None and mode != "from_data":
        found.append(
            f"config key '{key}.labels': declare the label set (a list, or the number of classes K for 0..K-1) "
            "or `positive`; the labels may not be read from the private file (or set domain: from_data, not DP)"
        )
    return found


def _feature_problems(
    key: str, columns: Mapping[str, Any], mode: str, features: Sequence[str], numeric: set[str]
) -> list[str]:
    """Each declared column is a feature, and each feature's domain is declared where `mode` needs it."""
    found = []
    for name in sorted(set(columns) - set(features)):
        found.append(f"config key '{key}.columns.{name}': no such feature column (features: {', '.join(features)})")
    for name in features:
        spec = columns.get(name)
        where = f"config key '{key}.columns.{name}'"
        if spec is None:
            if mode == "declared":
                found.append(f"{where}: declare its bounds: [lo, hi] or categories: [...] (domain: declared)")
            elif mode == "estimate" and name not in numeric:
                found.append(f"{where}: not numbers: declare its categories (domain: estimate estimates bounds only)")
            continue
        found.extend(_column_problems(where, spec))
    return found


def _column_problems(where: str, spec: Any) -> list[str]:
    if not isinstance(spec, Mapping) or set(spec) - {"bounds", "categories", "other", "integer"}:
        return [f"{where}: {spec!r}: write {{bounds: [lo, hi]}} or {{categories: [...], other: <one of them>}}"]
    if "integer" in spec and ("bounds" not in spec or not isinstance(spec["integer"], bool)):
        return [f"{where}.integer: true or false, beside bounds (a numeric column whose values are whole numbers)"]
    if ("bounds" in spec) == ("categories" in spec):
        return [f"{where}: give exactly one of bounds or categories"]
    if "bounds" in spec:
        bounds = spec["bounds"]
        ok = isinstance(bounds, list) and len(bounds) == 2 and all(isinstance(b, int | float) for b in bounds)
        if not ok or not (math.isfinite(bounds[0]) and math.isfinite(bounds[1]) and bounds[0] < bounds[1]):
            return [f"{where}.bounds: {bounds!r}: two finite numbers lo < hi"]
        if "other" in spec:
            return [f"{where}.other: only a categorical column has an `other` category"]
        return []
    categories = spec["categories"]
    if not isinstance(categories, list) or not categories or len(set(map(_text, categories))) != len(categories):
        return [f"{where}.categories: {categories!r}: a non-empty list of distinct values"]
    if "other" in spec and _text(spec["other"]) not in set(map(_text, categories)):
        return [f"{where}.other: {spec['other']!r} is not one of its categories"]
    return []


def declared_columns(entry: Mapping[str, Any], features: Sequence[str]) -> dict[str, Column]:
    """The columns the declaration states (by name); a categorical one always has an `other` category (declared,
    else its first category), so that no value of a record can stop or shape the preparation. No category is added:
    the declared ones keep their codes k / (K - 1), as a built-in dataset's same domain encodes them (an appended,
    empty catch-all squeezed them into [0, (K - 1) / K] and came back in releases as a category of its own)."""
    found = {}
    for name, spec in (entry.get("columns") or {}).items():
        if name not in features:
            continue
        if "bounds" in spec:
            bounds = (float(spec["bounds"][0]), float(spec["bounds"][1]))
            found[name] = Column(name, bounds=bounds, integer=bool(spec.get("integer", False)))
        else:
            categories = tuple(map(_text, spec["categories"]))
            other = categories[0] if spec.get("other") is None else _text(spec["other"])  # one of them (problems())
            found[name] = Column(name, categories=categories, other=other)
    return found


# -- fitting on the training split ------------------------------------------------------------------------------


def fit_table(
    entry: Mapping[str, Any],
    train: Any,
    label: str,
    features: Sequence[str],
    rng: np.random.Generator,
    secret: bool = False,
) -> Domain:
    """The domain of a table declaration, fitted (where it says so) on the training split `train` only (`secret`:
    for a release, an estimate's noise from the discrete sampler)."""
    import pandas as pd

    mode = source(entry)
    columns = declared_columns(entry, features)
    categorical = set(entry.get("categorical") or ())
    estimated = []
    for name in features:
        if name in columns:
            continue
        values = train[name]
        if mode == "from_data":
            is_numeric = pd.api.types.is_numeric_dtype(values) and name not in categorical
            if is_numeric:
                low, high = float(values.min()), float(values.max())
                columns[name] = Column(name, bounds=(low, high if high > low else low + 1.0))
            else:
                columns[name] = Column(name, categories=tuple(sorted(set(_as_text(values)))))
        else:  # estimate (problems() refused anything else)
            estimated.append(name)
    estimate = None
    if estimated:
        estimate = Estimate(
            float(entry["domain_epsilon"]),
            tuple(estimated),
            _threshold(len(estimated) / float(entry["domain_epsilon"])),
            discrete=secret,
        )
        for name in estimated:
            columns[name] = Column(name, bounds=estimate_bounds(_numbers(train[name]), estimate, rng, name))
    labels = declared_labels(entry)
    if labels is None:
        labels = tuple(_sorted_labels(train[label].to_numpy()))
    return Domain(mode, tuple(map(_text, labels)), tuple(columns[name] for name in features), estimate)


def fit_images(entry: Mapping[str, Any], train_labels: np.ndarray) -> Domain:
    """The domain of image arrays: pixels in [0, 1] by format; the declared label set (from_data: the training
    split's)."""
    labels = declared_labels(entry)
    if labels is None:
        labels = tuple(_sorted_labels(train_labels))
    return Domain(source(entry), tuple(map(_text, labels)))


def images_domain(labels: Sequence[Any]) -> Domain:
    """The public domain of a papers' image set: pixels in [0, 1] by format (8-bit grey levels / 255, a fixed
    threshold or clamp; no columns) and its published label set."""
    return Domain("declared", tuple(map(_text, labels)))


def grid() -> np.ndarray:
    """The estimate's fixed bin edges: -2^60 ... -2^-20, 2^-20 ... 2^60 (ascending)."""
    powers = 2.0 ** np.arange(GRID_MIN_POWER, GRID_MAX_POWER + 1)
    return np.concatenate([-powers[::-1], powers])


def _threshold(scale: float) -> float:
    """The noisy count a bin needs: an empty bin passes with probability <= ESTIMATE_FAILURE per column."""
    bins = len(grid()) - 1
    return scale * math.log(bins / (2 * ESTIMATE_FAILURE))


def histogram(values: np.ndarray) -> np.ndarray:
    """A column's clean counts on the fixed grid (one record adds 1 to exactly one bin: `Estimate`'s sensitivity)."""
    edges = grid()
    index = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
    return np.bincount(index, minlength=len(edges) - 1).astype(np.float64)


def estimate_bounds(values: np.ndarray, estimate: Estimate, rng: np.random.Generator, name: str) -> tuple[float, float]:
    """[lo, hi] of a column from Laplace-noised counts on the fixed grid (discrete Laplace where `estimate.discrete`):
    from the lower edge of the lowest bin whose noisy count exceeds the threshold to the upper edge of the highest
    one."""
    from dpvae import samplers

    counts = histogram(values[~np.isnan(values)])  # an empty cell adds to no bin (sensitivity unchanged)
    noisy = counts + samplers.laplace_noise(counts.shape, estimate.scale, secret=estimate.discrete, rng=rng)
    passed = np.flatnonzero(noisy > estimate.threshold)
    if passed.size == 0:
        raise DataError(
            f"column {name!r}: no bin of the domain estimate passed its threshold ({estimate.threshold:.0f} noisy "
            f"records at domain_epsilon={estimate.epsilon} over {len(estimate.columns)} column(s)): declare its "
            "bounds, or raise domain_epsilon"
        )
    edges = grid()
    return float(edges[passed[0]]), float(edges[passed[-1] + 1])


# -- encoding --------------------------------------------------------------------------------------------------

#: The heading of `Notes` on `dpvae synth`'s terminal.
NOTES_HEADING = "about your private data: not part of the release"


class Notes:
    """What encoding did to values outside the domain, counted by column ('label', 'pixels' for images): for the
    data holder's eyes on `dpvae synth`'s terminal only (`declared.private_notes`), never written to a file. An encoder
    fills one only when given one; the preparation (workflow and synth alike) never passes one. No record is ever
    dropped: each value outside the domain is clipped or mapped by a rule of its own record."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}  # (column, what was done) -> values, in order of first count

    def add(self, column: str, what: str, count: int) -> None:
        if count:
            self.counts[(column, what)] = self.counts.get((column, what), 0) + int(count)

    def text(self) -> str:
        """The heading, one line per count (no value of a record), and that no record was dropped."""
        lines = [NOTES_HEADING]
        lines += [f"  {column}: {n} value{'s' if n != 1 else ''} {what}" for (column, what), n in self.counts.items()]
        if not self.counts:
            lines.append("  every value lay in the domain")
        lines.append("  records dropped: none (a value outside the domain is clipped or mapped, never dropped)")
        return "\n".join(lines)


def encode_table(domain: Domain, frame: Any, where: str, notes: Notes | None = None) -> np.ndarray:
    """The features scaled into [0, 1] by the domain: numbers clipped to the bounds then (v - lo) / (hi - lo) (an
    empty cell or one that is not a number counts as lo); a category's code k of K scaled to k / (K - 1), an unseen
    one to `other` (a declared column always has one). Nothing here stops on, or names, a record's value; only a
    built-in dataset's columns (verified public files) have no `other`, and an unlisted value there is refused.
    `notes`: counts what was clipped or mapped, by column."""

    out = np.empty((len(frame), len(domain.columns)), dtype=np.float32)
    for j, column in enumerate(domain.columns):
        values = frame[column.name]
        if column.categories is None:
            assert column.bounds is not None
            numbers = _numbers(values)
            low, high = column.bounds
            out[:, j] = (np.clip(np.nan_to_num(numbers, nan=low), low, high) - low) / (high - low)
            if notes is not None:
                notes.add(column.name, "beyond its bounds, clipped to them", np.sum((numbers < low) | (numbers > high)))
                notes.add(column.name, "empty or not a number, counted as its lower bound", np.isnan(numbers).sum())
            continue
        codes = {c: k for k, c in enumerate(column.categories)}
        text = _as_text(values)
        if column.other is None and any(v not in codes for v in text):
            raise DataError(f"{where}: column {column.name!r} holds a value outside its published categories")
        fallback = codes.get(column.other, 0) if column.other is not None else 0
        if notes is not None:
            mapped = sum(v not in codes for v in text)
            notes.add(column.name, f"outside its categories, mapped to its catch-all {column.other!r}", mapped)
        k = len(column.categories)
        out[:, j] = np.array([codes.get(v, fallback) for v in text], dtype=np.float64) / (k - 1 if k > 1 else 1)
    return out


def encode_labels(
    domain: Domain, values: np.ndarray, entry: Mapping[str, Any], where: str, notes: Notes | None = None
) -> np.ndarray:
    """Label codes 0..K-1 in the domain's order; with `positive`, 1 for it and 0 for any other value. A value
    outside the declared labels (or an empty cell) counts as the first declared label: a rule of one record alone,
    so neighbouring datasets stay neighbours of the same size, and no record can stop the preparation. `notes`:
    counts the values outside the declared labels (with `positive` alone every other value is its negative)."""
    text = _as_text(values)
    positive = entry.get("positive")
    codes = {name: k for k, name in enumerate(domain.labels)}
    if notes is not None and (positive is None or isinstance(entry.get("labels"), list)):
        listed = codes if positive is None else set(map(_text, entry["labels"]))
        what = f"outside the declared labels, counted as {domain.labels[0]!r}"
        notes.add("label", what, sum(v not in listed for v in text))
    if positive is not None:
        return np.array([v == _text(positive) for v in text], dtype=np.int64)
    return np.array([codes.get(v, 0) for v in text], dtype=np.int64)


def _text(value: Any) -> str:
    """A category or label as text ('' for an empty cell; 3.0 read from a CSV as '3')."""
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _as_text(values: Any) -> list[str]:
    return [_text(v) for v in np.asarray(values, dtype=object).tolist()]


def _sorted_labels(values: np.ndarray) -> list[Any]:
    """Distinct labels, numbers numerically, anything else as text (domain: from_data)."""
    keys = values if values.dtype.kind in "biuf" else values.astype(str)
    return np.unique(keys).tolist()


# -- what a run's ledger owes to its domain ----------------------------------------------------------------------


def of_run(spec: RunSpec) -> Domain | None:
    """The domain recorded in a run's prepared dataset (None: a built-in dataset, no domain record)."""
    import json
    from pathlib import Path

    from dpvae.paths import prepared_meta

    meta = prepared_meta(Path(spec.data_root), spec.dataset)
    recorded = json.loads(meta.read_text()).get("domain") if meta.is_file() else None
    return None if recorded is None else Domain.from_dict(recorded)


def training_epsilon(spec: RunSpec, fitted: Domain | None) -> float:
    """What a private run's method may spend: its target less the domain estimate's ε (refused if nothing is left)."""
    target = float(spec.epsilon)
    if fitted is None or fitted.estimate is None:
        return target
    left = target - fitted.estimate.epsilon
    if not left > 0:
        raise DataError(
            f"run {spec.run_id}: target ε {target} does not exceed the domain estimate's "
            f"domain_epsilon {fitted.estimate.epsilon} of dataset '{spec.dataset}'"
        )
    return left


def _numbers(values: Any) -> np.ndarray:
    """A column's values as float64, an empty cell or one that is not a number as NaN."""
    import pandas as pd

    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
