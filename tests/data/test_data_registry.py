"""Registry, the fetch/prepare entry points, and dataset_statistics."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

from dpvae.data import (
    DataError,
    dataset_ids,
    dataset_statistics,
    fetch_dataset,
    get_dataset,
    load_prepared,
    prepare_dataset,
)
from dpvae.data.store import Prepared, Split, write_prepared
from dpvae.reproductions import published_dataset

EXPECTED_IDS = {
    "mnist", "fashion-mnist", "mnist-p3gm", "fashion-mnist-p3gm", "fashion-mnist-32", "mnist-lvae", "adult",
    "adult-dropna", "credit", "credit-full", "isolet", "esr", "celeba32", "pinwheel", "celeba32-standin",
    "credit-standin", "isolet-standin", "esr-standin", "adult-refcode", "adult-dropna-refcode", "credit-refcode",
    "credit-full-refcode", "esr-refcode",
}  # fmt: skip


def test_every_documented_id_is_registered() -> None:
    assert set(dataset_ids()) == EXPECTED_IDS
    for dataset_id in dataset_ids():
        spec = get_dataset(dataset_id)
        assert spec.dataset_id == dataset_id and spec.description and spec.split and spec.scaling
        assert (spec.source is None) == (not spec.files), "generated datasets, and only they, have no raw files"


def test_a_refcode_id_is_its_dataset_with_the_reference_codes_preprocessing() -> None:
    for dataset_id in ("adult", "adult-dropna", "credit", "credit-full", "esr"):
        spec, reference = get_dataset(dataset_id), get_dataset(f"{dataset_id}-refcode")
        assert (reference.source, reference.files, reference.n_train, reference.n_test, reference.record_shape) == (
            spec.source, spec.files, spec.n_train, spec.n_test, spec.record_shape,
        )  # fmt: skip
        assert reference.build.keywords["scaling"] == "reference-code" and "not DP" in reference.description
    assert "isolet-refcode" not in dataset_ids(), "the reference code does not rescale ISOLET"


#: the papers' name (and implied setting) of each id, as `reproductions.DATASET_SUFFIXES` stripped them before the
#: names moved into the registry (`DatasetSpec.published_as`)
PUBLISHED = {
    "mnist": "mnist", "fashion-mnist": "fashion-mnist", "mnist-p3gm": "mnist", "fashion-mnist-p3gm": "fashion-mnist",
    "fashion-mnist-32": "fashion-mnist", "mnist-lvae": "mnist", "adult": "adult", "adult-dropna": "adult",
    "credit": "credit", "credit-full": "credit", "isolet": "isolet", "esr": "esr", "celeba32": "celeba",
    "pinwheel": "pinwheel", "celeba32-standin": "celeba", "credit-standin": "credit", "isolet-standin": "isolet",
    "esr-standin": "esr", "adult-refcode": "adult", "adult-dropna-refcode": "adult", "credit-refcode": "credit",
    "credit-full-refcode": "credit", "esr-refcode": "esr",
}  # fmt: skip


def test_each_id_is_published_under_the_papers_name_of_its_data() -> None:
    assert set(PUBLISHED) == set(dataset_ids())
    for dataset_id, name in PUBLISHED.items():
        assert published_dataset(dataset_id) == (name, ""), dataset_id
    for dim in (1, 2, 20, 100):
        assert published_dataset(f"twogauss-d{dim}") == ("twogauss", f"d={dim}")


def test_a_derived_id_inherits_the_papers_name_of_its_data() -> None:
    derived = {d: d.removesuffix("-refcode").removesuffix("-standin") for d in dataset_ids()}
    derived = {d: base for d, base in derived.items() if d != base}
    assert len(derived) == 9
    for dataset_id, base in derived.items():
        assert get_dataset(dataset_id).published_as == get_dataset(base).published_as, dataset_id


def test_a_name_the_registry_does_not_know_is_its_own() -> None:
    """A paper's own name (a paper setting names it) and a dataset declared in the config keep theirs."""
    for name in ("celeba", "twogauss", "survey-32", "mine-standin"):
        assert published_dataset(name) == (name, "")


def test_unknown_id_error_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown dataset_id 'mnist-3d'.*adult-dropna.*twogauss-d<d>"):
        get_dataset("mnist-3d")


@pytest.mark.parametrize("bad", ["twogauss-d0", "twogauss-d07", "twogauss-dx", "twogauss-d-3", "twogauss-d"])
def test_two_gaussians_needs_a_positive_integer_dimension(bad: str) -> None:
    with pytest.raises(ValueError, match="unknown dataset_id"):
        get_dataset(bad)


def test_checksums_are_published_except_for_isolet_and_esr() -> None:
    for dataset_id in EXPECTED_IDS - {"pinwheel", "celeba32-standin"}:
        checksums = [remote.published_checksum for remote in get_dataset(dataset_id).files]
        if dataset_id in {"isolet", "esr", "esr-refcode"}:
            assert checksums == [None] * len(checksums)
        else:
            assert all(checksum is not None for checksum in checksums), dataset_id
    assert get_dataset("credit").files[0].published_checksum[0] == "md5"
    assert all(remote.published_checksum[0] == "sha256" for remote in get_dataset("celeba32").files)


def test_mirror_manifest_agrees_with_the_registry(mirror: Path) -> None:
    with open(mirror / "MANIFEST.tsv", newline="") as stream:
        manifest = {row["file"]: row for row in csv.DictReader(stream, delimiter="\t")}
    for dataset_id in ("mnist", "fashion-mnist", "adult"):
        spec = get_dataset(dataset_id)
        for remote in spec.files:
            row = manifest[f"{spec.source}/{remote.filename}"]
            assert (remote.sha256, remote.md5, remote.size) == (row["sha256"], row["md5"], int(row["bytes"]))


def test_prepare_refuses_missing_or_tampered_raw_files(tmp_path: Path, mirror: Path) -> None:
    with pytest.raises(DataError, match=r"missing raw file .*raw/adult/adult.data"):
        prepare_dataset("adult", tmp_path)
    fetch_dataset("adult", tmp_path, mirror)
    raw_file = tmp_path / "raw" / "adult" / "adult.test"
    raw_file.write_bytes(raw_file.read_bytes().replace(b">50K.", b">60K.", 1))
    with pytest.raises(DataError, match=f"{raw_file}: sha256 expected {get_dataset('adult').files[1].sha256}"):
        prepare_dataset("adult-dropna", tmp_path)
    assert not (tmp_path / "prepared" / "adult-dropna").exists()


def test_fetch_copies_from_the_mirror_into_the_shared_raw_directory(tmp_path: Path, mirror: Path) -> None:
    raw_dir = fetch_dataset("mnist-lvae", tmp_path, mirror)
    assert raw_dir == tmp_path / "raw" / "mnist"
    assert sorted(p.name for p in raw_dir.iterdir()) == sorted(f.filename for f in get_dataset("mnist").files)
    assert fetch_dataset("pinwheel", tmp_path, mirror) is None


def test_generated_dataset_round_trip_and_determinism(tmp_path: Path) -> None:
    first = load_prepared(prepare_dataset("twogauss-d3", tmp_path / "a", seed=2))
    again = load_prepared(prepare_dataset("twogauss-d3", tmp_path / "b", seed=2))
    other = load_prepared(prepare_dataset("twogauss-d3", tmp_path / "c", seed=3))
    np.testing.assert_array_equal(first.train.x, again.train.x)
    np.testing.assert_array_equal(first.test.y, again.test.y)
    assert not np.array_equal(first.train.x, other.train.x)
    assert (first.meta["dataset_id"], first.meta["seed"], first.meta["raw_files_sha256"]) == ("twogauss-d3", 2, {})
    assert first.meta["options"] == {"dim": 3, "n_per_class": 10_000}
    assert (tmp_path / "a" / "prepared" / "twogauss-d3" / "meta.json").is_file()


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0"])
def test_prepare_rejects_bad_seed(tmp_path: Path, seed: object) -> None:
    with pytest.raises(ValueError, match="seed"):
        prepare_dataset("pinwheel", tmp_path, seed=seed)


def test_dataset_statistics_counts_records_features_classes_and_positives(tmp_path: Path) -> None:
    train = Split(np.zeros((6, 2, 3), np.float32), np.array([1, 0, 0, 1, 0, 0], np.int64))
    test = Split(np.zeros((2, 2, 3), np.float32), np.array([1, 0], np.int64))
    meta = {"dataset_id": "toy", "label_names": ["no", "yes"], "positive_class": 1}
    stats = dataset_statistics(load_prepared(write_prepared(tmp_path / "toy", train, test, meta)))
    assert stats == {
        "dataset_id": "toy", "N": 8, "n_train": 6, "n_test": 2, "n_features": 6, "n_classes": 2, "pct_positive": 37.5,
    }  # fmt: skip
    multi = dataset_statistics(Prepared(train, test, {"label_names": ["a", "b", "c"]}))
    assert multi["pct_positive"] is None and multi["n_classes"] == 3


def test_mirror_statistics_of_image_sets(prepared_from_mirror: object) -> None:
    stats = dataset_statistics(load_prepared(prepared_from_mirror("mnist-p3gm")))
    assert (stats["N"], stats["n_features"], stats["n_classes"]) == (70_000, 784, 10)
    lvae = dataset_statistics(load_prepared(prepared_from_mirror("mnist-lvae")))
    assert (lvae["N"], lvae["n_classes"]) == (20_000, 10), "the outlier label -1 is not a class"


def test_a_prepared_dataset_can_be_moved(tmp_path: Path) -> None:
    path = prepare_dataset("pinwheel", tmp_path)
    moved = shutil.move(path, tmp_path / "elsewhere")
    assert len(load_prepared(moved).train) == 400


@pytest.mark.parametrize(
    "dataset_id", ["mnist", "fashion-mnist", "mnist-p3gm", "fashion-mnist-32", "mnist-lvae", "adult", "adult-dropna"]
)
def test_documented_training_size_matches_the_prepared_data(dataset_id, prepared_from_mirror):
    """Config validation checks batch sizes and metric sizes against DatasetSpec's documented facts (training
    and test sizes, record shape, label classes), so they must be the real ones."""
    from dpvae.data.registry import get_dataset
    from dpvae.data.store import load_prepared

    _check_facts(load_prepared(prepared_from_mirror(dataset_id)), get_dataset(dataset_id))


def _check_facts(prepared, spec) -> None:
    import numpy as np

    assert len(prepared.train) == spec.n_train and len(prepared.test) == spec.n_test
    assert tuple(prepared.train.x.shape[1:]) == spec.record_shape
    labels = np.concatenate([prepared.train.y, prepared.test.y])
    assert len(np.unique(labels[labels >= 0])) == spec.classes  # LVAE's planted outlier is labelled -1


@pytest.mark.parametrize("dataset_id", ["pinwheel", "twogauss-d3", "celeba32-standin"])
def test_documented_training_size_of_generated_data(dataset_id, tmp_path):
    from dpvae.data.registry import get_dataset, prepare_dataset
    from dpvae.data.store import load_prepared

    _check_facts(load_prepared(prepare_dataset(dataset_id, tmp_path)), get_dataset(dataset_id))


def test_fetch_source_writes_a_checksum_marker(tmp_path, mirror):
    from dpvae.data.registry import fetch_source

    marker = fetch_source("adult", tmp_path, mirror)
    lines = marker.read_text().splitlines()
    assert marker.name == "SHA256SUMS" and len(lines) == 2
    assert lines[0].startswith("5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d  adult.data")
