"""Wall time of a `dpvae synth` release of a small declared table per private table method, at its defaults.

    python benchmarks/small_data_synth.py [--device cpu] [--rows 200] [--epsilon 1] [--methods p3gm mst ...]

Writes a table of `--rows` records (3 label classes, one categorical column, four numeric columns; fixed seed, a
class-dependent shift so that there is something to learn) and its declaration into `--work`, then runs
`python -m dpvae synth --method <m> --data table.csv --declare table.yaml --epsilon E --out ...` once per method
in its own process, as a user would: the method's defaults, the default sound headline, the quality report, secret
noise. `--params m:k=v` adds a parameter for one method (e.g. `p3gm:pretrain_steps=3000`, the default before it
scaled with N); `--threads T` sets OMP_NUM_THREADS for the releases (default: unset, torch's
own choice, one thread per core). One tab-separated line per method on stdout: method, seconds of wall time, exit
status, the CLI's first line (or its error); the load average before and after.
Issue 64's target: under a minute per method at 200 rows on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: every private method `synth` releases a declared table with (Ryan's needs public data and is refused)
METHODS = ("privbayes", "mst", "aim", "p3gm", "dp-gm", "dp-vae", "privae")
DECLARATION = """\
label: grade
labels: [A, B, C]
columns:
  age: {bounds: [0, 120], integer: true}
  income: {bounds: [0, 200000]}
  hours: {bounds: [0, 100]}
  score: {bounds: [0, 1]}
  colour: {categories: [red, green, blue]}
"""


def write_table(work: Path, rows: int) -> tuple[Path, Path]:
    """The CSV and its --declare file."""
    import pandas as pd

    rng = np.random.default_rng(0)
    grade = rng.integers(0, 3, rows)
    frame = pd.DataFrame(
        {
            "age": (rng.integers(18, 70, rows) + 8 * grade).clip(0, 120),
            "income": (rng.uniform(12_000, 81_000, rows) + 20_000 * grade).round(1),
            "hours": rng.normal(30 + 5 * grade, 8, rows).clip(0, 100).round(1),
            "score": rng.beta(2 + grade, 3, rows).round(3),
            "colour": np.array(["red", "green", "blue"])[(grade + rng.integers(0, 2, rows)) % 3],
            "grade": np.array(["A", "B", "C"])[grade],
        }
    )
    table, declared = work / "table.csv", work / "table.yaml"
    frame.to_csv(table, index=False)
    declared.write_text(DECLARATION)
    return table, declared


def main() -> None:
    from dpvae.devices import device_argument, device_name

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    device_argument(parser)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--methods", nargs="*", default=list(METHODS))
    parser.add_argument("--params", nargs="*", default=[], help="method:key=value, added to that method's run")
    parser.add_argument("--work", type=Path, default=None, help="where the table and the releases go (default: temp)")
    parser.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS of the releases (default: unset)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"device={device_name(args.device)} cores={os.cpu_count()} load={load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    extra: dict[str, list[str]] = {m: [] for m in args.methods}
    for item in args.params:
        method, _, value = item.partition(":")
        extra.setdefault(method, []).append(value)
    with tempfile.TemporaryDirectory() as temporary:
        work = args.work or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        table, declared = write_table(work, args.rows)
        env = {**os.environ, **({"OMP_NUM_THREADS": str(args.threads)} if args.threads else {})}
        print(f"rows={args.rows} epsilon={args.epsilon:g} threads={args.threads or 'unset'} params={args.params}")
        print("method\tseconds\tstatus\tfirst line or error")
        for method in args.methods:
            out = work / f"{method}.csv"
            command = [sys.executable, "-m", "dpvae", "synth", "--method", method, "--data", str(table)]
            command += ["--declare", str(declared), "--epsilon", f"{args.epsilon:g}", "--out", str(out), "--force"]
            command += ["--device", args.device] + (["--params", *extra[method]] if extra.get(method) else [])
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
            seconds = time.perf_counter() - started
            said = done.stdout if done.returncode == 0 else done.stderr  # "wrote N synthetic records ...", or why not
            lines = [line for line in said.splitlines() if line.strip()]
            line = (lines[0] if done.returncode == 0 else lines[-1]) if lines else ""
            print(f"{method}\t{seconds:.1f}\t{done.returncode}\t{line}", flush=True)
    load = os.getloadavg()
    print(f"load at the end={load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
