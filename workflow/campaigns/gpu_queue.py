"""The paper-scale GPU queue: run the next entries of gpu-queue.yaml on a CUDA machine, bring back what recording
needs, unpack it here.

    python workflow/campaigns/gpu_queue.py status
    python workflow/campaigns/gpu_queue.py run OUTDIR [--budget MINUTES] [--cores N] [--dry-run]
    python workflow/campaigns/gpu_queue.py unpack OUTDIR

`run` (on the GPU machine, repository root, the project's packages importable, `DPVAE_DATA_MIRROR` set): takes the
entries in order, skips those recorded in reproductions/<paper>.csv (every run has a row) or blocked, and runs each
whose `minutes` fit what is left of `--budget` (default 9): Snakemake builds every run's metrics of the entry, the runs
sharing the GPU (`--set-threads train=1 evaluate=1`); interrupted runs resume from their checkpoints. Each finished
entry is packed into OUTDIR/<entry>.tar.gz: the runs' ledgers, train.json, metrics and benchmarks, their models where
the archive stays under 15 MiB (never checkpoints or samples), so that `unpack` + Snakemake here build the tables
without retraining. OUTDIR/queue.txt says what ran, what was skipped and why, and what is left.

`unpack` (here): extracts every OUTDIR/*.tar.gz into the repository and prints the tables to build and the
`python -m dpvae record` line for each entry.

In this workplace's device tool: build `.whl/` once with workflow/campaigns/gpu-wheels.sh and copy the entries'
data into an ignored folder (Fashion-MNIST from ../shared/data with its MANIFEST.tsv: 30 MB), then one call,
carrying both:
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
    DPVAE_DATA_MIRROR=$PWD/.devdata python3 workflow/campaigns/gpu_queue.py run $OUT/queue --budget 9
(checked on one H200 with --dry-run, 26 Nov 2026: Snakemake from the wheels plans entry 1's 50 jobs).
Entries with FID need the Inception weights (91 MiB, over one call's 64 MiB): workflow/campaigns/gpu-inception.sh
splits them here into parts carried by consecutive calls and joins them there against their sha256 (not yet run on
a device).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
QUEUE = Path(__file__).with_name("gpu-queue.yaml")
LIMIT = 15 * 2**20  # one file back from the device: at most 16 MiB
KEEP = ("privacy.json", "train.json", "audit.json", "metrics", "benchmarks")


@dataclass(frozen=True)
class Entry:
    name: str
    paper: str
    overlay: str
    dataset: str
    variants: tuple[str, ...]
    epsilons: tuple[str, ...]
    seeds: tuple[int, ...]
    metrics: tuple[str, ...]
    recorded_as: str
    minutes: float
    blocked: str | None = None

    def runs(self) -> list[Path]:
        return [
            Path("results/paper/runs") / self.dataset / v / f"eps{e}" / f"seed{s}"
            for v in self.variants
            for e in self.epsilons
            for s in self.seeds
        ]

    def made_here(self, command: str) -> bool:
        """Whether a recorded row's command ran this entry's overlay (config.yaml: no campaign overlay)."""
        if self.overlay == "config.yaml":
            return "workflow/campaigns/" not in command
        return self.overlay in command

    def targets(self) -> list[str]:
        return [str(run / "metrics" / f"{m}.json") for run in self.runs() for m in self.metrics]

    def recorded(self) -> bool:
        """Every run of the entry has a row in reproductions/<paper>.csv (same variant, ε, seed, dataset) made under
        the entry's overlay (a row of another campaign, e.g. a narrower CPU overlay, does not count)."""
        import pandas as pd

        path = ROOT / "reproductions" / f"{self.paper}.csv"
        if not path.is_file():
            return False
        rows = pd.read_csv(path, usecols=["dataset", "variant", "epsilon", "seed", "command"], dtype=str)
        rows = rows[(rows["dataset"] == self.recorded_as) & rows["command"].fillna("").map(self.made_here)]
        have = set(zip(rows["variant"], rows["epsilon"].map(_eps), rows["seed"].astype(int)))
        return all((v, _eps(e), s) in have for v in self.variants for e in self.epsilons for s in self.seeds)


def _eps(value: str) -> str:
    return "inf" if str(value) in ("inf", "nan", "") else f"{float(value):g}"


def load_queue(path: Path = QUEUE) -> list[Entry]:
    entries = []
    for raw in yaml.safe_load(path.read_text())["entries"]:
        runs = raw["runs"]
        entries.append(
            Entry(
                raw["name"],
                raw["paper"],
                raw["overlay"],
                runs["dataset"],
                tuple(runs["variants"]),
                tuple(str(e) for e in runs["epsilons"]),
                tuple(runs["seeds"]),
                tuple(raw["metrics"]),
                raw["recorded_as"],
                float(raw["minutes"]),
                raw.get("blocked"),
            )
        )
    return entries


def status(entries: list[Entry]) -> None:
    for entry in entries:
        state = "recorded" if entry.recorded() else f"blocked: {entry.blocked}" if entry.blocked else "ready"
        print(f"{entry.name:34s} {entry.minutes:5.0f} min  {len(entry.runs()):3d} runs  {state}")


def pack(entry: Entry, out: Path) -> str:
    """OUTDIR/<entry>.tar.gz of what recording needs; models too if the archive stays under the limit."""
    archive = out / f"{entry.name}.tar.gz"
    for with_models in (True, False):
        with tarfile.open(archive, "w:gz") as tar:
            for run in entry.runs():
                for name in KEEP + (("model",) if with_models else ()):
                    if (ROOT / run / name).exists():
                        tar.add(ROOT / run / name, arcname=str(run / name))
        if archive.stat().st_size <= LIMIT:
            return (
                f"{archive.name}: {archive.stat().st_size / 2**20:.1f} MiB{'' if with_models else ', without models'}"
            )
    return f"{archive.name}: {archive.stat().st_size / 2**20:.1f} MiB, OVER the limit of one file back"


def run(entries: list[Entry], out: Path, budget: float, cores: int, dry_run: bool) -> int:
    out.mkdir(parents=True, exist_ok=True)
    report, left, failed = [], budget, 0
    snakemake = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--set-threads", "train=1", "evaluate=1"]
    for entry in entries:
        if entry.recorded():
            report.append(f"{entry.name}: recorded, skipped")
        elif entry.blocked:
            report.append(f"{entry.name}: blocked ({entry.blocked})")
        elif entry.minutes > left:
            report.append(f"{entry.name}: left for a later call ({entry.minutes:.0f} min > {left:.1f} min left)")
        else:
            started = time.monotonic()
            command = [*snakemake, *(["-n"] if dry_run else []), f"--configfile={entry.overlay}", *entry.targets()]
            print("==", entry.name, ":", " ".join(command[1:5]), "...", flush=True)
            done = subprocess.run(command, cwd=ROOT).returncode == 0
            took = (time.monotonic() - started) / 60
            left -= took if not dry_run else entry.minutes
            failed += not done
            packed = pack(entry, out) if done and not dry_run else "nothing packed"
            report.append(f"{entry.name}: {'ok' if done else 'FAILED'} in {took:.1f} min; {packed}")
    (out / "queue.txt").write_text("\n".join(report) + "\n")
    print("\n".join(report))
    return 1 if failed else 0


def unpack(out: Path, entries: list[Entry]) -> None:
    by_name = {e.name: e for e in entries}
    for archive in sorted(out.glob("*.tar.gz")):
        with tarfile.open(archive) as tar:
            tar.extractall(ROOT, filter="data")
        entry = by_name.get(archive.name.removesuffix(".tar.gz"))
        print(f"{archive.name}: unpacked")
        if entry:
            print(
                f"  then: snakemake --configfile={entry.overlay} <the experiment's tables of {entry.variants}> and "
                f'python -m dpvae record <those tables> --command "gpu_queue.py run ({entry.name})"'
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    sub.add_parser("status")
    p = sub.add_parser("run")
    p.add_argument("out", type=Path)
    p.add_argument("--budget", type=float, default=9.0, help="minutes of work for this call")
    p.add_argument("--cores", type=int, default=16)
    p.add_argument("--dry-run", action="store_true", help="snakemake -n for each entry that would run")
    p = sub.add_parser("unpack")
    p.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    entries = load_queue()
    if args.verb == "status":
        status(entries)
    elif args.verb == "run":
        return run(entries, args.out, args.budget, args.cores, args.dry_run)
    else:
        unpack(args.out, entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
