"""Audit every run's privacy ledger under a results directory: epsilon <= target, re-derived with dp-accounting.

    python benchmarks/check_ledgers.py [results/paper] [--glob 'runs/*/*/eps*/seed*']

For each `privacy.json` of a private run: the headline epsilon must not exceed the run's `target_epsilon`, and
each accounting it holds ("paper", "sound") is recomputed from its mechanisms with Google's dp-accounting
(`tests/support/dp_accounting_check.rederive`, the same independent check the unit tests use). Prints one
line per run and a summary; exits 1 if any run fails either check.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from dpvae.paths import LEDGER, results_dir  # noqa: E402
from support.dp_accounting_check import rederive  # noqa: E402

TOLERANCE = 1e-6  # relative: the two RDP implementations agree to floating-point accuracy


def check(path: Path) -> tuple[bool, str]:
    ledger = json.loads(path.read_text())
    run = path.parent
    target = ledger.get("target_epsilon")
    eps = ledger.get("epsilon")
    if eps is None or (isinstance(eps, float) and math.isinf(eps)):
        return True, f"{run}: non-private"
    problems, parts = [], [f"eps={eps:.4f} target={target}"]
    if target is not None and eps > target * (1 + 1e-9):
        problems.append(f"epsilon {eps:.6f} > target {target}")
    for name in ("paper", "sound"):
        record = ledger.get(name)
        if not record:
            continue
        try:
            again = rederive(record)
        except NotImplementedError as exc:
            parts.append(f"{name}: not re-derivable ({exc})")
            continue
        ok = abs(again - record["epsilon"]) <= TOLERANCE * max(1.0, abs(record["epsilon"]))
        parts.append(f"{name} {record['epsilon']:.4f} vs dp-accounting {again:.4f}")
        if not ok:
            problems.append(f"{name}: recorded {record['epsilon']:.6f}, dp-accounting {again:.6f}")
    if ledger.get("not_dp"):
        parts.append(f"not DP: {ledger['not_dp']}")
    return not problems, f"{run}: {'; '.join(parts)}" + (f"  FAIL {'; '.join(problems)}" if problems else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default=results_dir("paper"))
    parser.add_argument("--glob", default="runs/*/*/eps*/seed*")
    args = parser.parse_args()
    paths = sorted(Path(args.results).glob(f"{args.glob}/{LEDGER}"))
    failed = 0
    for path in paths:
        ok, line = check(path)
        failed += not ok
        print(("ok   " if ok else "FAIL ") + line)
    print(f"{len(paths)} ledgers, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
