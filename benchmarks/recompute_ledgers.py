"""Recompute every private run's ledger under a results directory with this checkout's code; compare bit for bit.

    python benchmarks/recompute_ledgers.py [results/paper] [--glob 'runs/*/*/eps*/seed*']

For each run with a `privacy.json` of a private run and its `train.json`: the method's `recompute_ledger`
reruns the noise calibration and the accounting from the run's spec and the data-dependent numbers the ledger
records (rates, steps, sizes), without training, and the JSON it would write must equal the file byte for byte
(`dpvae.runs.recomputed_ledger`). Use it after any change to the accounting code: a ledger that moves is a
changed privacy claim. Prints one line per run and a summary; exits 1 if any ledger differs.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from dpvae.runs import recomputed_ledger  # noqa: E402


def private_runs(results: Path, pattern: str) -> list[Path]:
    """Run directories under `results` with a private run's ledger and a train.json."""
    runs = sorted(p.parent for p in results.glob(f"{pattern}/privacy.json") if (p.parent / "train.json").is_file())
    return [run for run in runs if json.loads((run / "privacy.json").read_text()).get("epsilon") is not None]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="results/paper")
    parser.add_argument("--glob", default="runs/*/*/eps*/seed*")
    args = parser.parse_args()
    runs = private_runs(Path(args.results), args.glob)
    differ = 0
    for run in runs:
        written, again = recomputed_ledger(run)
        if written == again:
            print(f"{run}: identical")
            continue
        differ += 1
        diff = difflib.unified_diff(written.splitlines(), again.splitlines(), "written", "recomputed", lineterm="")
        print(f"{run}: DIFFERS\n" + "\n".join(diff))
    print(f"{len(runs)} private runs, {len(runs) - differ} identical, {differ} differ")
    return 1 if differ or not runs else 0


if __name__ == "__main__":
    sys.exit(main())
