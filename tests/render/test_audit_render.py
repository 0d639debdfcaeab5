"""The audit item's renderer: one row per audited run (engines and methods), the figure and its tidy CSV."""

from __future__ import annotations

import pandas as pd

from dpvae.analyses.tidy import tidy
from dpvae.items import get_item
from dpvae.render.audit import audit_dpsgd, audit_points
from dpvae.render.base import RenderContext


def rows(experiment: str, dataset: str, variant: str, method: str, claimed: float, lower: float) -> list[dict]:
    base = {"experiment": experiment, "dataset": dataset, "variant": variant, "method": method, "epsilon": 1, "seed": 0}
    values = {
        "eps_lower": lower,
        "eps_point": lower + 0.1,
        "eps_max_certifiable": 4.6,
        "eps_claimed": claimed,
        "canaries": 1000,
        "audit_seconds": 1.0,
        "not_an_audit_metric": 7.0,
    }
    return [{**base, "metric": m, "value": v} for m, v in values.items()]


def test_the_figure_and_its_tidy_csv(tmp_path) -> None:
    tables = {
        "audit_engines": tidy(rows("audit_engines", None, "engine:micro", "micro", 1.0, 0.0)),
        "audit_methods": tidy(
            rows("audit_methods", "adult", "p3gm", "p3gm", 1.0, 0.2)
            + rows("audit_methods", "mnist", "dp-merf", "dp-merf", 0.8, 0.0)
        ),
    }
    audit_rows, wide = audit_points(tables)
    assert set(wide["label"]) == {"micro aggregation", "p3gm (adult)", "dp-merf (mnist)"}
    assert "not_an_audit_metric" not in set(audit_rows["metric"])
    prefix = tmp_path / "dpsgd"
    audit_dpsgd(
        RenderContext(
            get_item("audit/dpsgd"),
            str(prefix),
            tables,
            [],
            {
                "experiments": {"audit_methods": {"params": {"exclude": ["ryan"]}}},
                "delta": 1e-5,
                "scale": "smoke",
                "variants": {},
            },
        )
    )
    assert (tmp_path / "dpsgd.pdf").is_file() and (tmp_path / "dpsgd.png").is_file()
    written = pd.read_csv(tmp_path / "dpsgd.csv")
    assert len(written) == len(audit_rows) and set(written["variant"]) == {"engine:micro", "p3gm", "dp-merf"}
