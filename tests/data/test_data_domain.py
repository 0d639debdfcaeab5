"""A declared dataset's public domain (`dpvae.data.domain`): nothing of a private record shapes it.

D is a small table; D' adds one record with an extreme value, a new category and a rare label (or routes that
record to the test split). The prepared domain, category sets and label names must be the same for D and D'
(for domain: estimate: bounds on the fixed grid, never the record's value), the split comes before any
fitting, and the estimate's histograms have the sensitivity its ledger record claims.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpvae.data import declared, domain
from dpvae.data.store import holdout_rows

EXTREME = {"age": 45, "income": 7_777_777.7, "colour": "purple", "y": "HIV+"}
COLUMNS = {
    "age": {"bounds": [0, 120]},
    "income": {"bounds": [0, 200_000]},
    "colour": {"categories": ["red", "green", "blue", "other"], "other": "other"},
}


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "income": rng.uniform(12_000, 81_000, n).round(1),
            "colour": rng.choice(["red", "green", "blue"], n),
            "y": rng.choice(["yes", "no"], n),
        }
    )


def _prepare(tmp_path, name: str, frame: pd.DataFrame, test: pd.DataFrame | None = None, **options):
    folder = tmp_path / name
    folder.mkdir()
    frame.to_csv(folder / "data.csv", index=False)
    entry = {"path": str(folder / "data.csv"), "label": "y", **options}
    if test is not None:
        test.to_csv(folder / "test.csv", index=False)
        entry["test_path"] = str(folder / "test.csv")
    assert declared.problems("mine", entry) == []
    entry = {**entry, "identity": declared.identity(entry)}
    declared.copy_in("mine", declared.declaration(entry), folder)
    return declared.build(folder / "raw" / "mine", 0, entry=entry)


def _released_domain(prepared) -> tuple:
    """What of the preparation reaches a release: the domain, the columns' descriptions, the label names."""
    meta = prepared.meta
    return meta["domain"], meta["columns"], meta["label_names"]


def _with_extreme(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([frame, pd.DataFrame([EXTREME])], ignore_index=True)


@pytest.mark.parametrize("labels", [{"positive": "yes"}, {"labels": ["no", "yes", "HIV+"]}])
def test_a_declared_domain_is_the_same_with_or_without_an_extreme_record(tmp_path, labels):
    d = _prepare(tmp_path, "d", _table(200), columns=COLUMNS, **labels)
    d2 = _prepare(tmp_path, "d2", _with_extreme(_table(200)), columns=COLUMNS, **labels)
    assert _released_domain(d) == _released_domain(d2)
    assert "purple" not in str(d2.meta) and "9999999" not in str(d2.meta)
    for prepared in (d, d2):
        assert prepared.train.x.min() >= 0 and prepared.train.x.max() <= 1
    names = d2.meta["label_names"]
    assert names == (["not yes", "yes"] if "positive" in labels else ["no", "yes", "HIV+"])


def test_the_extreme_record_is_clipped_and_its_category_mapped_to_other(tmp_path):
    frame = _with_extreme(_table(50))
    prepared = _prepare(tmp_path, "d", frame, frame.iloc[:5], columns=COLUMNS, positive="yes")
    income, colour = prepared.train.x[-1, 1], prepared.train.x[-1, 2]
    assert income == 1.0  # 9,999,999 clipped to the declared 200,000
    assert colour == 1.0  # 'purple' -> 'other', the last of four categories


def test_an_undeclared_category_or_label_maps_never_stops_and_is_never_named(tmp_path, capsys):
    """Issue 62: whether a run happens, and what it prints, never depends on one record. An unseen category maps to
    the column's catch-all (a declaration without `other`: its first category, none added), an undeclared label
    to the first declared label; the domain is the same with or without the record; no message names the value."""
    columns = {**COLUMNS, "colour": {"categories": ["red", "green", "blue"]}}
    plain = _prepare(tmp_path, "a0", _table(50), columns=columns, positive="yes")
    extreme = _prepare(tmp_path, "a", _with_extreme(_table(50)), columns=columns, positive="yes")
    assert plain.meta["domain"] == extreme.meta["domain"]
    assert [c["categories"] for c in extreme.meta["columns"] if c["name"] == "colour"] == [["red", "green", "blue"]]
    whole = _prepare(tmp_path, "w", _with_extreme(_table(50)), _table(5), columns=columns, positive="yes")
    assert whole.train.x[-1, 2] == 0.0  # 'purple' -> 'red', the first category (all rows train: a test file)
    labelled = _prepare(tmp_path, "b", _with_extreme(_table(50)), columns=COLUMNS, labels=["no", "yes"])
    assert labelled.meta["label_names"] == ["no", "yes"]
    both = np.concatenate([labelled.train.y, labelled.test.y])
    assert set(both) <= {0, 1} and len(both) == 51
    _prepare(tmp_path, "c", _with_extreme(_table(50)), columns=COLUMNS, labels=["no", "yes"], positive="yes")
    named = _prepare(tmp_path, "d", _table(50), columns=COLUMNS, labels=["no", "yes"], positive="yes")
    assert named.meta["label_names"] == ["no", "yes"]
    shown = capsys.readouterr()
    assert "purple" not in shown.out + shown.err and "HIV+" not in shown.out + shown.err


def test_the_domain_and_the_labels_must_be_declared(tmp_path):
    _table(20).to_csv(tmp_path / "t.csv", index=False)
    found = declared.problems("mine", {"path": str(tmp_path / "t.csv"), "label": "y"})
    assert any("datasets.mine.columns.age': declare its bounds" in p for p in found)
    assert any("datasets.mine.labels': declare the label set" in p for p in found)
    estimate = declared.problems(
        "mine", {"path": str(tmp_path / "t.csv"), "label": "y", "domain": "estimate", "positive": "yes"}
    )
    assert estimate == [
        "config key 'datasets.mine.domain_epsilon': domain: estimate needs the ε it spends (> 0), got None",
        "config key 'datasets.mine.columns.colour': not numbers: declare its categories (domain: estimate "
        "estimates bounds only)",
    ]


@pytest.mark.parametrize("mode", ["from_data", "estimate"])
def test_a_record_in_the_test_split_never_shapes_the_domain(tmp_path, mode):
    options = {"domain": mode, "positive": "yes"}
    if mode == "estimate":
        options |= {"domain_epsilon": 1.0, "columns": {"colour": COLUMNS["colour"]}}
    train, test = _table(3000, 1), _table(100, 2)
    extreme = _with_extreme(test) if mode == "estimate" else _with_extreme(test).replace("purple", "red")
    d = _prepare(tmp_path, "d", train, test, **options)
    d2 = _prepare(tmp_path, "d2", train, extreme, **options)  # from_data: an unseen test category is refused
    assert _released_domain(d) == _released_domain(d2)
    assert len(d2.test.y) == 101


def test_from_data_reads_the_training_split_only_and_is_marked_not_dp(tmp_path):
    frame = _with_extreme(_table(300))
    prepared = _prepare(tmp_path, "d", frame, test_fraction=0.5, domain="from_data", positive="yes")
    fitted = domain.Domain.from_dict(prepared.meta["domain"])
    assert fitted.not_dp == domain.NOT_DP_FROM_DATA
    income = next(c for c in fitted.columns if c.name == "income")
    train_rows, _, _ = holdout_rows(len(frame), seed=0, test_fraction=0.5)
    assert income.bounds == (frame.income.iloc[train_rows].min(), frame.income.iloc[train_rows].max())


def test_an_estimate_lies_on_the_fixed_grid_and_ignores_one_record(tmp_path):
    options = {"domain": "estimate", "domain_epsilon": 1.0, "columns": {"colour": COLUMNS["colour"]}}
    d = _prepare(tmp_path, "d", _table(3000), positive="yes", **options)
    d2 = _prepare(tmp_path, "d2", _with_extreme(_table(3000)), positive="yes", **options)
    edges = set(domain.grid().tolist())
    for prepared in (d, d2):
        age, income = (c["bounds"] for c in prepared.meta["domain"]["columns"][:2])
        assert set(age) <= edges and set(income) <= edges  # never a record's value
        assert age[0] <= 18 and age[1] >= 89 and income[0] <= 12_000 and income[1] >= 81_000
    assert _released_domain(d) == _released_domain(d2)  # one record is far below the threshold
    estimate = d.meta["domain"]["estimate"]
    assert (estimate["epsilon"], list(estimate["columns"])) == (1.0, ["age", "income"])
    assert estimate["threshold"] == pytest.approx(2 * np.log((len(domain.grid()) - 1) / 0.1))  # scale 2 / 1.0


@pytest.mark.parametrize("adjacency", ["add/remove-one", "replace-one"])
def test_the_estimate_histograms_have_the_sensitivity_of_its_ledger_record(adjacency):
    rng = np.random.default_rng(3)
    estimate = domain.Estimate(1.0, ("a", "b", "c"), threshold=1.0)
    for _ in range(200):
        x = rng.standard_cauchy((50, 3)) * 10.0 ** rng.integers(-8, 20)
        if adjacency == "add/remove-one":
            x2 = np.vstack([x, rng.standard_cauchy((1, 3)) * 1e12])
        else:
            x2 = x.copy()
            x2[rng.integers(50)] = rng.standard_cauchy(3) * 1e12
        moved = sum(np.abs(domain.histogram(x[:, j]) - domain.histogram(x2[:, j])).sum() for j in range(3))
        assert moved <= estimate.sensitivity(adjacency)


def test_a_header_only_table_is_one_line(tmp_path):
    (tmp_path / "t.csv").write_text("age,y\n")
    found = declared.problems("mine", {"path": str(tmp_path / "t.csv"), "label": "y", "domain": "from_data"})
    assert found == [f"config key 'datasets.mine.path': {tmp_path / 't.csv'} holds too few records: 0 for training "
                     "and 0 for testing, where a release needs at least 2 for training (2 per declared label) and "
                     "1 for testing"]  # fmt: skip


@pytest.mark.parametrize(
    ("shape", "layout", "expected"),
    [((8, 16, 16, 3), None, (3, 16, 16)), ((8, 3, 16, 16), None, (3, 16, 16)), ((8, 3, 8, 3), "NHWC", (3, 3, 8))],
)
def test_image_layouts_are_read_right(tmp_path, shape, layout, expected):
    x = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    np.savez(tmp_path / "i.npz", x=x, y=np.arange(8) % 2)  # 4 training images: 2 per label (`MIN_PER_LABEL`)
    entry = {"path": str(tmp_path / "i.npz"), "labels": 2, "test_fraction": 0.5}
    entry |= {"layout": layout} if layout else {}
    assert declared.problems("mine", entry) == []
    assert declared.facts(entry).record_shape == expected
    entry["identity"] = declared.identity(entry)
    declared.copy_in("mine", declared.declaration(entry), tmp_path)
    prepared = declared.build(tmp_path / "raw" / "mine", 0, entry=entry)
    assert prepared.train.x.shape[1:] == expected
    train_rows, _, _ = holdout_rows(8, seed=0, test_fraction=0.5)
    chw = x if layout is None and shape[1] == 3 else x.transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(prepared.train.x, chw[train_rows].astype(np.float32) / 255)


def test_an_ambiguous_image_layout_is_refused_naming_it(tmp_path):
    np.savez(tmp_path / "i.npz", x=np.zeros((4, 3, 8, 3), np.uint8), y=np.arange(4) % 2)
    found = declared.problems("mine", {"path": str(tmp_path / "i.npz"), "labels": 2})
    assert len(found) == 1 and "[4, 3, 8, 3]" in found[0] and "declare layout: NCHW or NHWC" in found[0]


def test_a_declared_public_domain_encodes_as_the_built_in_one(tmp_path):
    """Issue 64 (Build 6): Adult's published domain declared in a file (as `dpvae synth --declare` takes it) encodes
    the rows as the built-in `adult` preparer does: no category is added, so every declared category keeps its code
    k / (K - 1) (an appended, empty `other` squeezed them, e.g. sex to {0, 0.5}, and came back in releases)."""
    from dpvae.data import tabular

    public = tabular.adult_domain(keep_unknown=True)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            c.name: rng.choice(c.categories, 40) if c.categories else rng.uniform(*c.bounds, 40).round()
            for c in public.columns
        }
    )
    frame["income"] = rng.choice(public.labels, 40)
    columns = {c.name: c.declared() for c in public.columns}
    prepared = _prepare(tmp_path, "adult", frame, label="income", columns=columns, labels=list(public.labels))
    rows = np.concatenate([prepared.train.x, prepared.test.x])
    order = np.concatenate(holdout_rows(40, seed=0)[:2])
    np.testing.assert_array_equal(rows, domain.encode_table(public, frame.iloc[order], "adult"))


def test_adults_numeric_columns_come_back_as_whole_numbers(tmp_path):
    """Issue 64: Adult's six numeric fields hold whole numbers (the CPS's integer fields), declared so in its public
    domain: a `synth` release writes them as integers within their bounds (it wrote age 79.77644)."""
    from dpvae import synth
    from dpvae.data import tabular

    public = tabular.adult_domain(keep_unknown=True)
    meta = {"columns": [c.described() for c in public.columns], "label_names": list(public.labels)}
    x = np.random.default_rng(0).uniform(size=(20, len(public.columns)))
    synth._write_samples({"x": x, "y": np.arange(20) % 2}, meta, tmp_path / "x.csv")
    frame = pd.read_csv(tmp_path / "x.csv")
    numeric = {c.name: c.bounds for c in public.columns if c.bounds}
    assert len(numeric) == 6
    for name, (lo, hi) in numeric.items():
        assert frame[name].dtype == np.int64 and frame[name].between(lo, hi).all(), name
