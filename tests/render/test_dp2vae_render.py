"""DP²-VAE's renderers on fabricated run results (no training): every item builds, our numbers stand beside
the paper's, cited rows and panels are marked, DPImageBench is a labelled second reference, the CelebA
stand-in says so, and recorded paper-scale cells appear in smoke-scale items."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpvae import stages
from dpvae.analyses import TIDY_COLUMNS
from dpvae.items import ITEMS
from dpvae.runs import split_variant
from dpvae.workflow import Rules

DP2VAE_ITEMS = [key.split("/")[1] for key in ITEMS if key.startswith("dp2vae/")]
RUN = "results/smoke/runs/{dataset}/{variant}/eps{eps}/seed0"


def _rows(experiment: str, dataset: str, variant: str, method: str, eps: float | None, sweep) -> list[dict]:
    rng = np.random.default_rng(abs(hash((experiment, dataset, variant))) % 2**32)
    base = {
        "experiment": experiment,
        "dataset": dataset,
        "variant": variant,
        "method": method,
        "epsilon": eps,
        "seed": 0,
        "sweep": sweep,
        "point": variant.split("=", 1)[1] if sweep else None,
    }
    rows = [
        {**base, "metric": "fid", "value": float(rng.uniform(50, 300))},
        {**base, "metric": "fid_n_samples", "value": 8.0},
        {**base, "metric": "fid_reference_n", "value": 16.0},
        {**base, "metric": "sample_grid_shown", "value": 16.0},
    ]
    rows += [
        {**base, "metric": "accuracy", "classifier": c, "value": float(rng.uniform(0.1, 0.9))}
        for c in ("lr", "mlp", "cnn")
    ]
    if eps is not None:
        rows += [
            {**base, "metric": "epsilon_spent", "value": eps * 0.999},
            {**base, "metric": "epsilon_spent_sound", "value": eps * 1000.0},
        ]
    if method == "gs-wgan":
        rows.append({**base, "metric": "epsilon_authors", "value": eps * 0.99})
    return rows


@pytest.fixture(scope="module")
def built(smoke_config, tmp_path_factory):
    """A fake smoke build: tidy tables and sample grids where the plan says they go."""
    root = tmp_path_factory.mktemp("render")
    plan = Rules(smoke_config, root)
    specs = {}
    for item_id in DP2VAE_ITEMS:
        spec = plan.item_spec("dp2vae", item_id).to_json()
        for experiment, paths in spec["tables"].items():
            exp = smoke_config["experiments"][experiment]
            for path in paths:
                if "analysis" in exp:
                    continue
                dataset = Path(path).stem
                rows = []
                for run in plan.runs(experiment, dataset):
                    base = split_variant(run.variant)[0]
                    method = smoke_config["variants"][base]["method"]
                    eps = None if run.eps == "inf" else float(run.eps)
                    rows += _rows(experiment, dataset, run.variant, method, eps, (exp.get("sweep") or {}).get("name"))
                table = pd.DataFrame(rows).reindex(columns=TIDY_COLUMNS)
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                table.to_csv(root / path, index=False)
        for artifact in spec["artifacts"]:
            out = root / artifact
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps({"metric": "sample_grid", "rows": []}))
            shape = (3, 32, 32) if "celeba" in artifact else (1, 28, 28)
            np.savez(
                out.parent / "sample_grid.npz",
                x=np.random.default_rng(0).random((16, *shape), dtype=np.float32),
                y=np.repeat(np.arange(4), 4),
                rows=4,
                cols=4,
            )
        spec_path = root / f"{item_id}.json"
        spec_path.write_text(json.dumps(spec))
        specs[item_id] = spec_path
    return root, specs


@pytest.mark.parametrize("item_id", DP2VAE_ITEMS)
def test_every_dp2vae_item_renders(item_id, built, monkeypatch):
    root, specs = built
    monkeypatch.chdir(root)
    stages.render(specs[item_id])
    item = ITEMS[f"dp2vae/{item_id}"]
    for ext in item.outputs:
        assert (root / "figures" / "dp2vae" / f"{item_id}.{ext}").stat().st_size > 0


def test_table1_sets_ours_beside_the_paper_cited_and_dpimagebench(built, monkeypatch):
    root, specs = built
    monkeypatch.chdir(root)
    stages.render(specs["table1"])
    table = pd.read_csv(root / "figures" / "dp2vae" / "table1.csv")
    sources = table.groupby("method")["source"].apply(set)
    assert any(s.startswith("ours") for s in sources["Ours (DP2-VAE)"]) and "paper" in sources["Ours (DP2-VAE)"]
    assert any("DPImageBench" in s for s in sources["DP-MERF"]) and any("DPImageBench" in s for s in sources["GS-WGAN"])
    assert all(s.startswith("paper, cited from") for s in sources["DP-CGAN"])
    bench = table[(table["method"] == "DP-MERF") & table["source"].str.contains("DPImageBench")]
    assert bench["MNIST CNN %"].iloc[0] == pytest.approx(81.3) and bench["MNIST FID"].iloc[0] == pytest.approx(106.3)
    paper = table[(table["method"] == "Ours (DP2-VAE)") & (table["source"] == "paper")]
    assert paper["MNIST FID"].iloc[0] == pytest.approx(67.6) and paper["MNIST CNN %"].iloc[0] == pytest.approx(90.2)


def test_table2_marks_the_celeba_stand_in(built, monkeypatch):
    root, specs = built
    monkeypatch.chdir(root)
    stages.render(specs["table2"])
    table = pd.read_csv(root / "figures" / "dp2vae" / "table2.csv")
    assert table["dataset"].str.contains("stand-in").any()
    assert "DataLens (paper, cited)" in table.columns and "Ours (DP2-VAE) (paper)" in table.columns


def test_fid_size_notes_state_the_real_images_fid_at_both_sizes(tmp_path):
    """The study's TF1 rows of the datasets shown, none without the study or for a dataset it did not measure."""
    from dpvae.render.dp2vae.shared import fid_size_notes

    study = tmp_path / "dp2vae_real_fid.csv"
    assert fid_size_notes(["mnist"], study) == []
    rows = [
        ("tf1", "train[:60000]", 1.02, 0.0, 1),
        ("tf1", "6 blocks of 10000 train", 2.10, 0.05, 6),
        ("tf1", "train[:10000]", 2.04, 0.0, 1),
        ("bilinear", "train[:60000]", 9.99, 0.0, 1),
    ]
    pd.DataFrame(
        [{"resize": r, "generated": g, "fid": f, "sd": s, "blocks": b, "dataset": "mnist", "device": "cpu"}
         for r, g, f, s, b in rows]
    ).to_csv(study, index=False)  # fmt: skip
    (note,) = fid_size_notes(["mnist", "fashion-mnist"], study)
    assert "all 60,000 training images 1.02, the first 10,000 2.04, 6 blocks of 10,000 2.10 +- 0.05" in note
    assert "reads 1.02 higher" in note and "9.99" not in note and "MNIST" in note
    assert fid_size_notes(["fashion-mnist"], study) == []


def test_recorded_rows_state_their_protocol_one_line_per_protocol():
    """Rows recorded under two protocols (a cut one for DP2-VAE, the paper's for Real data and DP-MERF) give two
    lines, each naming its methods and its own sample counts."""
    from types import SimpleNamespace

    from dpvae.config import Config
    from dpvae.render.dp2vae.shared import recorded_protocol_notes

    def cells(method: str, fid_n: int, n_train: int, repeats: int, epochs: int, patience: int) -> list[dict]:
        values = {
            "fid_n_samples": fid_n,
            "fid_reference_n": 10000,
            "classifier_n_train": n_train,
            "classifier_repeats": repeats,
            "classifier_max_epochs": epochs,
            "classifier_patience": patience,
            "fid": 50.0,
        }
        return [{"method": method, "metric": metric, "mean": value, "not_dp": ""} for metric, value in values.items()]

    recorded = pd.DataFrame(
        cells("real", 10000, 60000, 5, 300, 10) + cells("dp-merf", 10000, 60000, 5, 300, 10)
        + cells("dp2vae", 1000, 10000, 1, 5, 2)
    )  # fmt: skip
    paper, cut = recorded_protocol_notes(SimpleNamespace(recorded=lambda: recorded, config=Config(scale="smoke")))
    assert paper.startswith("Recorded rows of Real data, DP-MERF: FID of 10,000 generated images against 10,000")
    assert "MLP and CNN 5 training(s) each (<= 300 epochs, patience 10) on 60,000 synthetic images" in paper
    assert cut.startswith("Recorded rows of Ours (DP2-VAE): FID of 1,000") and "(<= 5 epochs, patience 2)" in cut
    assert recorded_protocol_notes(SimpleNamespace(recorded=pd.DataFrame, config=Config(scale="smoke"))) == []
