"""The paper-scale GPU queue: run the next entries of gpu-queue.yaml on a CUDA machine, bring back what recording
needs, unpack it here.

    python workflow/campaigns/gpu_queue.py status
    python workflow/campaigns/gpu_queue.py run OUTDIR [--budget MINUTES] [--cores N] [--dry-run]
    python workflow/campaigns/gpu_queue.py unpack OUTDIR
    python workflow/campaigns/gpu_queue.py pack OUTDIR ENTRY...   (on the machine: an entry's runs packed again)
    python workflow/campaigns/gpu_queue.py recorded PAPER ...  (asked by the CPU campaigns' scripts)

`run` (on the GPU machine, repository root, the project's packages importable, `DPVAE_DATA_MIRROR` set): takes the
entries in order, skips those recorded in reproductions/<paper>.csv (every run has a row) or blocked, and runs the
others in waves until what is left of `--budget` (default 9 minutes) fits none: a wave is the first entry that fits,
with every later entry of its overlay that still fits beside it (`next_wave`: a core per run, the entries' peak GPU
memory within the free memory, the predicted minutes of all of them together -- `Wave.minutes` -- within what is
left); one Snakemake builds every run's metrics of the wave, all runs sharing the GPU (`--set-threads train=1
evaluate=1`). A wave still running when the budget is spent is stopped
(its process group killed) before the device's own limit, so the report comes back; the next call on the same warm
machine resumes it first, whatever its prediction (stale locks removed, `--rerun-incomplete`, training from the
runs' checkpoints, DP²-VAE's image classifiers after the classifiers they finished). An entry that needs FID while
the Inception weights are not on the machine builds its other metrics and says FID is left.
Each finished entry, and each stopped or failed one with what its jobs finished (Snakemake `--keep-going`: a failed
job stops no other; `--show-failed-logs`: its log in the call's output), is packed into OUTDIR/<entry>.tar.gz:
the runs' ledgers, train.json, metrics, benchmarks and models (never checkpoints, samples or a metric's resume
point), split into parts of at most 15 MiB while OUTDIR holds at most the 8 files a call brings back (else without
models, named in queue.txt), so that `unpack` + Snakemake here build the tables without retraining. OUTDIR/queue.txt,
rewritten after every entry, says what ran, what was skipped and why, and what is left.

`unpack` (here): extracts every OUTDIR/*.tar.gz into the repository and, per entry, names the per-variant tables
holding its runs: the build-and-record command for each whose runs are all here (ledger, model, every metric of its
experiment), and what each other one lacks (building it here would train or evaluate on this machine).

In this workplace's device tool, one call = `workflow/campaigns/gpu-window.sh [BUDGET]` (installs the wheels from
`.whl/`, joins the Inception weights once all their parts are there, runs this queue into $OUT/queue). A call carries
at most 64 MiB, so a window with FID takes two calls back to back (the warm machine keeps what each carried):
    1. carry [.whl, .devinc1]                                  gpu-window.sh 0   (install only: ~57 MiB)
    2. carry [.devinc2, .devdata/MANIFEST.tsv, .devdata/mnist]  gpu-window.sh 8.5 (join, then the next entries: ~56 MiB)
(each with the repository's files, 6.9 MiB on 4 Dec 2026; the weights' parts are gzipped, 39 MiB each). Budget 8.5
leaves ~8 minutes after the set-up: one or two DP²-VAE entries (8 min each; three side by side are predicted 8.4).
The call's command, with its `timeout` and its output in a file under $OUT: gpu-window.sh's header; the budget counts
from the call's start, and a SIGTERM stops the wave as the budget would (`stopped_by_signals`).
Fashion-MNIST (30 MB) does not fit beside a weights part: on a machine that has both parts, carry
[.devdata/MANIFEST.tsv, .devdata/fashion-mnist] with the call that runs its entries (the MNIST ones come first).
(`.whl/`: workflow/campaigns/gpu-wheels.sh; `.devdata/`: the entries' datasets copied from ../shared/data with its
MANIFEST.tsv, MNIST 12 MB, Fashion-MNIST 30 MB; `.devinc<k>/`: workflow/campaigns/gpu-inception.sh split.) Checked
here end to end with `PY=.venv/bin/python gpu-window.sh 200 --dry-run --device cpu` (join, every entry planned)
and rehearsed on the CPU by tests/workflow/test_gpu_window.py; Snakemake from
the wheels planned an entry on one H200 (26 Nov 2026); the first entries ran on one H200 on 27 Nov 2026
(PriVAE Fig. 1, benchmarks/measured/h200-2026-11-27/).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:  # the project's package, run from a checkout without an install
    sys.path.insert(0, str(ROOT / "src"))
from dpvae.paths import (  # noqa: E402
    AUDIT,
    BENCHMARKS,
    LEDGER,
    METRICS,
    MODEL,
    TRAIN_RECORD,
    is_resume_point,
    metric_file,
    model_path,
    run_dir,
    run_id,
    train_record,
    variant_table,
)

QUEUE = Path(__file__).with_name("gpu-queue.yaml")
LIMIT = 15 * 2**20  # one file back from the device: at most 16 MiB
FILES_BACK = 8  # files one device call brings back from its $OUT
SCALE = "paper"  # the queue's runs are paper-scale runs
KEEP = (LEDGER, TRAIN_RECORD, AUDIT, METRICS, BENCHMARKS)  # what recording needs of a run (a model where it fits)


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
    gpu_share: float = 1.0  # the share of the GPU's time the entry keeps busy when it runs alone (1: all of it)
    memory_gib: float = 0.0  # its peak GPU memory (0: not known, taken as small)

    def runs(self) -> list[Path]:
        return [
            Path(run_dir(SCALE, run_id(self.dataset, v, e, s)))
            for v in self.variants
            for e in self.epsilons
            for s in self.seeds
        ]

    def made_here(self, command: str) -> bool:
        """Whether a recorded row's command ran this entry's overlay (config.yaml: no campaign overlay), the command
        naming it where it lives now or where it lived when recorded (`dpvae.paths.campaign_overlay`)."""
        from dpvae.paths import CAMPAIGNS, command_words

        if self.overlay == "config.yaml":
            return f"{CAMPAIGNS}/" not in command
        return self.overlay in command_words(command)

    def targets(self, skip: tuple[str, ...] = ()) -> list[str]:
        """Every run's metric files, but those of the metrics in `skip`."""
        return [str(metric_file(run, m)) for run in self.runs() for m in self.metrics if m not in skip]

    def started(self) -> bool:
        """Stopped by an earlier call on this machine: a run of it trained, a metric of it still missing."""
        return any((ROOT / train_record(run)).exists() for run in self.runs()) and not all(
            (ROOT / target).exists() for target in self.targets()
        )

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
                float(raw.get("gpu_share", 1.0)),
                float(raw.get("memory_gib", 0.0)),
            )
        )
    return entries


@dataclass(frozen=True)
class Room:
    """What one call's machine offers entries side by side: its cores (one per run: Snakemake's train and evaluate
    jobs take one thread each) and its free GPU memory (infinite on the CPU)."""

    cores: int
    memory_gib: float = float("inf")


@dataclass(frozen=True)
class Wave:
    """Entries of one overlay that one Snakemake builds side by side on one GPU."""

    entries: tuple[Entry, ...]

    @property
    def minutes(self) -> float:
        """Predicted: as long as its longest entry, or as long as the GPU time its entries add up to, whichever is
        more (an entry that keeps the GPU busy a share s of its time overlaps with others until their shares fill
        the GPU; s = 1 for an entry whose share is not measured, so that it is predicted as if run alone)."""
        return max(max(e.minutes for e in self.entries), sum(e.minutes * e.gpu_share for e in self.entries))

    def fits(self, room: Room, minutes: float) -> bool:
        """Its runs have a core each, its peaks fit the free memory together, and its prediction fits `minutes`."""
        runs = sum(len(e.runs()) for e in self.entries)
        memory = sum(e.memory_gib for e in self.entries)
        return runs <= room.cores and memory <= room.memory_gib and self.minutes <= minutes

    def names(self) -> str:
        return " + ".join(e.name for e in self.entries)


#: a call resumes an entry an earlier call stopped (`Entry.started`) whatever its prediction while this much is left
RESUME_MINUTES = 1.0


def next_wave(ready: list[Entry], minutes: float, room: Room) -> Wave | None:
    """The next entries to run side by side: an entry an earlier call stopped first (it resumes, and is stopped
    again at the budget), else the first ready entry (queue order) that fits `minutes` alone; joined by every later
    ready entry of the same overlay with which the wave still fits the room and `minutes`."""
    resuming = (e for e in ready if e.started() and minutes >= RESUME_MINUTES and Wave((e,)).fits(room, float("inf")))
    first = next(resuming, None) or next((e for e in ready if Wave((e,)).fits(room, minutes)), None)
    if first is None:
        return None
    wave = Wave((first,))
    for entry in ready:
        if entry is not first and entry.overlay == first.overlay and Wave((*wave.entries, entry)).fits(room, minutes):
            wave = Wave((*wave.entries, entry))
    return wave


def status(entries: list[Entry]) -> None:
    for entry in entries:
        state = "recorded" if entry.recorded() else f"blocked: {entry.blocked}" if entry.blocked else "ready"
        print(f"{entry.name:34s} {entry.minutes:5.0f} min  {len(entry.runs()):3d} runs  {state}")


def pack(entry: Entry, out: Path, files_back: int = FILES_BACK) -> str:
    """OUTDIR/<entry>.tar.gz of what recording needs of the entry's runs, their models included (a table's build
    needs them: without, Snakemake here would train again). An archive over the limit of one file back is split into
    parts <entry>.tar.gz.1, .2, ... (`unpack` joins them) while OUTDIR's files stay within `files_back` (queue.txt
    counted); else it is packed without models, which stay on the machine (`gpu_queue.py pack OUTDIR ENTRY` in the
    next call on it brings them)."""
    archive = out / f"{entry.name}.tar.gz"
    for old in out.glob(f"{archive.name}*"):
        old.unlink()
    others = {p.name for p in out.iterdir() if p.is_file()} | {"queue.txt"}
    for with_models in (True, False):
        with tarfile.open(archive, "w:gz") as tar:
            for run in entry.runs():
                for name in KEEP + ((MODEL,) if with_models else ()):
                    if (ROOT / run / name).exists():
                        tar.add(ROOT / run / name, arcname=str(run / name), filter=_recorded)
        size = archive.stat().st_size
        if with_models and size <= LIMIT:
            return f"{archive.name}: {size / 2**20:.1f} MiB"
        parts = -(-size // LIMIT)
        if with_models and len(others) + parts <= files_back:
            with archive.open("rb") as whole:
                for k in range(1, parts + 1):
                    (out / f"{archive.name}.{k}").write_bytes(whole.read(LIMIT))
            archive.unlink()
            return f"{archive.name}: {size / 2**20:.1f} MiB in {parts} parts"
    over = ", OVER the limit of one file back" if size > LIMIT else ""
    return (
        f"{archive.name}: {size / 2**20:.1f} MiB without models{over} (they stay on this machine: "
        f"`gpu_queue.py pack OUTDIR {entry.name}` in the next call on it brings them)"
    )


def _recorded(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """A packed file, but not a job's resume point (`dpvae.paths.is_resume_point`: it serves the job here)."""
    return None if is_resume_point(Path(member.name).name) else member


def archives(out: Path) -> list[tuple[str, list[Path]]]:
    """OUTDIR's packed entries: (entry name, its archive or the parts that make it, in order)."""
    found: dict[str, dict[int, Path]] = {}
    for path in out.glob("*.tar.gz*"):
        name, _, part = path.name.partition(".tar.gz")
        if part == "" or (part[:1] == "." and part[1:].isdigit()):
            found.setdefault(name, {})[int(part[1:] or 0)] = path
    return [(name, [parts[k] for k in sorted(parts)]) for name, parts in sorted(found.items())]


def fid_ready() -> bool:
    """Whether the FID Inception weights are on this machine (dpvae.eval.fid finds and checks them)."""
    from dpvae.errors import DataError
    from dpvae.eval.fid import weights_path

    try:
        weights_path()
    except DataError:
        return False
    return True


STOP = threading.Event()  # set by SIGTERM / SIGINT (`stopped_by_signals`): the call's own limit has come


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """While inside, SIGTERM (`timeout`'s: the call's limit) and SIGINT set STOP, which stops the running wave as its
    budget would -- its process group killed, what finished packed, queue.txt written -- where the default action
    killed this process alone: Snakemake runs in a session of its own, which a signal to this process group never
    reaches, and it kept the call's output open until the device tool's limit took the call and all it had made (an
    H100 call of 27 Nov 2026 brought nothing back that way)."""
    previous = {sig: signal.signal(sig, lambda *_: STOP.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def build(command: list[str], seconds: float) -> str:
    """Run one entry's Snakemake in its own process group: 'ok', 'failed', or 'stopped' when `seconds` ran out or
    STOP was set."""
    process = subprocess.Popen(command, cwd=ROOT, start_new_session=True)
    deadline = time.monotonic() + max(seconds, 1.0)
    while process.poll() is None:
        if STOP.wait(timeout=min(0.5, max(deadline - time.monotonic(), 0.0))) or time.monotonic() >= deadline:
            break
    if process.poll() is not None:
        return "ok" if process.returncode == 0 else "failed"
    for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            break
    return "stopped"


def check(device: str) -> str:
    """One line on the machine the entries run on, after 10 DP-SGD steps there with the jobs' deterministic
    kernels (dpvae.devices.repeatable); raises RuntimeError, naming what is missing, where `device` is not."""
    import torch
    from torch import nn

    from dpvae.devices import device_name, repeatable, synchronize
    from dpvae.privacy.dpsgd import DPSGD

    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"no CUDA device (torch {torch.__version__}: torch.cuda.is_available() is False)")
    repeatable(device)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 4, 2, 1), nn.GroupNorm(2, 8), nn.Flatten(), nn.Linear(8 * 8 * 8, 1))
    model = model.to(device)
    engine = DPSGD(
        model,
        max_grad_norm=1.0,
        noise_multiplier=1.0,
        sample_rate=0.01,
        expected_batch_size=16,
        generator=torch.Generator(device).manual_seed(0),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.rand(16, 1, 16, 16, device=device)
    started = time.monotonic()
    for _ in range(10):
        optimizer.zero_grad()
        engine.step(model(x).square().sum(1))
        optimizer.step()
    synchronize(device)
    line = f"device: {device_name(device)}, torch {torch.__version__} (CUDA {torch.version.cuda})"
    if device == "cuda":
        free, total = torch.cuda.mem_get_info()
        deterministic = torch.are_deterministic_algorithms_enabled() and os.environ.get("CUBLAS_WORKSPACE_CONFIG")
        line += f", {free / 2**30:.1f} of {total / 2**30:.1f} GiB free"
        line += f", deterministic kernels {'on' if deterministic else 'OFF'}"
    return f"{line}; 10 DP-SGD steps in {time.monotonic() - started:.2f} s"


def free_room(device: str, cores: int) -> Room:
    """The room one call has: `cores`, and on CUDA the GPU memory free now."""
    if device != "cuda":
        return Room(cores)
    import torch

    return Room(cores, torch.cuda.mem_get_info()[0] / 2**30)


def _later(entry: Entry, left: float, room: Room) -> str:
    """Why a ready entry did not run in this call."""
    if entry.memory_gib > room.memory_gib:
        return f"{entry.name}: left for a later call (needs {entry.memory_gib:.1f} GiB, {room.memory_gib:.1f} free)"
    if len(entry.runs()) > room.cores:
        return f"{entry.name}: left for a later call ({len(entry.runs())} runs > {room.cores} cores)"
    return f"{entry.name}: left for a later call ({entry.minutes:.0f} min > {max(left, 0.0):.1f} min left)"


def run(
    entries: list[Entry],
    out: Path,
    budget: float,
    cores: int,
    dry_run: bool,
    device: str = "cuda",
    since: float | None = None,
) -> int:
    """Run the ready entries in waves (`next_wave`) until the budget, counted from `since` (epoch seconds: the
    call's start; default now), is spent or a signal stops the call; OUTDIR/queue.txt says, per entry in queue
    order, what became of it, then per wave its predicted and measured minutes."""
    budget -= (time.time() - since) / 60 if since is not None else 0.0
    out.mkdir(parents=True, exist_ok=True)
    try:
        header = check(device)
    except RuntimeError as error:
        (out / "queue.txt").write_text(f"device: {error}; nothing ran\n")
        print(f"gpu_queue: {error}; nothing ran", file=sys.stderr)
        return 2
    shutil.rmtree(ROOT / ".snakemake" / "locks", ignore_errors=True)  # a call stopped at its limit leaves them
    snakemake = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--set-threads", "train=1", "evaluate=1"]
    # a failed job neither stops its wave's other jobs nor loses what they finish; its log goes to the call's output
    snakemake += ["--rerun-incomplete", "--keep-going", "--show-failed-logs"]
    skip = () if fid_ready() else ("fid",)
    room = free_room(device, cores)
    lines: dict[str, str] = {}
    ready: list[Entry] = []
    for entry in entries:
        if entry.recorded():
            lines[entry.name] = f"{entry.name}: recorded, skipped"
        elif entry.blocked:
            lines[entry.name] = f"{entry.name}: blocked ({entry.blocked})"
        elif not entry.targets(skip):
            lines[entry.name] = f"{entry.name}: only FID, and no Inception weights here (gpu-inception.sh join)"
        else:
            ready.append(entry)
    waves: list[str] = []

    def report() -> str:
        text = "\n".join([header, *(lines[e.name] for e in entries if e.name in lines), *waves]) + "\n"
        (out / "queue.txt").write_text(text)
        return text

    left, failed = budget, 0
    while not STOP.is_set() and (wave := next_wave(ready, left, room)) is not None:
        targets = [target for entry in wave.entries for target in entry.targets(skip)]
        command = [*snakemake, *(["-n"] if dry_run else []), f"--configfile={wave.entries[0].overlay}", *targets]
        print("==", wave.names(), ":", " ".join(command[1:5]), "...", flush=True)
        started = time.monotonic()
        outcome = build(command, left * 60)
        took = (time.monotonic() - started) / 60
        left -= took if not dry_run else wave.minutes
        failed += outcome == "failed"
        others = len(wave.entries) - 1
        for entry in wave.entries:
            packed = "nothing packed" if dry_run else pack(entry, out)
            beside = f" (side by side with {others} other entr{'y' if others == 1 else 'ies'})" if others else ""
            line = f"{entry.name}: {outcome} in {took:.1f} min{beside}; {packed}"
            if outcome == "stopped":
                line += (
                    " (the runs finished so far); resumes from its checkpoints in the next call on this warm machine"
                )
            elif outcome == "failed":
                line += " (the jobs that finished; the failed job's log is in this call's output)"
            if "fid" in skip and "fid" in entry.metrics:
                line += "; FID left (no Inception weights here: workflow/campaigns/gpu-inception.sh join)"
            lines[entry.name] = line
        waves.append(
            f"wave {len(waves) + 1} ({wave.names()}): predicted {wave.minutes:.1f} min, took {took:.1f} min, {outcome}"
        )
        ready = [entry for entry in ready if entry not in wave.entries]
        report()
    for entry in ready:
        stopped = f"{entry.name}: left for a later call (this call was stopped)"
        lines[entry.name] = stopped if STOP.is_set() else _later(entry, left, room)
    print(report(), end="")
    return 1 if failed else 0


@functools.cache
def _config(overlay: str) -> Any:
    """config.yaml under one overlay, validated and typed (`dpvae.config.Config`; once per overlay)."""
    from dpvae.config import load

    path = ROOT / overlay
    return load([ROOT / "config.yaml"] + ([path] if path.name != "config.yaml" else []))


def tables(entry: Entry) -> dict[str, list[str]]:
    """The per-variant tables (results/paper/tables/<experiment>/<dataset>/<variant>.csv) that hold the entry's
    runs, each with the files it needs of every run of it (every seed of its experiment under the entry's overlay:
    train.json, the model, each metric), so that Snakemake here builds it without training or evaluating."""
    from dpvae.runs import experiment_runs

    config = _config(entry.overlay)
    mine = {(v, _eps(e), s) for v in entry.variants for e in entry.epsilons for s in entry.seeds}
    found: dict[str, list[str]] = {}
    for name, exp in config.trained().items():
        if entry.dataset not in exp.datasets:
            continue
        runs = experiment_runs(config, name, entry.dataset)
        for variant in sorted({r.variant for r in runs if (r.variant, _eps(r.eps), r.seed) in mine}):
            found[variant_table(SCALE, name, entry.dataset, variant)] = [
                need for r in runs if r.variant == variant for need in _needs(r.path(SCALE), exp.metrics)
            ]
    return found


def _needs(run: str, metrics: list[str]) -> list[str]:
    """What building a table needs of one of its runs: its train.json, its model and each metric."""
    return [train_record(run), model_path(run), *(metric_file(run, m) for m in metrics)]


def unpack(out: Path, entries: list[Entry]) -> None:
    """Extract the archives, then name each table whose runs are all here now (build it, then record it) and
    what each other one lacks (building it here would train or evaluate on this machine)."""
    by_name = {e.name: e for e in entries}
    for name, paths in archives(out):
        with tempfile.TemporaryFile() as joined:
            for path in paths:
                joined.write(path.read_bytes())
            joined.seek(0)
            with tarfile.open(fileobj=joined, mode="r:gz") as tar:
                tar.extractall(ROOT, filter="data")
        print(f"{name}.tar.gz: unpacked" + (f" ({len(paths)} parts)" if len(paths) > 1 else ""))
        entry = by_name.get(name)
        if entry is None:
            continue
        for table, needs in tables(entry).items():
            missing = [path for path in needs if not (ROOT / path).exists()]
            if missing:
                print(f"  {table}: lacks {len(missing)} file(s), e.g. {missing[0]}")
            else:
                command = f"snakemake --configfile={entry.overlay} {table}"
                print(
                    f"  {table}: every run here; {command} && python -m dpvae record {table} "
                    f'--command "gpu_queue.py run ({entry.name}): {command}"'
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--queue", type=Path, default=QUEUE, help="the queue file (default: gpu-queue.yaml)")
    sub = parser.add_subparsers(dest="verb", required=True)
    sub.add_parser("status", parents=[common])
    p = sub.add_parser("run", parents=[common])
    p.add_argument("out", type=Path)
    p.add_argument("--budget", type=float, default=9.0, help="minutes of work for this call")
    p.add_argument("--since", type=float, help="epoch seconds the budget counts from (gpu-window.sh: the call's start)")
    p.add_argument("--cores", type=int, default=16)
    p.add_argument("--dry-run", action="store_true", help="snakemake -n for each entry that would run")
    p.add_argument(
        "--device", choices=("cuda", "cpu"), default="cuda", help="where the entries must run (cpu: a rehearsal)"
    )
    p = sub.add_parser("unpack", parents=[common])
    p.add_argument("out", type=Path)
    p = sub.add_parser("pack", parents=[common], help="pack entries' runs again (on the machine that ran them)")
    p.add_argument("out", type=Path)
    p.add_argument("names", nargs="+", metavar="ENTRY")
    p = sub.add_parser(
        "recorded", help="exit 0 where one run has its rows in reproductions/<paper>.csv made under OVERLAY, else 1"
    )
    for name in ("paper", "overlay", "dataset", "variant", "epsilon"):
        p.add_argument(name)
    p.add_argument("seed", type=int)
    args = parser.parse_args(argv)
    if args.verb == "recorded":  # one run, whatever the queue file holds (the CPU campaigns' scripts ask this)
        one = Entry(
            name=f"{args.variant}-{args.seed}",
            paper=args.paper,
            overlay=args.overlay,
            dataset=args.dataset,
            variants=(args.variant,),
            epsilons=(args.epsilon,),
            seeds=(args.seed,),
            metrics=(),
            recorded_as=args.dataset,
            minutes=0.0,
        )
        return 0 if one.recorded() else 1
    entries = load_queue(args.queue)
    if args.verb == "status":
        status(entries)
    elif args.verb == "run":
        with stopped_by_signals():
            return run(entries, args.out, args.budget, args.cores, args.dry_run, args.device, args.since)
    elif args.verb == "pack":
        by_name = {e.name: e for e in entries}
        unknown = [n for n in args.names if n not in by_name]
        if unknown:
            print(f"gpu_queue: no entry {unknown[0]!r} in {args.queue}", file=sys.stderr)
            return 2
        args.out.mkdir(parents=True, exist_ok=True)
        for name in args.names:
            print(pack(by_name[name], args.out))
    else:
        unpack(args.out, entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
