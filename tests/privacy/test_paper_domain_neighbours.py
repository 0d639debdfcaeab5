"""The papers' tables: one record never shapes how any other record is prepared, wherever it is split to.

D is a small Adult-like file; D' adds one record with an extreme value (fnlwgt, capital-loss near their
declared bounds) or a published category no record of D has. Under the public domain (the default) every
record of D is encoded to the same bytes in D' and the domain recorded for the runs is the same, whether the
extra record lands in the training or the test split. The same check run on the reference code's
preprocessing (the -refcode ids: whole-set min-max, categories as found) must see the difference, and a run
on it gets a ledger marked not DP.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpvae.data import tabular
from dpvae.data.store import holdout_rows, write_prepared
from dpvae.methods.marginals.accounting import privbayes_ledger
from dpvae.paths import prepared_dir
from dpvae.runs import domain_budget, released_ledger
from dpvae.runspec import RunSpec

N = 40
EXTRA = {
    "extreme value": {"fnlwgt": 1_950_000, "capital-loss": 99_000, "native-country": "United-States"},
    "unseen category": {"fnlwgt": 200_000, "capital-loss": 0, "native-country": "Holand-Netherlands"},
}


def _row(rng: np.random.Generator, **fixed: object) -> dict:
    row = {
        "age": int(rng.integers(20, 60)),
        "workclass": rng.choice(["Private", "State-gov", "?"]),
        "fnlwgt": int(rng.integers(50_000, 400_000)),
        "education": rng.choice(["Bachelors", "HS-grad"]),
        "education-num": int(rng.integers(9, 14)),
        "marital-status": rng.choice(["Divorced", "Never-married"]),
        "occupation": rng.choice(["Sales", "Tech-support"]),
        "relationship": rng.choice(["Husband", "Unmarried"]),
        "race": rng.choice(["White", "Black"]),
        "sex": rng.choice(["Female", "Male"]),
        "capital-gain": int(rng.choice([0, 5_000])),
        "capital-loss": int(rng.choice([0, 1_500, 2_000])),
        "hours-per-week": int(rng.integers(20, 60)),
        "native-country": rng.choice(["United-States", "Mexico", "India"]),
        "income": rng.choice(["<=50K", ">50K"]),
    }
    return row | fixed


def _write(folder: Path, rows: list[dict]) -> Path:
    """adult.data with every row but the last of D; adult.test with D's last row, then the extra one (if any)."""
    folder.mkdir()
    lines = [", ".join(str(row[name]) for name in (*tabular.ADULT_FEATURES, "income")) for row in rows]
    (folder / "adult.data").write_text("".join(line + "\n" for line in lines[: N - 1]))
    (folder / "adult.test").write_text("|1x3 Cross validator\n" + "".join(line + ".\n" for line in lines[N - 1 :]))
    return folder


def _seed(extra_in: str) -> int:
    """The first split seed that sends record N (the extra one) of N + 1 records to `extra_in`."""
    return next(s for s in range(100) if (N in holdout_rows(N + 1, seed=s)[1]) == (extra_in == "test"))


def _encodings(folder: Path, seed: int, scaling: str) -> tuple[dict[int, tuple[str, bytes]], dict, list]:
    """{record index: (its split, the bytes of its encoded features)}, the recorded domain and column schema."""
    built = tabular.build_adult(folder, seed, drop_missing=False, scaling=scaling)
    train_rows, test_rows, _ = holdout_rows(len(built.train) + len(built.test), seed=seed)
    found = {int(r): ("train", built.train.x[i].tobytes()) for i, r in enumerate(train_rows)}
    found |= {int(r): ("test", built.test.x[i].tobytes()) for i, r in enumerate(test_rows)}
    return found, built.meta["domain"], built.meta["columns"]


def _others_unchanged(tmp_path: Path, scaling: str, extra: str, extra_in: str) -> bool:
    """Whether every record of D is prepared as without the extra record, and the domain is the same."""
    rng = np.random.default_rng(7)
    rows = [_row(rng) for _ in range(N)]
    seed = _seed(extra_in)
    d = _encodings(_write(tmp_path / "d", rows), seed, scaling)
    d2 = _encodings(_write(tmp_path / "d2", [*rows, _row(rng, **EXTRA[extra])]), seed, scaling)
    assert d2[0][N][0] == extra_in
    same_records = all(d[0][r][1] == d2[0][r][1] for r in range(N))
    return same_records and d[1:] == d2[1:]


@pytest.mark.parametrize("extra_in", ["train", "test"])
@pytest.mark.parametrize("extra", sorted(EXTRA))
def test_one_record_never_shapes_another_records_encoding(tmp_path: Path, extra: str, extra_in: str) -> None:
    assert _others_unchanged(tmp_path, "public", extra, extra_in)


@pytest.mark.parametrize("extra_in", ["train", "test"])
@pytest.mark.parametrize("extra", sorted(EXTRA))
def test_the_check_sees_the_reference_codes_whole_set_scaling(tmp_path: Path, extra: str, extra_in: str) -> None:
    """The planted bug: min-max and categories over the whole set, as P3GM's code (the -refcode ids)."""
    assert not _others_unchanged(tmp_path, "reference-code", extra, extra_in)


@pytest.mark.parametrize(("dataset", "not_dp"), [("adult", False), ("adult-refcode", True)])
def test_a_run_on_the_reference_codes_preprocessing_has_a_not_dp_ledger(
    tmp_path: Path, dataset: str, not_dp: bool
) -> None:
    rng = np.random.default_rng(3)
    raw = _write(tmp_path / "raw", [_row(rng) for _ in range(N)])
    scaling = "reference-code" if dataset.endswith("-refcode") else "public"
    built = tabular.build_adult(raw, 0, drop_missing=False, scaling=scaling)
    root = tmp_path / "root"
    write_prepared(prepared_dir(root, dataset), built.train, built.test, built.meta)
    spec = RunSpec.standalone(
        f"{dataset}/privbayes/eps1/seed0",
        root / "run",
        dataset=dataset,
        method="privbayes",
        epsilon=1.0,
        data_root=root,
    )
    budgeted, fitted = domain_budget(spec)
    assert budgeted == spec, "a declared domain costs no budget"
    ledger = released_ledger(privbayes_ledger(15, 2, 1.0, 1e-5, public_domain=True)[0], fitted, spec)
    if not_dp:
        assert ledger.sound is None and "P3GM's reference code's preprocessing" in ledger.not_dp
        assert "test split" in ledger.not_dp
    else:
        assert ledger.not_dp is None and ledger.sound is not None
