"""The prepared format: round trip, atomic replacement, validation, the seeded holdout split."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpvae.data import store
from dpvae.data.errors import DataError
from dpvae.data.store import Split, holdout_split, load_prepared, write_prepared


def make_split(n: int, offset: float = 0.0) -> Split:
    x = (np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3) + offset) / 100
    return Split(x, np.arange(n, dtype=np.int64) % 3)


def test_round_trip_keeps_arrays_and_meta(tmp_path: Path) -> None:
    train, test = make_split(7), make_split(3, offset=1000)
    out = write_prepared(tmp_path / "prepared" / "toy", train, test, {"dataset_id": "toy", "seed": np.int64(4)})
    loaded = load_prepared(out)
    np.testing.assert_array_equal(loaded.train.x, train.x)
    np.testing.assert_array_equal(loaded.test.y, test.y)
    assert loaded.train.x.dtype == np.float32 and loaded.test.y.dtype == np.int64
    assert loaded.meta["seed"] == 4 and loaded.meta["dataset_id"] == "toy"
    assert loaded.meta["shapes"] == {"train": [7, 2, 3], "test": [3, 2, 3]}
    assert not {"x_observed_range", "x_storage"} & set(loaded.meta)  # nothing computed from the values (issue 62)
    assert sorted(p.name for p in out.iterdir()) == ["meta.json", "test.npz", "train.npz"]


def test_rewrite_replaces_old_directory_and_leaves_no_staging(tmp_path: Path) -> None:
    out = tmp_path / "toy"
    write_prepared(out, make_split(4), make_split(2), {"version": 1})
    write_prepared(out, make_split(5), make_split(2), {"version": 2})
    assert load_prepared(out).meta["version"] == 2 and len(load_prepared(out).train) == 5
    assert [p.name for p in tmp_path.iterdir()] == ["toy"]


def test_failed_write_keeps_the_previous_dataset_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "toy"
    write_prepared(out, make_split(4), make_split(2), {"version": 1})
    calls = []

    save_npz = store.save_npz

    def failing_save_npz(file: Path, arrays: dict[str, np.ndarray]) -> str:
        calls.append(file)
        if len(calls) == 2:
            raise OSError("disk full")
        return save_npz(file, arrays)

    monkeypatch.setattr(store, "save_npz", failing_save_npz)
    with pytest.raises(OSError, match="disk full"):
        write_prepared(out, make_split(9), make_split(2), {"version": 2})
    monkeypatch.undo()
    assert load_prepared(out).meta["version"] == 1 and len(load_prepared(out).train) == 4
    assert [p.name for p in tmp_path.iterdir()] == ["toy"]


def test_meta_must_be_json_serialisable(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        write_prepared(tmp_path / "toy", make_split(2), make_split(2), {"bad": object()})
    assert not (tmp_path / "toy").exists()


@pytest.mark.parametrize(
    ("x", "y", "offending"),
    [
        (np.zeros((3, 2), np.float64), np.zeros(3, np.int64), "x must be a float32"),
        (np.zeros(3, np.float32), np.zeros(3, np.int64), "x must be a float32"),
        (np.zeros((3, 2), np.float32), np.zeros(3, np.int32), "y must be an int64"),
        (np.zeros((3, 2), np.float32), np.zeros(4, np.int64), "same length"),
    ],
)
def test_split_rejects_wrong_dtypes_and_shapes(x: np.ndarray, y: np.ndarray, offending: str) -> None:
    with pytest.raises(ValueError, match=offending):
        Split(x, y)


def test_train_and_test_must_share_record_shape(tmp_path: Path) -> None:
    other = Split(np.zeros((2, 5), np.float32), np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="record shape"):
        write_prepared(tmp_path / "toy", make_split(2), other, {})


def test_load_reports_missing_and_inconsistent_files(tmp_path: Path) -> None:
    out = write_prepared(tmp_path / "toy", make_split(4), make_split(2), {})
    meta = json.loads((out / "meta.json").read_text())
    meta["shapes"]["test"] = [3, 2, 3]
    (out / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataError, match="test.npz has x shape"):
        load_prepared(out)
    (out / "train.npz").unlink()
    with pytest.raises(DataError, match=str(out / "train.npz")):
        load_prepared(out)
    with pytest.raises(DataError, match="meta.json"):
        load_prepared(tmp_path / "absent")


@pytest.mark.parametrize("n_records", [10, 11, 48842, 70000])
def test_holdout_sizes_follow_the_ceil_rule_and_partition_the_records(n_records: int) -> None:
    x = np.arange(n_records, dtype=np.float32)[:, None]
    train, test, meta = holdout_split(x, np.arange(n_records, dtype=np.int64), seed=3)
    assert len(test) == math.ceil(0.1 * n_records) and len(train) + len(test) == n_records
    assert np.array_equal(np.sort(np.concatenate([train.y, test.y])), np.arange(n_records))
    assert np.array_equal(train.x[:, 0].astype(np.int64), train.y), "x and y rows must stay paired"
    assert meta["seed"] == 3 and meta["test_fraction"] == 0.1


def test_holdout_is_deterministic_per_seed_and_shuffles() -> None:
    x, y = np.zeros((1000, 1), np.float32), np.arange(1000, dtype=np.int64)
    first, second, other = (holdout_split(x, y, seed=seed)[1].y for seed in (5, 5, 6))
    assert np.array_equal(first, second) and not np.array_equal(first, other)
    assert not np.array_equal(np.sort(first), np.arange(900, 1000)), "the test split must not be the last rows"


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1])
def test_holdout_rejects_bad_fraction(fraction: float) -> None:
    with pytest.raises(ValueError, match="test_fraction"):
        holdout_split(np.zeros((10, 1), np.float32), np.zeros(10, np.int64), seed=0, test_fraction=fraction)
