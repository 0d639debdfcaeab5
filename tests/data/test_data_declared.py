"""Datasets declared in the config (`dpvae.data.declared`): Parquet tables, separate test files, image layouts.

The walk-throughs (tests/workflow/test_own_data.py) take a CSV with a seeded holdout and [N, H, W] uint8 images;
these cover the other declared forms at the preparation step, in milliseconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpvae.data import declared
from dpvae.errors import DataError


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "age": rng.integers(18, 90, n),
            "colour": rng.choice(["red", "green", "blue"], n),
            "income": rng.normal(50, 10, n),
            "y": rng.choice(["yes", "no"], n),
        }
    )


DOMAIN = {
    "columns": {
        "age": {"bounds": [0, 120]},
        "colour": {"categories": ["red", "green", "blue"]},
        "income": {"bounds": [0, 100]},
    }
}


def _prepared(entry: dict, tmp_path, seed: int = 0):
    entry = {**entry, "identity": declared.identity(entry)}
    raw = tmp_path / "raw"
    declared.copy_in("mine", declared.declaration(entry), tmp_path)
    return declared.build(raw / "mine", seed, entry=entry)


def test_parquet_with_a_test_file_keeps_the_files_as_splits(tmp_path):
    _table(40, 0).to_parquet(tmp_path / "train.parquet")
    _table(10, 1).to_parquet(tmp_path / "test.parquet")
    entry = {"path": str(tmp_path / "train.parquet"), "test_path": str(tmp_path / "test.parquet"), "label": "y"}
    entry |= {"drop": ["id"], "positive": "yes", **DOMAIN}
    assert declared.problems("mine", entry) == []
    facts = declared.facts(entry)
    assert (facts.n_train, facts.n_test, facts.record_shape, facts.classes) == (40, 10, (3,), 2)
    prepared = _prepared(entry, tmp_path)
    assert len(prepared.train.y) == 40 and len(prepared.test.y) == 10
    assert prepared.meta["columns"] and prepared.meta["label_column"] == "y"
    assert prepared.train.x.min() >= 0 and prepared.train.x.max() <= 1
    expected = (_table(10, 1)["y"] == "yes").to_numpy().astype(int)
    np.testing.assert_array_equal(prepared.test.y, expected)  # the test file's rows, in order, positive = 1


def test_parquet_and_csv_of_one_table_prepare_the_same_records(tmp_path):
    frame = _table(60, 2)
    frame.to_parquet(tmp_path / "t.parquet")
    frame.to_csv(tmp_path / "t.csv", index=False)
    options = {"label": "y", "drop": ["id"], "test_fraction": 0.2, "labels": ["no", "yes"], **DOMAIN}
    a = _prepared({"path": str(tmp_path / "t.parquet"), **options}, tmp_path / "a")
    b = _prepared({"path": str(tmp_path / "t.csv"), **options}, tmp_path / "b")
    np.testing.assert_allclose(a.train.x, b.train.x)
    np.testing.assert_array_equal(a.test.y, b.test.y)


def test_a_test_file_of_another_kind_or_without_the_label_is_refused(tmp_path):
    _table(20, 0).to_csv(tmp_path / "train.csv", index=False)
    _table(5, 1).drop(columns="y").to_csv(tmp_path / "test.csv", index=False)
    np.savez(tmp_path / "x.npz", x=np.zeros((3, 4, 4), np.uint8), y=np.zeros(3, int))
    other = declared.problems(
        "mine", {"path": str(tmp_path / "train.csv"), "label": "y", "test_path": str(tmp_path / "x.npz")}
    )
    assert other == [
        f"config key 'datasets.mine.test_path': {tmp_path / 'x.npz'} is not of the same kind as "
        f"{tmp_path / 'train.csv'}"
    ]
    missing = declared.problems(
        "mine", {"path": str(tmp_path / "train.csv"), "label": "y", "test_path": str(tmp_path / "test.csv")}
    )
    assert len(missing) == 1 and "no column 'y'" in missing[0]


@pytest.mark.parametrize("name", ["adult", "mnist", "celeba", "twogauss-d3"])
def test_a_declared_dataset_may_not_take_a_built_in_id_or_source(tmp_path, name):
    """`datasets.<name>` with a built-in id, a raw source's name or a generated id is refused naming the key; the
    same rule (`registry.is_builtin_name`) renames a synth file of that stem (`test_synth.py`)."""
    from dpvae.config import _declared_errors

    _table(20, 0).to_csv(tmp_path / "t.csv", index=False)
    entry = {"path": str(tmp_path / "t.csv"), "label": "y"}
    assert list(_declared_errors({"datasets": {name: entry}})) == [
        f"config key 'datasets.{name}': '{name}' is a built-in dataset id or raw source; choose another id"
    ]
    assert "config key 'datasets.mine'" not in " ".join(_declared_errors({"datasets": {"mine": entry}}))


@pytest.mark.parametrize("layout", ["NHW uint8", "NCHW float"])
def test_image_arrays_become_nchw_in_unit_range(tmp_path, layout):
    rng = np.random.default_rng(0)
    if layout == "NHW uint8":
        x = rng.integers(0, 256, (30, 6, 6)).astype(np.uint8)
        expected = x[:, None].astype(np.float32) / 255
    else:
        x = rng.random((30, 3, 6, 6)).astype(np.float32)
        expected = x
    y = rng.integers(0, 3, 30)
    np.savez(tmp_path / "img.npz", x=x, y=y)
    entry = {"path": str(tmp_path / "img.npz"), "test_fraction": 0.2, "labels": 3}
    facts = declared.facts(entry)
    assert (
        facts.kind == "image" and facts.record_shape == expected.shape[1:] and (facts.n_train, facts.n_test) == (24, 6)
    )
    prepared = _prepared(entry, tmp_path)
    together = np.concatenate([prepared.train.x, prepared.test.x])
    assert together.shape == expected.shape
    np.testing.assert_allclose(np.sort(together.ravel()), np.sort(expected.ravel()), atol=1e-6)


def test_a_file_changed_after_planning_is_refused_at_the_copy(tmp_path):
    _table(20, 0).to_csv(tmp_path / "t.csv", index=False)
    entry = {"path": str(tmp_path / "t.csv"), "label": "y"}
    planned = declared.declaration(entry)
    _table(21, 0).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(DataError, match="changed since the run was planned"):
        declared.copy_in("mine", planned, tmp_path)
