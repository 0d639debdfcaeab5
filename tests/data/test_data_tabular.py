"""Tabular preparation: Adult (mirror + fixture), Credit, ISOLET and ESR (fixtures in the raw formats), through
their public domains and, on the -refcode ids, as P3GM's reference code scales them."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from raw_fixtures import unix_compress, write_arff

from dpvae.data import dataset_statistics, load_prepared, tabular
from dpvae.data.errors import DataError


def unscale(x: np.ndarray, column: dict) -> np.ndarray:
    return x * (column["max"] - column["min"]) + column["min"]


def both(prepared: object, attribute: str) -> np.ndarray:
    return np.concatenate([getattr(prepared.train, attribute), getattr(prepared.test, attribute)])


# ---- Adult -----------------------------------------------------------------------------------------


def test_mirror_adult_counts_scaling_and_categories(prepared_from_mirror: Callable[[str], Path]) -> None:
    prepared = load_prepared(prepared_from_mirror("adult"))
    stats = dataset_statistics(prepared)
    assert (stats["N"], stats["n_train"], stats["n_test"]) == (48_842, 43_957, 4_885)
    assert int(both(prepared, "y").sum()) == 11_687 and stats["pct_positive"] == pytest.approx(23.928, abs=1e-3)
    x = both(prepared, "x")
    assert x.shape[1] == 14 and x.min() >= 0 and x.max() <= 1
    columns = {column["name"]: column for column in prepared.meta["columns"]}
    assert columns["workclass"]["categories"][0] == "?" and columns["sex"]["categories"] == ["Female", "Male"]
    assert len(columns["native-country"]["categories"]) == 41 + 1, "adult.names' 41 countries and '?'"
    ages = unscale(x[:, 0], columns["age"])
    assert (columns["age"]["min"], columns["age"]["max"]) == (17, 90) and np.allclose(ages, np.rint(ages), atol=1e-4)
    assert prepared.meta["label_names"] == ["<=50K", ">50K"] and prepared.meta["positive_class"] == 1
    assert prepared.meta["domain"]["source"] == "declared" and prepared.meta["options"]["scaling"] == "public"


def test_mirror_adult_differs_from_the_reference_code_in_fnlwgt_and_capital_loss_only(
    prepared_from_mirror: Callable[[str], Path],
) -> None:
    """Every category of the published lists occurs in the file and age, education-num, capital-gain and
    hours-per-week reach their declared bounds, so the reference code's whole-set min-max and the public
    domain agree there; fnlwgt and capital-loss do not reach theirs."""
    public = load_prepared(prepared_from_mirror("adult"))
    reference = load_prepared(prepared_from_mirror("adult-refcode"))
    assert np.array_equal(public.train.y, reference.train.y) and np.array_equal(public.test.y, reference.test.y)
    x, x_reference = both(public, "x"), both(reference, "x")
    assert x_reference.min(axis=0).tolist() == [0] * 14 and x_reference.max(axis=0).tolist() == [1] * 14
    differ = {tabular.ADULT_FEATURES[j] for j in range(14) if not np.array_equal(x[:, j], x_reference[:, j])}
    assert differ == {"fnlwgt", "capital-loss"}
    assert reference.meta["domain"]["source"] == "reference_code"


def test_mirror_adult_dropna_has_the_papers_row_count(prepared_from_mirror: Callable[[str], Path]) -> None:
    prepared = load_prepared(prepared_from_mirror("adult-dropna"))
    assert len(both(prepared, "y")) == 45_222 and int(both(prepared, "y").sum()) == 11_208
    assert all("?" not in column.get("categories", []) for column in prepared.meta["columns"])


def test_adult_parser_skips_the_cross_validator_line_and_strips_label_dots(tmp_path: Path) -> None:
    def row(age: int, work: str, sex: str, label: str) -> str:
        middle = "77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White"
        return f"{age}, {work}, {middle}, {sex}, 0, 0, 40, United-States, {label}\n"

    (tmp_path / "adult.data").write_text(row(39, "State-gov", "Male", "<=50K") + row(50, "?", "Female", ">50K"))
    test_rows = row(25, "Private", "Male", ">50K.") + row(20, "Private", "Female", "<=50K.")
    (tmp_path / "adult.test").write_text("|1x3 Cross validator\n" + test_rows)
    frame = tabular.read_adult(tmp_path)
    assert frame["age"].tolist() == [39, 50, 25, 20] and frame["income"].tolist() == ["<=50K", ">50K", ">50K", "<=50K"]
    kept = tabular.build_adult(tmp_path, 0, drop_missing=False)
    dropped = tabular.build_adult(tmp_path, 0, drop_missing=True)
    assert len(both(kept, "y")) == 4 and int(both(kept, "y").sum()) == 2
    published = sorted(tabular.ADULT_PUBLISHED_CATEGORIES["workclass"])
    assert len(both(dropped, "y")) == 3 and dropped.meta["columns"][1]["categories"] == published
    assert kept.meta["columns"][1]["categories"] == ["?", *published], "'?' where the rows are kept"
    workclass = {round(float(v) * (len(published)), 6) for v in both(kept, "x")[:, 1]}
    assert workclass == {0.0, published.index("Private") + 1.0, published.index("State-gov") + 1.0}


def test_adult_refuses_a_category_outside_the_published_lists(tmp_path: Path) -> None:
    line = (
        "39, Space-force, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 0, 0, 40, "
        "United-States, <=50K\n"
    )
    (tmp_path / "adult.data").write_text(line * 3)
    (tmp_path / "adult.test").write_text(line.replace("<=50K", "<=50K."))
    with pytest.raises(DataError, match="column 'workclass' holds a value outside its published categories$"):
        tabular.build_adult(tmp_path, 0, drop_missing=False)
    assert tabular.build_adult(tmp_path, 0, drop_missing=False, scaling="reference-code").meta["columns"][1][
        "categories"
    ] == ["Space-force"], "the reference code adds whatever it finds"


def test_adult_rejects_unknown_labels(tmp_path: Path) -> None:
    line = (
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 0, 0, 40, "
        "United-States, maybe\n"
    )
    (tmp_path / "adult.data").write_text(line)
    (tmp_path / "adult.test").write_text(line)
    with pytest.raises(DataError, match="adult.data"):
        tabular.read_adult(tmp_path)


# ---- Kaggle Credit ---------------------------------------------------------------------------------


@pytest.fixture
def credit_raw(tmp_path: Path) -> Path:
    """creditcard.arff with 60 normal rows and 5 frauds; Amount = 10 * row position (identifies rows)."""
    rng = np.random.default_rng(0)
    n_rows = 65
    fraud_rows = [3, 17, 30, 44, 64]
    frame = pd.DataFrame({"Time": np.arange(n_rows, dtype=float)})
    for name in tabular.CREDIT_FEATURES[:-1]:
        frame[name] = rng.normal(size=n_rows).round(6)
    frame["Amount"] = 10.0 * np.arange(n_rows)
    frame["Class"] = ["1" if row in fraud_rows else "0" for row in range(n_rows)]
    write_arff(tmp_path / "creditcard.arff", frame, nominal={"Class": ["0", "1"]})
    return tmp_path


def test_credit_keeps_all_frauds_and_the_reference_sample_of_normals(credit_raw: Path) -> None:
    built = tabular.build_credit(credit_raw, seed=0, n_normal=20)
    columns = {column["name"]: column for column in built.meta["columns"]}
    assert list(columns) == list(tabular.CREDIT_FEATURES), "Time is dropped, V1..V28 + Amount kept"
    rows = np.rint(unscale(both(built, "x")[:, -1], columns["Amount"]) / 10).astype(int)
    fraud = {3, 17, 30, 44, 64}
    random.seed(0)  # the reference code: random.seed(0); random.sample(<normal row positions>, 10000)
    reference_normals = random.sample([row for row in range(65) if row not in fraud], 20)
    assert sorted(rows) == sorted(reference_normals + sorted(fraud))
    assert np.array_equal(both(built, "y"), np.isin(rows, list(fraud)).astype(np.int64))
    assert (columns["Amount"]["min"], columns["Amount"]["max"]) == (0, 32_768) and columns["V1"]["min"] == -128
    assert len(built.test) == 3 and built.meta["options"]["rows_time_sorted"] is True
    reference = tabular.build_credit(credit_raw, seed=0, n_normal=20, scaling="reference-code")
    x = both(reference, "x")
    assert np.array_equal(x.min(axis=0), np.zeros(29)) and np.array_equal(x.max(axis=0), np.ones(29))
    assert np.array_equal(both(reference, "y"), both(built, "y")), "the same rows in the same splits"


def test_credit_full_keeps_every_row_and_seed_changes_the_sample(credit_raw: Path) -> None:
    full = tabular.build_credit(credit_raw, seed=0, n_normal=None)
    assert len(both(full, "y")) == 65 and int(both(full, "y").sum()) == 5
    first, other = (tabular.build_credit(credit_raw, seed=seed, n_normal=20) for seed in (0, 1))
    amounts = [sorted(both(b, "x")[:, -1].tolist()) for b in (first, other)]
    assert amounts[0] != amounts[1]


def test_credit_errors(credit_raw: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="n_normal=61 exceeds the 60 normal rows"):
        tabular.build_credit(credit_raw, seed=0, n_normal=61)
    broken = tmp_path / "broken"
    broken.mkdir()
    partial_table = pd.DataFrame({"Time": [0.0], "V1": [1.0], "Class": ["0"]})
    write_arff(broken / "creditcard.arff", partial_table, nominal={"Class": ["0", "1"]})
    with pytest.raises(DataError, match="missing columns"):
        tabular.build_credit(broken, seed=0)
    (broken / "creditcard.arff").write_text("no header here\n1,2\n")
    with pytest.raises(DataError, match="not an ARFF file"):
        tabular.build_credit(broken, seed=0)


# ---- ISOLET ----------------------------------------------------------------------------------------


def isolet_text(features: np.ndarray, letters: list[int]) -> bytes:
    lines = (", ".join(f"{value:.4f}" for value in row) + f", {letter}.\n" for row, letter in zip(features, letters))
    return "".join(lines).encode()


def test_isolet_reads_z_files_keeps_features_and_labels_vowels(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    features = rng.uniform(-1, 1, (8, 617)).round(4)
    letters = [1, 2, 5, 9, 14, 15, 21, 26]  # a b e i n o u z
    (tmp_path / "isolet1+2+3+4.data.Z").write_bytes(unix_compress(isolet_text(features[:5], letters[:5])))
    (tmp_path / "isolet5.data.Z").write_bytes(unix_compress(isolet_text(features[5:], letters[5:])))
    built = tabular.build_isolet(tmp_path, seed=0)
    x, y = 2 * both(built, "x") - 1, both(built, "y")  # the publisher's [-1, 1] into [0, 1] and back
    vowels = (1, 5, 9, 15, 21)
    vowel_of = {tuple(row.round(4)): letter in vowels for row, letter in zip(features.astype(np.float32), letters)}
    assert x.shape == (8, 617) and sorted(map(tuple, x.round(4))) == sorted(vowel_of)
    assert [vowel_of[tuple(row.round(4))] for row in x] == y.astype(bool).tolist()
    assert int(y.sum()) == 5 and built.meta["label_names"] == ["consonant", "vowel"]
    assert {(c["min"], c["max"]) for c in built.meta["columns"]} == {(-1, 1)}


def test_isolet_rejects_wrong_width_and_undecodable_files(tmp_path: Path) -> None:
    (tmp_path / "isolet1+2+3+4.data.Z").write_bytes(unix_compress(b"0.1, 0.2, 1.\n"))
    (tmp_path / "isolet5.data.Z").write_bytes(unix_compress(b"0.1, 0.2, 1.\n"))
    with pytest.raises(DataError, match="expected 618 columns"):
        tabular.build_isolet(tmp_path, seed=0)
    (tmp_path / "isolet1+2+3+4.data.Z").write_bytes(b"\x1f\x9d\x90garbage")
    with pytest.raises(DataError, match="cannot decompress"):
        tabular.build_isolet(tmp_path, seed=0)


# ---- ESR -------------------------------------------------------------------------------------------


def test_esr_drops_id_scales_features_and_marks_seizures(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    classes = np.array([1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1])
    signals = rng.integers(-500, 500, (len(classes), 178))
    frame = pd.DataFrame(signals, columns=list(tabular.ESR_FEATURES))
    frame.insert(0, "", [f"X{i}.V1.{i * 7}" for i in range(len(classes))])
    frame["y"] = classes
    frame.to_csv(tmp_path / "data.csv", index=False)
    built = tabular.build_esr(tmp_path, seed=0)
    x, y = both(built, "x"), both(built, "y")
    assert x.shape == (11, 178) and int(y.sum()) == 3
    columns = built.meta["columns"]
    first = unscale(x[:, 0].astype(np.float64), columns[0])
    seizure_first = sorted(signals[classes == 1, 0])
    assert sorted(np.rint(first[y == 1]).astype(int)) == seizure_first
    assert {(c["min"], c["max"]) for c in columns} == {(-2048, 2047)}
    reference = both(tabular.build_esr(tmp_path, seed=0, scaling="reference-code"), "x")
    assert np.array_equal(reference.min(axis=0), np.zeros(178)) and np.array_equal(reference.max(axis=0), np.ones(178))


def test_esr_rejects_unexpected_columns(tmp_path: Path) -> None:
    pd.DataFrame({"id": ["a"], "X1": [1], "y": [1]}).to_csv(tmp_path / "data.csv", index=False)
    with pytest.raises(DataError, match="expected columns <id>, X1..X178, y"):
        tabular.build_esr(tmp_path, seed=0)


def test_scale_columns_maps_constant_columns_to_zero() -> None:
    x, columns = tabular.scale_columns(pd.DataFrame({"a": [2.0, 2.0], "b": ["z", "y"]}), categorical=("b",))
    assert np.array_equal(x, [[0.0, 1.0], [0.0, 0.0]]) and columns[1]["categories"] == ["y", "z"]
    assert columns[0] == {"name": "a", "kind": "continuous", "min": 2.0, "max": 2.0}
