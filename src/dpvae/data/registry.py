"""Every dataset id of the workflow: its raw source, its files, how it is prepared; fetch/prepare entry points.

Root layout: raw files in ``<root>/raw/<source>/`` (several ids share one source), prepared datasets in
``<root>/prepared/<dataset_id>/`` (see `dpvae.data.store`). Parametric ids: ``twogauss-d<d>`` for any
positive integer d. The papers' tables are encoded through their declared public domains
(`dpvae.data.tabular`); ``<id>-refcode`` (Adult, Credit, ESR) is the same data with P3GM's reference code's
whole-set min-max instead, whose runs' ledgers say not DP. Each id carries the papers' name of its data
(`DatasetSpec.published_as`: ``mnist`` for ``mnist-p3gm``), which a ``-refcode`` id and a stand-in inherit from the
data they derive from. Datasets declared in the configuration (`datasets:`, `dpvae.data.declared`) are passed as
`declared`; their source is their id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from dpvae.data import celeba, declared, images, standins, synthetic, tabular
from dpvae.data.sources import RemoteFile, allow_unverified_hint, fetch, unverifiable, verify_local
from dpvae.data.store import Prepared, write_prepared
from dpvae.errors import TargetError
from dpvae.files import write_text
from dpvae.paths import fetched_marker, prepared_dir, raw_dir

Builder = Callable[..., Prepared]  # (raw_dir, seed); a declared dataset's also takes `secret`
TWO_GAUSSIANS_PATTERN = re.compile(r"twogauss-d([1-9][0-9]*)")
PARAMETRIC_IDS = ("twogauss-d<d>",)


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset id: raw source (None when generated), its remote files, builder and documented rules."""

    dataset_id: str
    description: str
    source: str | None
    files: tuple[RemoteFile, ...]
    build: Builder
    split: str
    scaling: str
    n_train: int | None = None  # documented training-set size (tested; used by config validation)
    n_test: int | None = None  # documented test-set size (tested; used by config validation)
    record_shape: tuple[int, ...] | None = None  # one record's shape: (d,) a table, (C, H, W) images (tested)
    classes: int | None = None  # label classes (tested)
    published_as: str = ""  # the papers' name of the data ("" on construction: the id itself)
    published_setting: str = ""  # what the id implies beside that name in the papers' tables ("d=20": twogauss-d20)

    def __post_init__(self) -> None:
        if not self.published_as:
            object.__setattr__(self, "published_as", self.dataset_id)

    @property
    def facts(self) -> declared.Facts | None:
        """What config validation knows of the data (None where a size is not documented)."""
        known = (self.record_shape, self.n_train, self.n_test, self.classes)
        return None if None in known else declared.Facts(*known)

    def prepare(self, raw_dir: Path | None, out_dir: Path, seed: int = 0, secret_seed: bool = False) -> Path:
        """Verify the raw files, build the splits and write them to ``out_dir``; return ``out_dir`` (a secret
        seed is not written: the meta says `SECRET_SEED` where the seed would be)."""
        raw_sha256 = verify_local(self.files, raw_dir) if self.files else {}
        # a release's preparation (only a declared dataset's, `declared.build`) draws its estimate's noise exactly
        built = self.build(raw_dir, seed, secret=True) if secret_seed else self.build(raw_dir, seed)
        if secret_seed:
            seed = SECRET_SEED  # type: ignore[assignment]
            if "seed" in built.meta.get("split", {}):
                built.meta["split"]["seed"] = SECRET_SEED
        meta = {
            "dataset_id": self.dataset_id,
            "description": self.description,
            "documented_split": self.split,
            "documented_scaling": self.scaling,
            "raw_source": self.source,
            "raw_files_sha256": raw_sha256,
            "seed": seed,
            **built.meta,
        }
        return write_prepared(out_dir, built.train, built.test, meta)


SECRET_SEED = "secret (drawn for a release, written nowhere)"
HOLDOUT = "seeded 90/10 holdout of all records (test = ceil(0.1 N))"
REFERENCE_SUFFIX = "-refcode"
PUBLIC = "split first; encoded into [0,1] by the declared public domain"
ADULT_SCALING = PUBLIC + " (UCI's categories, Census bounds)"
CREDIT_SCALING = "drop Time; " + PUBLIC + " (declared bounds)"
P3GM_HOLDOUT = HOLDOUT + " -> 63,000 / 7,000; P3GM's own split is unseeded"
OFFICIAL = "official train/test split"


def _specs() -> dict[str, DatasetSpec]:
    mnist, fashion = images.MNIST_FILES, images.FASHION_MNIST_FILES
    adult, credit = tabular.ADULT_FILES, tabular.CREDIT_FILES
    specs = [
        DatasetSpec(
            "mnist", "MNIST, official split, (N,1,28,28) in [0,1] (DP²-VAE)", "mnist", mnist,
            partial(images.build_official, family="mnist"), OFFICIAL, "pixel/255", n_train=60000,
            n_test=10000, record_shape=(1, 28, 28), classes=10,
        ),
        DatasetSpec(
            "fashion-mnist", "Fashion-MNIST, official split, (N,1,28,28) in [0,1] (DP²-VAE)", "fashion-mnist", fashion,
            partial(images.build_official, family="fashion-mnist"), OFFICIAL, "pixel/255", n_train=60000,
            n_test=10000, record_shape=(1, 28, 28), classes=10,
        ),
        DatasetSpec(
            "mnist-p3gm", "MNIST as P3GM: train+test (70k) flattened (N,784) in [0,1]", "mnist", mnist,
            partial(images.build_p3gm, family="mnist"), P3GM_HOLDOUT, "pixel/255", n_train=63000,
            n_test=7000, record_shape=(784,), classes=10, published_as="mnist",
        ),
        DatasetSpec(
            "fashion-mnist-p3gm", "Fashion-MNIST as P3GM: train+test (70k) flattened (N,784) in [0,1]", "fashion-mnist",
            fashion, partial(images.build_p3gm, family="fashion-mnist"), P3GM_HOLDOUT, "pixel/255", n_train=63000,
            n_test=7000, record_shape=(784,), classes=10, published_as="fashion-mnist",
        ),
        DatasetSpec(
            "fashion-mnist-32", "Fashion-MNIST as Mathieu et al./PriVAE: 32x32, clamped to [1e-6, 1-1e-6]",
            "fashion-mnist", fashion, images.build_fashion_32, OFFICIAL,
            "PIL bilinear 28->32, pixel/255, clamp [1e-6, 1-1e-6]", n_train=60000,
            n_test=10000, record_shape=(1, 32, 32), classes=10, published_as="fashion-mnist",
        ),
        DatasetSpec(
            "mnist-lvae", "MNIST as LVAE: binarised; 9,999 seeded train images + one all-white outlier", "mnist", mnist,
            images.build_lvae, "train: 9,999 seeded draws from MNIST train + white image; test: MNIST test",
            "pixel/255 > 0.5", n_train=10000,
            n_test=10000, record_shape=(1, 28, 28), classes=10, published_as="mnist",
        ),
        DatasetSpec(
            "adult", "Adult as P3GM's code: adult.data + adult.test, '?' kept as a category (48,842 rows)", "adult",
            adult, partial(tabular.build_adult, drop_missing=False), HOLDOUT, ADULT_SCALING, n_train=43957,
            n_test=4885, record_shape=(14,), classes=2,
        ),
        DatasetSpec(
            "adult-dropna", "Adult as P3GM's paper text: rows with '?' dropped (45,222 rows)", "adult",
            adult, partial(tabular.build_adult, drop_missing=True), HOLDOUT, ADULT_SCALING, n_train=40699,
            n_test=4523, record_shape=(14,), classes=2, published_as="adult",
        ),
        DatasetSpec(
            "credit", "Kaggle Credit as P3GM's code: all 492 frauds + 10,000 seeded normal rows (10,492)", "credit",
            credit, tabular.build_credit, HOLDOUT, CREDIT_SCALING, n_train=9442,
            n_test=1050, record_shape=(29,), classes=2,
        ),
        DatasetSpec(
            "credit-full", "Kaggle Credit as P3GM's paper text: all 284,807 rows", "credit",
            credit, partial(tabular.build_credit, n_normal=None), HOLDOUT, CREDIT_SCALING,
            n_train=256326,
            n_test=28481, record_shape=(29,), classes=2, published_as="credit",
        ),
        DatasetSpec(
            "isolet", "UCI ISOLET: isolet1+2+3+4 + isolet5 (7,797 rows), y = vowel", "isolet",
            tabular.ISOLET_FILES, tabular.build_isolet, HOLDOUT, PUBLIC + " (the publisher's [-1, 1])", n_train=7017,
            n_test=780, record_shape=(617,), classes=2,
        ),
        DatasetSpec(
            "esr", "UCI Epileptic Seizure Recognition (11,500 rows), y = seizure (y == 1)", "esr",
            tabular.ESR_FILES, tabular.build_esr, HOLDOUT, "drop id; " + PUBLIC + " (12-bit A/D range)", n_train=10350,
            n_test=1150, record_shape=(178,), classes=2,
        ),
        DatasetSpec(
            "celeba32", "CelebA 32x32 (centre crop 178x178), y = Male; 60,000 seeded train images", "celeba",
            celeba.CELEBA_FILES, celeba.build_celeba,
            "train: 60,000 seeded draws from the official train partition; test: official test partition",
            "centre crop, PIL bilinear to 32x32, pixel/255", n_train=60000,
            n_test=19962, record_shape=(3, 32, 32), classes=2, published_as="celeba",
        ),
        DatasetSpec(
            "celeba32-standin", "STAND-IN for celeba32 (CelebA is not reachable here): generated 3x32x32 colour "
            "fields, y = 'gender' label; same schema, not faces", None, (), standins.build_celeba_standin,
            "independent seeded draws of 2,000 train and 500 test images", "generated in [0, 1]", n_train=2000,
            n_test=500, record_shape=(3, 32, 32), classes=2,
        ),
        DatasetSpec(
            "pinwheel", "Pinwheel (Johnson et al., MATLAB behaviour as Mathieu et al.): 4 arms x 100 points", None, (),
            synthetic.build_pinwheel, "independent seeded draws of 400 train and 400 test points", "none", n_train=400,
            n_test=400, record_shape=(2,), classes=4,
        ),
    ]  # fmt: skip
    specs += [_reference_code(spec) for spec in specs if spec.dataset_id in REFERENCE_CODE_IDS]
    specs += [_standin_spec(real_id) for real_id in standins.SCHEMAS]
    by_id = {spec.dataset_id: spec for spec in specs}
    return {dataset_id: _published_as_real(spec, by_id) for dataset_id, spec in by_id.items()}


def _published_as_real(spec: DatasetSpec, by_id: Mapping[str, DatasetSpec]) -> DatasetSpec:
    """A stand-in takes the papers' name of the data it stands in for; any other spec is returned as it is."""
    real = by_id.get(spec.dataset_id.removesuffix(standins.STANDIN_SUFFIX))
    return replace(spec, published_as=real.published_as) if standins.is_standin(spec.dataset_id) and real else spec


#: The tables P3GM's reference code min-max scales on the whole set (ISOLET it leaves as published).
REFERENCE_CODE_IDS = ("adult", "adult-dropna", "credit", "credit-full", "esr")


def _reference_code(spec: DatasetSpec) -> DatasetSpec:
    """`spec` prepared as P3GM's reference code prepares it (`tabular.REFERENCE_SCALING`): not DP."""
    return replace(
        spec,
        dataset_id=spec.dataset_id + REFERENCE_SUFFIX,
        description=f"{spec.description}; P3GM's reference code's preprocessing (whole-set min-max, not DP)",
        build=partial(spec.build, scaling="reference-code"),
        scaling="P3GM's reference code: label-encode as found, min-max [0,1] on the whole set before the split",
    )


def _standin_spec(real_id: str) -> DatasetSpec:
    """A generated stand-in with `real_id`'s schema (used where the real data cannot be downloaded)."""
    schema = standins.SCHEMAS[real_id]
    n_train = schema.n_records - -(-schema.n_records // 10)
    return DatasetSpec(
        standins.standin_id(real_id),
        f"STAND-IN (generated, not real data) with the schema of {schema.real_description}",
        None,
        (),
        partial(standins.build_standin, real_id=real_id),
        HOLDOUT,
        f"generated in {list(standins.GENERATOR_RANGE)} (declared); split first, then into [0,1]",
        n_train=n_train,
        n_test=schema.n_records - n_train,
        record_shape=(schema.n_features,),
        classes=2,
    )


DATASETS: dict[str, DatasetSpec] = _specs()


def dataset_ids() -> list[str]:
    """The fixed dataset ids (parametric families are listed in ``PARAMETRIC_IDS``)."""
    return list(DATASETS)


def get_dataset(dataset_id: str, declared: Mapping[str, Mapping] | None = None) -> DatasetSpec:
    """The spec of ``dataset_id``; ``twogauss-d<d>`` is built on demand for any positive integer d, and a dataset
    of ``declared`` (the configuration's `datasets`) from its file (`dpvae.data.declared`)."""
    if declared and dataset_id in declared:
        return DatasetSpec(**declared_fields(dataset_id, declared[dataset_id]))
    if dataset_id in DATASETS:
        return DATASETS[dataset_id]
    match = TWO_GAUSSIANS_PATTERN.fullmatch(dataset_id) if isinstance(dataset_id, str) else None
    if match:
        dim = int(match.group(1))
        description = f"Two Gaussians N(-1, I) vs N(+1, I) in {dim} dimensions, 10,000 points per class (P3GM Fig. 6)"
        build = partial(synthetic.build_two_gaussians, dim=dim)
        shape = (dim,)
        return DatasetSpec(
            dataset_id, description, None, (), build, HOLDOUT, "none", n_train=18000, n_test=2000, record_shape=shape,
            classes=2, published_as="twogauss", published_setting=f"d={dim}",
        )  # fmt: skip
    known = ", ".join([*DATASETS, *PARAMETRIC_IDS, *(declared or ())])
    raise TargetError(
        f"unknown dataset_id {dataset_id!r}; known ids: {known} (d = any positive integer; "
        "your own data: declare it under the config key `datasets`)"
    )


def declared_fields(dataset_id: str, entry: Mapping, *, with_facts: bool = True) -> dict:
    """The `DatasetSpec` fields of a declared dataset (`dpvae.data.declared.spec_fields`)."""
    return declared.spec_fields(dataset_id, entry, with_facts=with_facts)


def is_builtin_name(name: str) -> bool:
    """Whether `name` is a built-in dataset id, a raw source's name or a generated two-Gaussians id (neither a
    dataset declared under `datasets` nor a file's id in `synth` may be one)."""
    taken = set(DATASETS) | {s.source for s in DATASETS.values() if s.source}
    return name in taken or TWO_GAUSSIANS_PATTERN.fullmatch(name) is not None


def raw_dir_of(dataset_id: str, root: str | Path) -> Path | None:
    """``<root>/raw/<source>`` of a dataset id, or None for a generated dataset."""
    source = get_dataset(dataset_id).source
    return None if source is None else raw_dir(Path(root), source)


def prepared_dir_of(dataset_id: str, root: str | Path) -> Path:
    """``<root>/prepared/<dataset_id>``."""
    get_dataset(dataset_id)
    return prepared_dir(Path(root), dataset_id)


def fetch_dataset(
    dataset_id: str,
    root: str | Path,
    mirror: str | Path | None = None,
    *,
    timeout: float = 60.0,
    allow_unverified: bool = False,
) -> Path | None:
    """Bring the raw files of ``dataset_id`` into ``<root>/raw/<source>/`` (mirror first, then the URLs).

    Returns the raw directory, or None for a generated dataset (nothing to fetch).
    """
    spec = get_dataset(dataset_id)
    raw_dir = raw_dir_of(dataset_id, root)
    if raw_dir is not None:
        options = {"timeout": timeout, "allow_unverified": allow_unverified}
        fetch(spec.files, raw_dir, mirror=mirror, source_name=spec.source, **options)
    return raw_dir


def source_files(source: str) -> tuple[RemoteFile, ...]:
    """The raw files of a source (the ``<root>/raw/<source>`` several dataset ids may share)."""
    for spec in DATASETS.values():
        if spec.source == source:
            return spec.files
    known = sorted({s.source for s in DATASETS.values() if s.source})
    raise TargetError(f"unknown raw source {source!r}; known sources: {', '.join(known)}")


def sources_without_checksums() -> list[str]:
    """Raw sources with a file that has no published checksum (fetched only with data.allow_unverified)."""
    return sorted(
        {s.source for s in DATASETS.values() if s.source and any(f.published_checksum is None for f in s.files)}
    )


def unverified_source_problem(source: str, root: str | Path, allowed: list[str] | tuple[str, ...]) -> str | None:
    """Why fetching `source` into `<root>/raw/<source>` would be refused (files without any checksum,
    published or recorded, and the source not in `allowed`), naming the config key; None if it would not."""
    if source in allowed:
        return None
    missing = unverifiable(source_files(source), raw_dir(Path(root), source))
    if not missing:
        return None
    wanted = sorted({*allowed, *sources_without_checksums()})
    return (
        f"raw source '{source}' ({', '.join(missing)}) has no published checksum, so its download cannot be "
        f"verified. To accept it (its sha256 is recorded on first download and checked after), list it in "
        f"the config key data.allow_unverified: {allow_unverified_hint(wanted)}"
    )


def fetch_source(
    source: str, root: str | Path, mirror: str | Path | None = None, *, allow_unverified: bool = False
) -> Path:
    """Fetch and verify a source's raw files, then write ``<root>/raw/<source>/SHA256SUMS`` (the workflow's
    marker that the source is complete, in ``sha256sum`` format); return the marker's path."""
    observed = fetch(
        source_files(source),
        raw_dir(Path(root), source),
        mirror=mirror,
        source_name=source,
        allow_unverified=allow_unverified,
    )
    return write_text(
        fetched_marker(Path(root), source), "".join(f"{digest}  {name}\n" for name, digest in sorted(observed.items()))
    )


def prepare_dataset(dataset_id: str, root: str | Path, seed: int = 0, secret_seed: bool = False) -> Path:
    """Prepare ``dataset_id`` from verified raw files into ``<root>/prepared/<dataset_id>/``; return that path.

    A declared dataset is prepared from the declaration its fetch step recorded in ``<root>/raw/<id>/``; with
    `secret_seed` (a release's split, `dpvae.randomness`) its meta records that the seed was secret, not the seed."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if dataset_id not in DATASETS and (entry := declared.recorded(dataset_id, root)) is not None:
        spec = DatasetSpec(**declared_fields(dataset_id, entry, with_facts=False))
        out = prepared_dir(Path(root), dataset_id)
        return spec.prepare(raw_dir(Path(root), dataset_id), out, seed, secret_seed)
    return get_dataset(dataset_id).prepare(raw_dir_of(dataset_id, root), prepared_dir_of(dataset_id, root), seed)
