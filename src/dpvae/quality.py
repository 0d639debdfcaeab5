"""How a release's synthetic records compare with the private data: the statistics of the data holder's report.

`dpvae synth` measures them after sampling, from the prepared splits (the training split the method saw and the
held-out test split, in the prepared [0, 1] coordinates) and the samples; `dpvae.quality_report` renders them as
HTML into the private workspace. They are statistics of the private data, never part of the release.

Tables (`TableQuality`): each column's marginal, real training split against synthetic (a numeric column in
`NUMERIC_BINS` equal-width bins over the training split's range, with one bin each side for values outside it; a
categorical column and the label by category) and its total-variation distance (TVD, ½·L1; sdmetrics'
TVComplement is 1 − TVD); every pair of columns' dependence (Pearson's r for two numeric columns, Cramér's V over
the bins for any other pair) and the 2-way TVD of their joint histogram, averaged over the pairs (sdmetrics'
ContingencySimilarity is 1 − it); ML efficacy (`tabular_classifiers.multiclass_rows` with `CLASSIFIERS`, trained
on synthetic and on the real training split, scored on the real test split); the distance of each synthetic record
to its closest training record against that of each test record (the holdout baseline). The test split measured
like the synthetic records (its marginals' TVD against the training split, its DCR) says what sampling alone gives
at this size.

Images (`ImageQuality`): a grid per class, synthetic and real; the label distribution; logistic regression on
flattened pixels (their first `IMAGE_COMPONENTS` principal components) trained on synthetic and on real, scored on the
real test split. No FID: the project's
(`dpvae.eval.fid`) runs InceptionV3 at 299×299, about 6-11 images/s on 2 CPU cores (benchmarks/README.md), and is
biased upward on a few hundred images.

`flags` names what a data holder must not miss: utility at chance, marginals far from the data's, synthetic
records closer to the training records than held-out real ones are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpvae.data.store import Prepared

NUMERIC_BINS = 10
CLASSIFIERS = ("lr", "gbm")  # two of tabular_classifiers' four: seconds on a few thousand records
IMAGE_CLASSIFIERS = ("lr",)
MAX_FIT = 10_000  # records a classifier trains on (a seeded subset beyond)
MAX_IMAGE_FIT = 2_000  # images logistic regression trains on
IMAGE_COMPONENTS = 50  # ... on their first principal components (seconds, where raw pixels take half a minute)
MAX_DCR = 2_000  # synthetic or test records whose closest training record is found
GRID_CLASSES, GRID_COLUMNS = 10, 8
CHANCE_AUROC = 0.05  # a macro AUROC within this of 0.5 is at chance
FAR_TVD = 0.3  # a mean 1-way TVD above this is far from the data's marginals
CLOSE_DCR = 0.5  # synthetic records this much closer (median) than held-out real ones are too close

Matrix = tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class Column:
    """A table's column as prepared: a value v in [0, 1] is `low + v (high - low)` in its own units (a categorical
    column's code into `categories`)."""

    name: str
    kind: Literal["numeric", "categorical"]
    low: float = 0.0
    high: float = 1.0
    categories: tuple[str, ...] = ()


@dataclass(frozen=True)
class Marginal:
    """One column's histogram: shares of the real training split and of the synthetic records per bin."""

    column: str
    kind: Literal["numeric", "categorical"]
    bins: tuple[str, ...]
    real: tuple[float, ...]
    synthetic: tuple[float, ...]
    tvd: float
    baseline: float  # the real test split's TVD against the training split (sampling alone)


@dataclass(frozen=True)
class Dependence:
    """Every pair of columns: Pearson's r where both are numeric, else Cramér's V (NaN where undefined)."""

    columns: tuple[str, ...]
    numeric: tuple[bool, ...]
    real: Matrix
    synthetic: Matrix
    tvd_2way: float  # mean over the unordered pairs of distinct columns
    baseline: float  # the same for the real test split
    mean_abs_difference: float  # |real - synthetic| over the pairs where both are defined


@dataclass(frozen=True)
class Score:
    accuracy: float
    auroc: float  # macro one-vs-rest
    auprc: float


@dataclass(frozen=True)
class Efficacy:
    """Classifiers trained on synthetic and on real records, both scored on the real test split (mean over
    `classifiers`)."""

    classifiers: tuple[str, ...]
    classes: int
    synthetic: Score
    real: Score
    majority: float  # the accuracy on the test split of always answering the training split's majority class
    n_test: int
    single_class: bool  # the synthetic records hold one class only (a constant predictor)
    note: str = ""


@dataclass(frozen=True)
class Closeness:
    """Distance to the closest training record (DCR): of synthetic records, and of held-out test records."""

    synthetic_median: float
    holdout_median: float
    synthetic_p5: float
    holdout_p5: float
    below_holdout_p5: float  # share of synthetic records closer than the holdout's 5th percentile (~5 % expected)
    synthetic_exact: float  # share at distance 0: copies of a training record
    holdout_exact: float
    measured: int  # synthetic records measured


@dataclass(frozen=True)
class Headline:
    """The ledger's headline: what a reader of the release is told."""

    private: bool
    epsilon: float | None = None
    delta: float | None = None
    headline: str = ""  # sound | paper
    sound: float | None = None
    paper: float | None = None
    target: float | None = None
    randomness: str = ""
    not_dp: str = ""


@dataclass(frozen=True)
class Flag:
    kind: Literal["utility", "marginals", "closeness"]
    text: str


@dataclass(frozen=True)
class TableQuality:
    n_train: int
    n_test: int
    n_synthetic: int
    marginals: tuple[Marginal, ...]
    tvd_1way: float  # mean over the columns (label included)
    baseline_1way: float
    dependence: Dependence
    efficacy: Efficacy | None
    closeness: Closeness
    headline: Headline
    flags: tuple[Flag, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Grid:
    """Up to `GRID_COLUMNS` images [k, C, H, W] per class, in the order of `labels`."""

    labels: tuple[str, ...]
    images: tuple[np.ndarray, ...]


@dataclass(frozen=True)
class ImageQuality:
    n_train: int
    n_test: int
    n_synthetic: int
    synthetic_grid: Grid
    real_grid: Grid
    labels: Marginal
    efficacy: Efficacy | None
    headline: Headline
    flags: tuple[Flag, ...]
    notes: tuple[str, ...] = ()


Quality = TableQuality | ImageQuality


def assess(prepared: Prepared, samples: Mapping[str, np.ndarray], ledger: Any, seed: int = 0) -> Quality:
    """The report's statistics for the samples {x, y} of a release from `prepared` (a table: [N, d] records;
    images: [N, C, H, W]); `ledger` None for a non-private method."""
    x = np.asarray(samples["x"])
    y = np.asarray(samples["y"], dtype=np.int64) if "y" in samples else np.zeros(len(x), dtype=np.int64)
    if x.ndim == 2:
        return table_quality(prepared, x, y, ledger, seed)
    return image_quality(prepared, x, y, ledger, seed)


def headline_of(ledger: Any) -> Headline:
    """The ledger's headline (`dpvae.privacy.ledger.Ledger`, or None: not private)."""
    if ledger is None:
        return Headline(private=False)
    return Headline(
        private=True,
        epsilon=ledger.epsilon,
        delta=ledger.delta,
        headline=ledger.headline,
        sound=None if ledger.sound is None else ledger.sound.epsilon,
        paper=ledger.paper.epsilon,
        target=ledger.target_epsilon,
        randomness=ledger.randomness or "",
        not_dp=ledger.not_dp or "",
    )


def label_names(meta: dict, *ys: np.ndarray) -> tuple[str, ...]:
    """The label classes' names (meta's, else 0..K-1 over the labels seen)."""
    names = meta.get("label_names")
    if names:
        return tuple(map(str, names))
    top = max((int(y.max()) for y in ys if len(y)), default=0)
    return tuple(str(k) for k in range(top + 1))


def columns_of(meta: dict, width: int) -> tuple[Column, ...]:
    """The prepared columns (meta's `columns`), else `width` numeric columns x0, x1, ... in [0, 1]."""
    described = meta.get("columns")
    if not described or len(described) != width:
        return tuple(Column(f"x{i}", "numeric") for i in range(width))
    return tuple(
        Column(
            str(c["name"]),
            "categorical" if c.get("kind") == "categorical" else "numeric",
            float(c.get("min", 0.0)),
            float(c.get("max", 1.0)),
            tuple(map(str, c.get("categories", ()))),
        )
        for c in described
    )


def decoded(x: np.ndarray, column: int, spec: Column) -> np.ndarray:
    """A column in its own units (numeric) or as category codes (categorical)."""
    raw = spec.low + np.clip(np.asarray(x[:, column], dtype=np.float64), 0, 1) * (spec.high - spec.low)
    if spec.kind == "categorical":
        return np.clip(np.rint(raw), 0, max(len(spec.categories) - 1, 0)).astype(np.int64)
    return raw


def tvd(p: np.ndarray, q: np.ndarray) -> float:
    """½·L1 between two histograms (each normalised to shares)."""
    return 0.5 * float(np.abs(p / max(p.sum(), 1) - q / max(q.sum(), 1)).sum())


Role = Literal["train", "test", "synthetic"]
ROLES: tuple[Role, ...] = ("train", "test", "synthetic")


@dataclass(frozen=True)
class _Binned:
    """A column's cells: codes of the train, test and synthetic records and the cells' labels."""

    name: str
    kind: Literal["numeric", "categorical"]
    labels: tuple[str, ...]
    train: np.ndarray
    test: np.ndarray
    synthetic: np.ndarray
    values: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # a numeric column's values (Pearson's r, distances)

    def codes(self, role: Role) -> np.ndarray:
        return {"train": self.train, "test": self.test, "synthetic": self.synthetic}[role]

    def raw(self, role: Role) -> np.ndarray:
        assert self.values is not None
        return self.values[ROLES.index(role)]


def _numeric_bins(name: str, train: np.ndarray, test: np.ndarray, synthetic: np.ndarray) -> _Binned:
    """Cell 0: below the training split's range; 1..NUMERIC_BINS: equal-width bins over it; last: above it."""
    low, high = float(train.min()), float(train.max())
    width = (high - low) / NUMERIC_BINS

    def codes(v: np.ndarray) -> np.ndarray:
        inner = 1 + np.clip(np.floor((v - low) / width), 0, NUMERIC_BINS - 1) if width > 0 else np.ones(len(v))
        return np.where(v < low, 0, np.where(v > high, NUMERIC_BINS + 1, inner)).astype(np.int64)

    edges = [low + k * width for k in range(NUMERIC_BINS + 1)]
    labels = (
        f"< {edges[0]:.4g}",
        *(f"{a:.4g}–{b:.4g}" for a, b in zip(edges[:-1], edges[1:], strict=True)),
        f"> {edges[-1]:.4g}",
    )
    return _Binned(name, "numeric", labels, codes(train), codes(test), codes(synthetic), (train, test, synthetic))


def _binned(prepared: Prepared, x: np.ndarray, y: np.ndarray, names: tuple[str, ...]) -> list[_Binned]:
    """Every column of the table, then the label (a categorical column)."""
    columns = columns_of(prepared.meta, prepared.train.x.shape[1])
    found = []
    for i, spec in enumerate(columns):
        train, test, synthetic = (decoded(a, i, spec) for a in (prepared.train.x, prepared.test.x, x))
        if spec.kind == "numeric":
            found.append(_numeric_bins(spec.name, train, test, synthetic))
        else:
            found.append(_Binned(spec.name, "categorical", spec.categories, train, test, synthetic, None))
    label = str(prepared.meta.get("label_column", "label"))
    found.append(_Binned(label, "categorical", names, prepared.train.y, prepared.test.y, y, None))
    return found


def _histogram(codes: np.ndarray, cells: int) -> np.ndarray:
    return np.bincount(codes, minlength=cells)[:cells].astype(np.float64)


def _marginal(column: _Binned) -> Marginal:
    cells = len(column.labels)
    train, test, synthetic = (_histogram(c, cells) for c in (column.train, column.test, column.synthetic))
    keep = np.ones(cells, dtype=bool)
    if column.kind == "numeric":  # the outside cells only where synthetic records fall (no training record does)
        keep[[0, -1]] = synthetic[[0, -1]] > 0
    shares = [h / max(h.sum(), 1) for h in (train, synthetic)]
    return Marginal(
        column.name,
        column.kind,
        tuple(label for label, kept in zip(column.labels, keep, strict=True) if kept),
        tuple(map(float, shares[0][keep])),
        tuple(map(float, shares[1][keep])),
        tvd(train, synthetic),
        tvd(train, test),
    )


def _joint(a: np.ndarray, b: np.ndarray, cells_b: int, cells_a: int) -> np.ndarray:
    return np.bincount(a * cells_b + b, minlength=cells_a * cells_b).reshape(cells_a, cells_b).astype(np.float64)


def cramers_v(table: np.ndarray) -> float:
    """Cramér's V of a contingency table (its empty rows and columns dropped; NaN below 2 x 2)."""
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    if min(table.shape) < 2:
        return float("nan")
    n = table.sum()
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return float(np.sqrt(chi2 / (n * (min(table.shape) - 1))))


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's r (NaN where a column is constant)."""
    if len(a) < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def _dependence(columns: list[_Binned]) -> Dependence:
    d = len(columns)
    matrices = {role: np.eye(d) for role in ("train", "synthetic")}
    tvds, baselines = [], []
    for i in range(d):
        for j in range(i + 1, d):
            a, b = columns[i], columns[j]
            ca, cb = len(a.labels), len(b.labels)
            joints = {role: _joint(a.codes(role), b.codes(role), cb, ca) for role in ROLES}
            tvds.append(tvd(joints["train"], joints["synthetic"]))
            baselines.append(tvd(joints["train"], joints["test"]))
            for role in ("train", "synthetic"):
                if a.values is not None and b.values is not None:
                    value = pearson(a.raw(role), b.raw(role))
                else:
                    value = cramers_v(joints[role])
                matrices[role][i, j] = matrices[role][j, i] = value
    upper = np.triu_indices(d, 1)
    gaps = np.abs(matrices["train"][upper] - matrices["synthetic"][upper])
    gaps = gaps[np.isfinite(gaps)]

    def rows(m: np.ndarray) -> Matrix:
        return tuple(tuple(map(float, row)) for row in m)

    return Dependence(
        tuple(c.name for c in columns),
        tuple(c.values is not None for c in columns),
        rows(matrices["train"]),
        rows(matrices["synthetic"]),
        float(np.mean(tvds)) if tvds else 0.0,
        float(np.mean(baselines)) if baselines else 0.0,
        float(gaps.mean()) if len(gaps) else float("nan"),
    )


def _subset(n: int, limit: int, rng: np.random.Generator) -> np.ndarray:
    return np.arange(n) if n <= limit else np.sort(rng.choice(n, limit, replace=False))


def efficacy(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_synthetic: np.ndarray,
    y_synthetic: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    classes: int,
    seed: int,
    classifiers: tuple[str, ...] = CLASSIFIERS,
    limit: int = MAX_FIT,
    components: int | None = None,
) -> Efficacy | None:
    """Train on synthetic and on real (at most `limit` records each, a seeded subset; with `components`, on that
    many principal components of the flattened records, fitted on the training records), score on the real test
    split; None where the test split holds fewer than two classes (no AUROC)."""
    from dpvae.eval.tabular_classifiers import multiclass_rows

    if len(np.unique(y_test)) < 2:
        return None
    rng = np.random.default_rng(seed)
    scores, single = {}, False
    for role, (x, y) in {"synthetic": (x_synthetic, y_synthetic), "real": (x_train, y_train)}.items():
        keep = _subset(len(x), limit, rng)
        fit, test = _projected(x[keep], x_test, components, seed)
        rows = multiclass_rows(fit, y[keep], test, y_test, classes, seed, classifiers)
        mean = {r["metric"]: r["value"] for r in rows if r.get("classifier") in ("mean", "mean4")}
        scores[role] = Score(mean["accuracy"], mean["auroc"], mean["auprc"])
        single = single or (role == "synthetic" and any(r["metric"] == "single_class" for r in rows))
    larger = max(len(x_synthetic), len(x_train))
    note = f"each classifier trained on at most {limit:,} records (a seeded subset)" if larger > limit else ""
    majority = float(np.mean(y_test == np.bincount(y_train).argmax()))  # the prior alone (the test's is an oracle)
    return Efficacy(
        tuple(classifiers), classes, scores["synthetic"], scores["real"], majority, len(y_test), single, note
    )


def _projected(x: np.ndarray, test: np.ndarray, components: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Flattened records, or their first `components` principal components (fitted on `x`)."""
    x, test = x.reshape(len(x), -1), test.reshape(len(test), -1)
    k = min(components or 0, len(x) - 1, x.shape[1])
    if k < 1:
        return x, test
    from sklearn.decomposition import PCA

    pca = PCA(k, random_state=seed).fit(x)
    return pca.transform(x), pca.transform(test)


def _features(columns: list[_Binned], role: Role) -> np.ndarray:
    """Records for distances: numeric columns scaled to the training split's range, categories one-hot over √2 (a
    mismatch adds 1 to the squared distance, as a full range does)."""
    parts = []
    for column in columns:
        if column.values is not None:
            train = column.raw("train")
            low, span = train.min(), train.max() - train.min()
            v = column.raw(role)
            parts.append(((v - low) / span if span > 0 else np.zeros(len(v)))[:, None])
        else:
            parts.append(np.eye(len(column.labels))[column.codes(role)] / np.sqrt(2))
    return np.hstack(parts)


def closeness(train: np.ndarray, synthetic: np.ndarray, test: np.ndarray, seed: int) -> Closeness:
    """DCR of (at most `MAX_DCR`) synthetic and test records to the training records."""
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(seed)
    search = NearestNeighbors(n_neighbors=1).fit(train)
    synthetic = synthetic[_subset(len(synthetic), MAX_DCR, rng)]
    test = test[_subset(len(test), MAX_DCR, rng)]
    d_synthetic = search.kneighbors(synthetic)[0][:, 0]
    d_test = search.kneighbors(test)[0][:, 0]
    p5 = float(np.percentile(d_test, 5))
    return Closeness(
        float(np.median(d_synthetic)),
        float(np.median(d_test)),
        float(np.percentile(d_synthetic, 5)),
        p5,
        float(np.mean(d_synthetic < p5)),
        float(np.mean(d_synthetic < 1e-9)),
        float(np.mean(d_test < 1e-9)),
        len(synthetic),
    )


def table_quality(prepared: Prepared, x: np.ndarray, y: np.ndarray, ledger: Any, seed: int = 0) -> TableQuality:
    names = label_names(prepared.meta, prepared.train.y, prepared.test.y, y)
    columns = _binned(prepared, x, y, names)
    marginals = tuple(_marginal(c) for c in columns)
    found = efficacy(prepared.train.x, prepared.train.y, x, y, prepared.test.x, prepared.test.y, len(names), seed)
    near = closeness(*(_features(columns, role) for role in ("train", "synthetic", "test")), seed)
    tvd_1way = float(np.mean([m.tvd for m in marginals]))
    notes = () if found is not None else ("no ML efficacy: the test split holds fewer than two label classes",)
    return TableQuality(
        len(prepared.train),
        len(prepared.test),
        len(x),
        marginals,
        tvd_1way,
        float(np.mean([m.baseline for m in marginals])),
        _dependence(columns),
        found,
        near,
        headline_of(ledger),
        flags(found, tvd_1way, near),
        notes,
    )


def grid(x: np.ndarray, y: np.ndarray, names: tuple[str, ...]) -> Grid:
    """Up to GRID_COLUMNS images of each of the first GRID_CLASSES classes (none shown for a class absent)."""
    shown = names[:GRID_CLASSES]
    return Grid(shown, tuple(x[np.flatnonzero(y == k)[:GRID_COLUMNS]] for k in range(len(shown))))


def image_quality(prepared: Prepared, x: np.ndarray, y: np.ndarray, ledger: Any, seed: int = 0) -> ImageQuality:
    names = label_names(prepared.meta, prepared.train.y, prepared.test.y, y)
    labels = _marginal(
        _Binned("label", "categorical", names, prepared.train.y, prepared.test.y, np.asarray(y, np.int64), None)
    )
    found = efficacy(
        prepared.train.x,
        prepared.train.y,
        x,
        y,
        prepared.test.x,
        prepared.test.y,
        len(names),
        seed,
        IMAGE_CLASSIFIERS,
        MAX_IMAGE_FIT,
        IMAGE_COMPONENTS,
    )
    notes = [
        "FID not computed: the project's FID (InceptionV3 at 299×299) takes about a tenth of a second per image on "
        "2 CPU cores and reads high on a few hundred images; an experiment's fid metric measures it"
    ]
    if found is None:
        notes.append("no ML efficacy: the test split holds fewer than two label classes")
    return ImageQuality(
        len(prepared.train),
        len(prepared.test),
        len(x),
        grid(x, y, names),
        grid(prepared.train.x, prepared.train.y, names),
        labels,
        found,
        headline_of(ledger),
        flags(found, labels.tvd, None, "the label distribution's TVD"),
        tuple(notes),
    )


def flags(
    found: Efficacy | None, tvd_1way: float, near: Closeness | None, what: str = "the mean 1-way TVD"
) -> tuple[Flag, ...]:
    """Utility at chance (macro AUROC within CHANCE_AUROC of 0.5 or below it, or accuracy at most that of the
    training split's majority class alone), marginals far (`what` above FAR_TVD), synthetic records closer than
    held-out ones (median DCR under CLOSE_DCR of the holdout's)."""
    raised = []
    if found is not None:
        s, r = found.synthetic, found.real
        if s.auroc <= 0.5 + CHANCE_AUROC or s.accuracy <= found.majority:
            raised.append(
                Flag(
                    "utility",
                    f"ML utility at chance or below: trained on the synthetic records, macro AUROC {s.auroc:.3f} and "
                    f"accuracy {s.accuracy:.3f} on the real test split (majority class alone {found.majority:.3f}; "
                    f"trained on real: {r.auroc:.3f} and {r.accuracy:.3f})",
                )
            )
    if tvd_1way > FAR_TVD:
        raised.append(Flag("marginals", f"marginals far from the data's: {what} is {tvd_1way:.3f} (> {FAR_TVD})"))
    if near is not None and near.synthetic_median < CLOSE_DCR * near.holdout_median:
        raised.append(
            Flag(
                "closeness",
                f"synthetic records close to training records: median distance {near.synthetic_median:.3g} against "
                f"{near.holdout_median:.3g} for held-out real records",
            )
        )
    return tuple(raised)
