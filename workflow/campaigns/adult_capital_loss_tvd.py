"""Study: how much of Table VIII's 2-way TVD on Adult's public domain is capital-loss's declared bound.

    python workflow/campaigns/adult_capital_loss_tvd.py --checkout DIR [--methods ryan privbayes dp-gm p3gm]
        [--seeds 0 1 2 3 4] [--out FILE]

Adult's declared public domain bounds capital-loss by [0, 99,999] (docs/p3gm.md, "Public domains of the papers'
datasets"); the data reach 4,356, so the column's encoded values span [0, 0.044] -- inside the first of the 20 bins
a marginal-based method (Ryan's, PrivBayes) draws on [0, 1], which decodes it to a value uniform over [0, 0.05].
`marginals_2way` bins every column on the real training data's [min, max] (5 edges, the notebook's rule), so those
decoded values spread over all four bins where nearly every real value sits in the first. Per method, over the
paper-scale runs of the checkout `--checkout` that built them (`results/paper/runs/adult/<method>/eps1/seed<k>`,
and its prepared `adult` under `data/`), `tvd2` with every column and without capital-loss: the
same runs, the same samples, one column left out. Writes CSV rows (method, columns, mean, sd, n and the runs'
commit) with the device, this checkout's commit and the command, for `python -m dpvae record --study`. Reads only
public data (the papers' Adult) and the runs' synthetic samples.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.data.store import load_prepared
from dpvae.devices import device_name
from dpvae.eval.marginals import data_matrix, tvd_2way
from dpvae.paths import prepared_dir, run_dir, run_id, samples_file, train_record
from dpvae.provenance import git_commit

COLUMN = "capital-loss"


def _runs(checkout: Path, method: str, seeds: list[int]) -> list[Path]:
    runs = [checkout / run_dir("paper", run_id("adult", method, "1", s)) for s in seeds]
    if missing := [str(r) for r in runs if not samples_file(r).is_file()]:
        sys.exit(f"adult_capital_loss_tvd: no samples in {', '.join(missing)}")
    return runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, required=True, help="the checkout that built the runs")
    parser.add_argument("--methods", nargs="+", default=["ryan", "privbayes", "dp-gm", "p3gm"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", type=Path, default=Path("adult_capital_loss_tvd.csv"))
    args = parser.parse_args(argv)
    prepared = load_prepared(args.checkout / prepared_dir("data", "adult"))
    names = [c["name"] for c in prepared.meta["columns"]]
    real = data_matrix(prepared.train.x, prepared.train.y, 2, "onehot")
    keep = [j for j in range(real.shape[1]) if j != names.index(COLUMN)]
    rows = []
    for method in args.methods:
        values: dict[str, list[float]] = {"all": [], f"without {COLUMN}": []}
        commits = set()
        for run in _runs(args.checkout, method, args.seeds):
            samples = np.load(samples_file(run))
            synthetic = data_matrix(samples["x"], samples["y"], 2, "onehot")
            values["all"].append(tvd_2way(real, synthetic, 5, "clipped"))
            values[f"without {COLUMN}"].append(tvd_2way(real[:, keep], synthetic[:, keep], 5, "clipped"))
            commits.add(json.loads(train_record(run).read_text()).get("commit", "unknown"))
        for columns, v in values.items():
            rows.append(
                {
                    "dataset": "adult",
                    "method": method,
                    "columns": columns,
                    "tvd2": float(np.mean(v)),
                    "sd": float(np.std(v, ddof=1)) if len(v) > 1 else float("nan"),
                    "n": len(v),
                    "runs_commit": " ".join(sorted(commits)),
                }
            )
            print(f"{method:10s} {columns:24s} tvd2 {np.mean(v):.4f} +- {rows[-1]['sd']:.4f} (n={len(v)})")
    frame = pd.DataFrame(rows).assign(
        device=device_name("cpu"),
        commit=git_commit(),
        command=shlex.join(["python", "workflow/campaigns/adult_capital_loss_tvd.py", *(argv or sys.argv[1:])]),
        date=datetime.now(UTC).strftime("%Y-%m-%d"),
    )
    frame.to_csv(args.out, index=False, float_format="%.6g")


if __name__ == "__main__":
    main()
