"""`python -m dpvae plan`: the jobs some targets still need, and the hours they cost, before a run.

Snakemake's own DAG (`dpvae.dag`) lists the jobs and which are built. Every job still to run gets an estimate
on two machines, one GPU machine (an H100/H200 under `device: auto`) and a 2-core CPU machine, from the first
of these that has one for a device the job would run on there (`Estimate.source`):

1. **measured**, jobs with the same settings: its rule and wildcards but the seed; for a run's jobs the
   method, dataset and typed parameters instead of variant and epsilon (the epsilon does not change the work),
   and for `evaluate` also the metric's typed options. Measurements are the benchmark files at this scale
   (`benchmark:` of every rule; the device is the one the job's outputs or its run's train.json record), the
   committed records of benchmark files (`benchmarks/measured/*/*.tsv`, `plan --record`) at this scale and,
   at paper scale, the training `wall_s` of recorded runs (reproductions/*.csv; their settings are those of
   the campaign overlay their command names).
2. **similar** (not at paper scale): measured jobs of the same rule, method or metric and dataset at this
   scale, other settings.
3. **rule** (not at paper scale): measured jobs of the same rule at this scale. A small build's jobs are
   mostly start-up and I/O, alike across settings and methods; at paper scale settings differ by orders of
   magnitude (recorded campaigns ran reduced settings), so only the same settings count there.
4. **logged**: the job's declared work (`Resources.work`) at a rate a committed device log measured
   (`dpvae.runtimes`: DP²-VAE's stage-1 and stage-2 steps on an H200).
5. **declared**: the rule's `runtime` resource, minutes on the CPU reference machine (a 2-core CPU) at paper
   scale (`dpvae.runtimes.Declared`); at a smaller scale used as it is, a ceiling, and the text says so. A CPU
   declaration is never a GPU's time: a job that asks for a GPU (`resources: gpu`, which `device: cpu` turns
   off) has, on the GPU machine, only CUDA measurements and rates, else **no GPU rate**. A rule that declares
   none (bookkeeping) is not estimated.

On the GPU machine CUDA comes first, then a CPU (for a job that asks for no GPU); on the 2-core machine a
2-core CPU, then another CPU, then a device not recorded; the median over the chosen measurements is taken.
A job's hours are GPU-hours when it asks for a GPU or was measured on one, CPU-hours otherwise; hours are
job wall time, summed. A job over `IMPRACTICAL_DAYS` on a machine is **impractical** there: counted, not summed.
"""

from __future__ import annotations

import csv
import heapq
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dpvae.config import Config
from dpvae.dag import BenchmarkFile, Dag, DagJob, snakemake_dag
from dpvae.errors import ConfigError, DpvaeError
from dpvae.eval.registry import METRICS
from dpvae.methods.registry import METHODS
from dpvae.paths import CAMPAIGN_OVERLAY, REPO_ROOT, campaign_overlay, train_record
from dpvae.reproductions import cell_dataset, published_dataset, read_all
from dpvae.runs import Run, experiment_runs
from dpvae.runspec import RunSpec
from dpvae.runtimes import (
    Declared,
    DeviceClass,
    LoggedRate,
    Work,
    device_class,
    rates_for,
    read_device_logs,
    seconds_of,
)
from dpvae.schema import format_eps, read_config
from dpvae.workflow import Rules

__all__ = ["CPU_MACHINE", "GPU_MACHINE", "CostPlan", "Estimate", "cost_plan", "describe", "device_class"]

GPU_MACHINE, CPU_MACHINE = "gpu_machine", "cpu_2core"
_CPUS = ("cpu2", "cpu", "")  # the device classes a job that runs on a CPU is measured on, in order
DEVICE_LOGS = REPO_ROOT / "benchmarks" / "measured"  # committed device logs (*.log) and benchmark records (*.tsv)
IMPRACTICAL_DAYS = 30  # a job longer than this on a machine is impractical there
BUILD_CORES = 2  # `make smoke`'s --cores (Makefile CORES)
SOURCES = ("measured", "similar", "rule", "logged", "declared", "no GPU rate", "none")
_RECORD_COLUMNS = ("scale", "rule", "group", "ident", "key", "device", "seconds")
_RUN_WILDCARDS = frozenset({"dataset", "variant", "eps", "seed"})
_TRAIN_RULE = "train"  # the job whose time a recorded run's wall_s is (its train.json "seconds")
_STAGE1_RULE = "stage1"


@dataclass(frozen=True)
class Measurement:
    seconds: float
    device: str  # 'cuda: NVIDIA H200', 'cpu: x86_64 x2', '' (not recorded)


@dataclass(frozen=True)
class Estimate:
    """One job's hours on one machine and where they come from."""

    seconds: float | None  # None: nothing measured for the device, nothing declared for it
    source: str  # one of SOURCES (module docstring)
    on_gpu: bool = False
    devices: tuple[str, ...] = ()
    runs: frozenset[str] = frozenset()  # the measurements (or device-log lines) used
    declared: Declared | None = None  # the declaration used, or the one a GPU job cannot use

    def __post_init__(self) -> None:
        if (
            self.on_gpu
            and self.seconds is not None
            and not all(device_class(d) == "cuda" for d in self.devices or [""])
        ):
            raise ValueError(
                f"a GPU estimate comes from CUDA measurements or rates only, not {self.devices or self.declared}"
            )

    @property
    def impractical(self) -> bool:
        return self.seconds is not None and self.seconds > IMPRACTICAL_DAYS * 86400


@dataclass(frozen=True)
class JobCost:
    job: DagJob
    group: str
    estimates: dict[str, Estimate] = field(default_factory=dict)  # machine -> estimate; empty when built


class Settings:
    """What makes two jobs cost the same, under one configuration (see the module docstring)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self._specs: dict[tuple, RunSpec | None] = {}
        self._canonical: dict[tuple, str | None] = {}

    def key(
        self, rule: str, wildcards: dict[str, str], spec: RunSpec | None = None, options: dict | None = None
    ) -> tuple | None:
        """The settings of a job of `rule` (a run's `spec` and a metric's `options` if recorded, else the
        configuration's); None when they cannot be known (a run no experiment has, parameters that no longer
        parse)."""
        if _run_of(wildcards) is None:
            return (rule, *sorted((k, v) for k, v in wildcards.items() if k != "seed"))
        spec = spec or self.spec(wildcards)
        if spec is None:
            return None
        metric = wildcards.get("metric")
        params = self._typed("method", spec.method, spec.params)
        opts = (
            self._typed("metric", metric, options if options is not None else self.rules.metric_options(metric))
            if metric
            else ""
        )
        return None if params is None or opts is None else (rule, spec.method, spec.dataset, params, metric, opts)

    def spec(self, wildcards: dict[str, str]) -> RunSpec | None:
        """The configuration's run spec for a run's wildcards (the seed aside), None if no experiment has it."""
        index = (wildcards["dataset"], wildcards["variant"], wildcards["eps"])
        if index not in self._specs:
            try:
                self._specs[index] = self.rules.spec(*index, wildcards["seed"])
            except DpvaeError:
                self._specs[index] = None
        return self._specs[index]

    def group(self, wildcards: dict[str, str], spec: RunSpec | None = None) -> str:
        """The table row a job is counted in: metric or method (of `spec` if given), and dataset ('' for
        bookkeeping rules)."""
        what = wildcards.get("metric") or wildcards.get("method")
        if not what and _run_of(wildcards):
            spec = spec or self.spec(wildcards)
            what = spec.method if spec else None
        return " · ".join(p for p in (what, wildcards.get("dataset")) if p) if what else ""

    def work(self, job: DagJob) -> Work | None:
        """The work a training job declares (`Resources.work`), None for other rules or none declared."""
        try:
            if job.rule == _TRAIN_RULE and _run_of(job.wildcards):
                w = job.wildcards
                return self.rules.train_resources(w["dataset"], w["variant"], w["eps"], w["seed"]).work
            if job.rule == _STAGE1_RULE:
                w = job.wildcards
                return self.rules.stage1_resources(w["dataset"], w["method"], w["key"], w["seed"]).work
        except (DpvaeError, KeyError):
            return None
        return None

    def _typed(self, kind: str, name: str, values: dict) -> str | None:
        """`values` parsed by the method's parameters or the metric's options (defaults filled), as JSON."""
        index = (kind, name, json.dumps(values, sort_keys=True, default=str))
        if index not in self._canonical:
            try:
                entry = METHODS.get(name).Params if kind == "method" else METRICS.get(name).Options
                typed = entry.parse(values, name=name).to_dict()
                self._canonical[index] = json.dumps(typed, sort_keys=True, default=str)
            except (DpvaeError, TypeError, ValueError):
                self._canonical[index] = None
        return self._canonical[index]


@dataclass(frozen=True)
class Record:
    """One measured job as `plan --record` writes it (a row of benchmarks/measured/*/*.tsv)."""

    scale: str
    rule: str
    group: str
    ident: str
    key: tuple
    measurement: Measurement

    def row(self, unrecorded: str = "") -> tuple[str, ...]:
        """The TSV row; a job whose outputs name no device (data, tables, figures) gets `unrecorded`."""
        key = json.dumps(self.key, separators=(",", ":"))
        m = self.measurement
        return (self.scale, self.rule, self.group, self.ident, key, m.device or unrecorded, f"{m.seconds:.3f}")


class Measurements:
    """Measured seconds by settings, by rule and group and by rule (module docstring), and device-log rates."""

    def __init__(self, settings: Settings, workdir: Path) -> None:
        self.settings = settings
        self.workdir = workdir
        self.by_key: dict[tuple, dict[str, Measurement]] = {}
        self.by_group: dict[tuple[str, str], dict[str, Measurement]] = {}
        self.by_rule: dict[str, dict[str, Measurement]] = {}
        self.benchmarked: list[Record] = []  # this working directory's benchmark files, for `plan --record`
        self.logged: list[LoggedRate] = []
        self._json: dict[Path, dict] = {}
        self._overlays: dict[str, Rules | None] = {}

    def add(self, rule: str, group: str, ident: str, key: tuple, measurement: Measurement) -> None:
        """One measured job, unless one added before measured the same job."""
        self.by_key.setdefault(key, {}).setdefault(ident, measurement)
        self.by_group.setdefault((rule, group), {}).setdefault(ident, measurement)
        self.by_rule.setdefault(rule, {}).setdefault(ident, measurement)

    def add_benchmarks(self, files: Iterable[BenchmarkFile]) -> None:
        for bench in files:
            seconds = _benchmark_seconds(self.workdir / bench.path)
            device, spec, options = self._record(bench)
            key = self.settings.key(bench.rule, bench.wildcards, spec, options)
            if key is not None and seconds is not None:
                group = self.settings.group(bench.wildcards, spec)
                record = Record(
                    self.settings.rules.scale,
                    bench.rule,
                    group,
                    _ident(bench.rule, bench.wildcards, bench.path),
                    key,
                    Measurement(seconds, device),
                )
                self.benchmarked.append(record)
                self.add(record.rule, record.group, record.ident, record.key, record.measurement)

    def add_committed(self, root: Path = DEVICE_LOGS) -> None:
        """The committed benchmark records (`plan --record`) at this scale, and the device logs' rates."""
        for path in sorted(root.glob("*/*.tsv")):
            with path.open(newline="") as handle:
                rows = csv.DictReader(handle, delimiter="\t")
                if missing := [c for c in _RECORD_COLUMNS if c not in (rows.fieldnames or ())]:
                    raise DpvaeError(
                        f"{path}: not a benchmark record of `plan --record` (no column {', '.join(missing)}); "
                        "a *.tsv under benchmarks/measured/ must be one (write other measurements as *.log)"
                    )
                for row in rows:
                    if row["scale"] == self.settings.rules.scale:
                        key = _tuples(json.loads(row["key"]))
                        measurement = Measurement(float(row["seconds"]), row["device"])
                        self.add(row["rule"], row["group"], row["ident"], key, measurement)
        self.logged = read_device_logs(root)

    def add_recorded(self, reproductions_dir: Path | None = None) -> None:
        """Training times of recorded paper-scale runs, unless a benchmark file measured the same run."""
        frame = read_all(reproductions_dir)
        frame = frame[(frame["scale"] == "paper") & frame["wall_s"].notna() & frame["seed"].notna()]
        frame = frame.sort_values("date").drop_duplicates(  # one row per run: two papers' "real" on MNIST are two
            ["paper", "dataset", "variant", "epsilon", "seed", "setting"], keep="last"
        )
        for (command, paper), rows in frame.groupby(["command", "paper"]):
            rules = self._overlay_rules(command)
            if rules is None:
                continue
            papers_runs = {  # the row's paper's runs only: P3GM's "real" on mnist-p3gm is not DP²-VAE's on mnist
                run
                for name, experiment in rules.config.trained().items()
                if experiment.paper == paper
                for run in experiment_runs(rules.config, name)
            }
            runs: dict[tuple, list[Run]] = {}
            for run in papers_runs:
                runs.setdefault((run.variant, run.eps, run.seed, published_dataset(run.dataset)[0]), []).append(run)
            for row in rows.itertuples():
                eps = "inf" if row.epsilon != row.epsilon else format_eps(row.epsilon)
                settings = set(str(row.setting).split(";"))
                found = [
                    r
                    for r in runs.get((row.variant, eps, int(row.seed), cell_dataset(row.dataset)), [])
                    if published_dataset(r.dataset)[1] in settings | {""}
                ]
                if len(found) != 1:
                    continue
                wildcards = {
                    "dataset": found[0].dataset,
                    "variant": found[0].variant,
                    "eps": eps,
                    "seed": str(found[0].seed),
                }
                spec = rules.spec(**wildcards)
                key = self.settings.key(_TRAIN_RULE, wildcards, spec)
                if key is not None:
                    measurement = Measurement(float(row.wall_s), str(row.device))
                    ident = _ident(_TRAIN_RULE, wildcards, "")
                    self.add(_TRAIN_RULE, self.settings.group(wildcards, spec), ident, key, measurement)

    def estimate(self, job: DagJob, machine: str, device_setting: str) -> Estimate:
        """The job's estimate on `machine` (GPU_MACHINE or CPU_MACHINE) under config `device` (module docstring)."""
        uses_gpu = machine == GPU_MACHINE and device_setting != "cpu"
        wanted = ("cuda",) if uses_gpu else ()
        if not (uses_gpu and job.gpu):
            wanted += _CPUS
        pools = [("measured", self.by_key.get(self.settings.key(job.rule, job.wildcards), {}))]
        if self.settings.rules.scale != "paper":
            pools += [
                ("similar", self.by_group.get((job.rule, self.settings.group(job.wildcards)), {})),
                ("rule", self.by_rule.get(job.rule, {})),
            ]
        for source, found in pools:
            for device in wanted:
                chosen = {k: m for k, m in found.items() if device_class(m.device) == device}
                if chosen:
                    return Estimate(
                        statistics.median(m.seconds for m in chosen.values()),
                        source,
                        uses_gpu and (job.gpu or device == "cuda"),
                        tuple(sorted({m.device or "device not recorded" for m in chosen.values()})),
                        frozenset(chosen),
                    )
        work = self.settings.work(job)
        for device in wanted if work is not None else ():
            if rates := rates_for(work, self.logged, device):
                return Estimate(
                    seconds_of(work, rates),
                    "logged",
                    device == "cuda",
                    tuple(sorted({r.device for r in rates})),
                    frozenset(r.source for r in rates),
                )
        if uses_gpu and job.gpu:  # a CPU declaration is no GPU's time
            return Estimate(None, "no GPU rate", True, declared=job.declared)
        if job.declared is not None and job.declared.device == DeviceClass.CPU_REFERENCE:
            return Estimate(job.declared.minutes * 60, "declared", declared=job.declared)
        return Estimate(None, "none")

    def _record(self, bench: BenchmarkFile) -> tuple[str, RunSpec | None, dict | None]:
        """(device, run spec, metric options) as the job's JSON outputs or its run's train.json record them (no
        spec where the recorded one is not a run spec of this code's)."""
        paths = [self.workdir / p for p in bench.outputs if p.endswith(".json")]
        if run := _run_of(bench.wildcards):
            paths.append(train_record(self.workdir / run.path(self.settings.rules.scale)))
        device, spec, options = "", None, None
        for path in paths:
            record = self._read_json(path)
            device = device or str(record.get("device_name") or record.get("device") or "")
            spec = spec or record.get("spec")
            options = options if options is not None else record.get("options")
        try:
            return device, None if spec is None else RunSpec.from_dict(spec), options
        except ConfigError:
            return device, None, options

    def _read_json(self, path: Path) -> dict:
        if path not in self._json:
            try:
                loaded = json.loads(path.read_text())
            except (OSError, ValueError):
                loaded = {}
            self._json[path] = loaded if isinstance(loaded, dict) else {}
        return self._json[path]

    def _overlay_rules(self, command: str) -> Rules | None:
        """The configuration a recorded run was trained under: config.yaml + the campaign overlay its
        command names, read where it lives now (`campaign_overlay`; None if that file is gone or no longer valid)."""
        match = CAMPAIGN_OVERLAY.search(command)
        name = campaign_overlay(match.group(0)) if match else ""
        if name not in self._overlays:
            files = [REPO_ROOT / "config.yaml"] + ([REPO_ROOT / name] if name else [])
            try:
                self._overlays[name] = Rules(read_config(files), REPO_ROOT)
            except DpvaeError:
                self._overlays[name] = None
        return self._overlays[name]


def _run_of(wildcards: dict[str, str]) -> Run | None:
    """The run a job works on (its rule has the run's wildcards), else None."""
    if not _RUN_WILDCARDS <= wildcards.keys():
        return None
    return Run(wildcards["dataset"], wildcards["variant"], wildcards["eps"], int(wildcards["seed"]))


def _tuples(value):
    """JSON lists back to the tuples a settings key is made of."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _ident(rule: str, wildcards: dict[str, str], path: str) -> str:
    """One measured job: rule, run id and metric for a run's job (its benchmark file and its recorded row are
    one measurement), else the benchmark file."""
    if run := _run_of(wildcards):
        return ":".join([rule, run.id, wildcards.get("metric", "")])
    return path


def _benchmark_seconds(path: Path) -> float | None:
    """Mean wall seconds (column `s`) of a Snakemake benchmark file; None if unreadable."""
    try:
        with path.open(newline="") as handle:
            values = [float(row["s"]) for row in csv.DictReader(handle, delimiter="\t")]
    except (OSError, KeyError, TypeError, ValueError):
        return None
    return statistics.fmean(values) if values else None


# -- the plan --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CostPlan:
    targets: tuple[str, ...]
    configfiles: tuple[str, ...]
    scale: str
    device: str
    jobs: list[JobCost]
    rules: tuple[str, ...]  # the workflow's rules in the order they are defined (rows follow it)
    benchmarked: tuple[Record, ...] = ()  # the working directory's benchmark files (`to_records`)
    cores: int = BUILD_CORES  # the build's `--cores` (`build_seconds`)
    startup_s: float = 0.0  # Snakemake's start-up: its imports and this DAG, as timed while planning (`timed`)
    warmup_s: float = 0.0  # the warm worker's imports, paid once by a build that starts one, as timed (`timed`)

    def totals(self, jobs: Sequence[JobCost] | None = None) -> dict:
        """Counts and hours of `jobs` (default: all): on the GPU machine GPU- and CPU-hours, on the 2-core machine
        hours (impractical jobs left out); how many jobs to run each source estimates, and how many are
        impractical, per machine."""
        jobs = self.jobs if jobs is None else jobs
        todo = [j for j in jobs if j.estimates]
        gpu = [j.estimates[GPU_MACHINE] for j in todo]
        cpu = [j.estimates[CPU_MACHINE] for j in todo]
        return {
            "jobs": len(jobs),
            "built": len(jobs) - len(todo),
            "to_run": len(todo),
            GPU_MACHINE: {
                "gpu_hours": _hours(e for e in gpu if e.on_gpu),
                "cpu_hours": _hours(e for e in gpu if not e.on_gpu),
            },
            CPU_MACHINE: {"hours": _hours(cpu)},
            "sources": {
                machine: {s: sum(e.source == s for e in ests) for s in SOURCES}
                | {"impractical": sum(e.impractical for e in ests)}
                for machine, ests in ((GPU_MACHINE, gpu), (CPU_MACHINE, cpu))
            },
        }

    def build_seconds(self, cores: int, machine: str = CPU_MACHINE) -> float:
        """The build's wall time on `machine` running `cores` jobs at once (Snakemake's `--cores` with one core a
        job, as under `--max-threads 1`): each job still to run starts, in the DAG's order, once the jobs it needs
        are done and a core is free, and takes its estimate (a greedy list schedule; a job without an estimate, or
        an impractical one, takes none)."""
        seconds = [
            0.0 if not c.estimates or c.estimates[machine].impractical else c.estimates[machine].seconds or 0.0
            for c in self.jobs
        ]
        waiting = [len(c.job.needs) for c in self.jobs]
        needed_by: dict[int, list[int]] = {}
        for i, cost in enumerate(self.jobs):
            for n in cost.job.needs:
                needed_by.setdefault(n, []).append(i)
        ready = [i for i, w in enumerate(waiting) if w == 0]  # a heap: the DAG's order
        heapq.heapify(ready)
        running: list[tuple[float, int]] = []  # (finish, job)
        now = 0.0
        while ready or running:
            while ready and len(running) < cores:
                i = heapq.heappop(ready)
                heapq.heappush(running, (now + seconds[i], i))
            now, done = heapq.heappop(running)
            for i in needed_by.get(done, ()):
                waiting[i] -= 1
                if waiting[i] == 0:
                    heapq.heappush(ready, i)
        return now

    def rows(self) -> list[dict]:
        """One row per rule and group (metric or method, dataset), rules in the workflow's order."""
        grouped: dict[tuple[str, str], list[JobCost]] = {}
        for cost in self.jobs:
            grouped.setdefault((cost.job.rule, cost.group), []).append(cost)
        rows = []
        for (rule, group), jobs in grouped.items():
            ests = {m: [j.estimates[m] for j in jobs if j.estimates] for m in (GPU_MACHINE, CPU_MACHINE)}
            rows.append(
                {
                    "rule": rule,
                    "group": group,
                    **self.totals(jobs),
                    "estimate": {m: describe(e) for m, e in ests.items()},
                }
            )
        order = {rule: i for i, rule in enumerate(self.rules)}
        return sorted(rows, key=lambda r: (order.get(r["rule"], len(order)), r["group"]))

    def per_target(self) -> list[dict]:
        return [{"target": t, **self.totals([j for j in self.jobs if t in j.job.targets])} for t in self.targets]

    def to_markdown(self) -> str:
        """One row per target and their total (every job once), then the build's jobs on `cores` (no start-up:
        timed, it would change the bytes): the markdown table of docs/operations.md and README.md."""
        lines = [
            "| target | jobs to run | one H100/H200: GPU-h | + CPU-h | 2-core CPU: h | estimates (jobs) |",
            "|---|--:|--:|--:|--:|---|",
        ]
        for name, total in [*((f"`{t['target']}`", t) for t in self.per_target()), ("**all**", self.totals())]:
            _, _, todo, gpu, cpu, two = _counts(total)
            lines.append(f"| {name} | {todo} | {gpu} | {cpu} | {two} | {_sources_text(total)} |")
        jobs = _duration(self.build_seconds(self.cores))
        lines += ["", f"Build on the 2-core machine, --cores {self.cores}: {jobs} of jobs after Snakemake's start-up."]
        return "\n".join(lines)

    def to_records(self, unrecorded: str = "") -> str:
        """The working directory's benchmark files as a benchmark record (TSV, sorted), for
        benchmarks/measured/<machine>-<date>/<name>.tsv: later plans at this scale take them as measured, per
        device. A job whose outputs name no device is filed under `unrecorded` (`plan --record`: this machine's
        CPU where it has no GPU, so that every job of the build ran on it)."""
        rows = sorted(r.row(unrecorded) for r in self.benchmarked)
        return "".join("\t".join(row) + "\n" for row in [_RECORD_COLUMNS, *rows])

    def to_dict(self) -> dict:
        return {
            "targets": list(self.targets),
            "configfiles": list(self.configfiles),
            "scale": self.scale,
            "device": self.device,
            "total": self.totals(),
            "per_target": self.per_target(),
            "rows": self.rows(),
            "build": {
                "machine": CPU_MACHINE,
                "cores": self.cores,
                "jobs_s": round(self.build_seconds(self.cores), 1),
                "startup_s": round(self.startup_s, 1),
                "warmup_s": round(self.warmup_s, 1),
            },
        }

    def to_text(self) -> str:
        total = self.totals()
        config = " + ".join(["config.yaml", *self.configfiles])
        named = (
            ", ".join(self.targets)
            if 0 < len(self.targets) <= 3
            else (f"{len(self.targets)} targets" if self.targets else "the default target")
        )
        lines = [
            f"Cost plan of {named} at scale {self.scale} ({config}), device: {self.device}: "
            f"{total['jobs']} jobs, {total['built']} built, {total['to_run']} to run.",
            "Hours: job wall time summed, one job after another. GPU machine: one H100/H200 (GPU-h for jobs",
            "that ask for a GPU or were measured on one, CPU-h for the rest). 2-core: a 2-core CPU machine.",
            f"Impractical: over {IMPRACTICAL_DAYS} days a job on that machine (not summed).",
        ]
        if self.scale != "paper":
            lines.append(f"Declared runtimes are for paper scale: at scale {self.scale} they are ceilings.")
        lines.append("")
        header = ("rule", "group", "jobs", "built", "to run", "GPU-h", "CPU-h", "2-core h", "estimate from")
        body = [(r["rule"], r["group"], *_counts(r), _estimate_text(r["estimate"])) for r in self.rows()]
        body.append(("total", "", *_counts(total), _sources_text(total)))
        lines += _table(header, body)
        jobs_s = self.build_seconds(self.cores)
        lines += [
            "",
            f"Build on the 2-core machine with --cores {self.cores}: about "
            f"{_duration(self.startup_s + self.warmup_s + jobs_s)}: Snakemake's start-up {_duration(self.startup_s)} "
            "(its imports and this DAG, timed here now),",
            f"the warm worker's imports {_duration(self.warmup_s)} (timed here now; paid once by a build of "
            f"local_worker or more jobs, none else), then {_duration(jobs_s)} of jobs (one core a job, each after",
            "the jobs it needs; jobs not estimated count none).",
        ]
        if len(self.targets) > 1:
            lines += ["", "Per target (a job that several targets need is counted in each):", ""]
            lines += _table(
                ("target", "jobs", "built", "to run", "GPU-h", "CPU-h", "2-core h", "estimates"),
                [(t["target"], *_counts(t), _sources_text(t)) for t in self.per_target()],
            )
        return "\n".join(lines)


PLAN_BEGIN, PLAN_END = "<!-- plan:begin -->", "<!-- plan:end -->"


def with_plan(text: str, plan: CostPlan, name: str) -> str:
    """A page's text (file `name`) with the block between the plan markers replaced by `plan`'s markdown."""
    if PLAN_BEGIN not in text or PLAN_END not in text:
        raise ConfigError(f"{name}: no {PLAN_BEGIN} ... {PLAN_END} block to update")
    head, rest = text.split(PLAN_BEGIN, 1)
    _, tail = rest.split(PLAN_END, 1)
    command = ["python -m dpvae plan", *(f"--configfile={f}" for f in plan.configfiles), "--markdown", *plan.targets]
    said = f"`{' '.join(command)}`"
    return f"{head}{PLAN_BEGIN}\n{said}, at scale {plan.scale}:\n\n{plan.to_markdown()}\n{PLAN_END}{tail}"


def cost_plan(
    targets: Sequence[str],
    configfiles: Sequence[str] = (),
    workdir: str | Path = ".",
    reproductions_dir: Path | None = None,
    measured_dir: Path = DEVICE_LOGS,
    cores: int = BUILD_CORES,
    timed: bool = True,
) -> CostPlan:
    """The jobs `targets` need under config.yaml + `configfiles` in `workdir`, each built or estimated
    (measurements: `workdir`'s benchmark files, then `measured_dir`'s records and logs, then at paper scale
    `reproductions_dir`'s recorded runs); `timed`: Snakemake's start-up and the worker's imports timed here (a
    fresh Python's imports; none in an output whose bytes must not depend on the clock)."""
    started = time.perf_counter()
    config = read_config([REPO_ROOT / "config.yaml", *configfiles])
    rules = Rules(config, REPO_ROOT)  # validates: a bad config is one message
    rules.check_targets(targets, built_only=False)  # a misspelt item names the valid ones
    dag: Dag = snakemake_dag(targets, configfiles, workdir)
    dag_s = time.perf_counter() - started
    settings = Settings(rules)
    measured = Measurements(settings, Path(workdir))
    measured.add_benchmarks(dag.benchmarks)
    measured.add_committed(measured_dir)
    if rules.scale == "paper":
        measured.add_recorded(reproductions_dir)
    device = rules.config.device
    costs = [
        JobCost(
            job,
            settings.group(job.wildcards),
            {} if job.built else {m: measured.estimate(job, m, device) for m in (GPU_MACHINE, CPU_MACHINE)},
        )
        for job in dag.jobs
    ]
    return CostPlan(
        tuple(targets),
        tuple(str(f) for f in configfiles),
        rules.scale,
        device,
        costs,
        dag.rules,
        tuple(measured.benchmarked),
        cores,
        *(_timed_imports(dag_s, rules.config, sum(not c.job.built for c in costs)) if timed else (0.0, 0.0)),
    )


def _timed_imports(dag_s: float, config: Config, to_run: int) -> tuple[float, float]:
    """(Snakemake's start-up, the worker's warm-up) of a build of `to_run` jobs, timed now in a fresh Python:
    Snakemake's and the workflow's imports plus `dag_s` (this DAG, as built while planning), and the warm
    worker's imports (`dpvae.worker.preload`) where the build starts one (config `local_worker`, as the Snakefile
    decides), else none. Its jobs' records exclude them (a worker's fork starts in milliseconds)."""
    code = (
        "import time; t = time.perf_counter(); import snakemake.api, dpvae.workflow; a = time.perf_counter() - t; "
        "from dpvae.worker import preload; preload(); print(a, time.perf_counter() - t - a)"
    )
    paths = [str(REPO_ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    imports_s, warmup_s = (float(v) for v in done.stdout.split()[-2:])
    wanted = int(config.local_worker or 0)
    return dag_s + imports_s, warmup_s if wanted and to_run >= wanted else 0.0


# -- text ------------------------------------------------------------------------------------------------


_MEASURED_TEXT = {"measured": "measured", "similar": "similar jobs measured", "rule": "jobs of the rule measured"}


def describe(estimates: Sequence[Estimate]) -> str:
    """Where a row's estimates come from: 'measured: 3 runs on cuda: NVIDIA H200', 'declared 120 min for
    cpu-reference at paper scale', 'no GPU rate (declared 26 min for cpu-reference at paper scale)', ...;
    '(n jobs)' after each when mixed."""
    parts = []
    for source in SOURCES:
        chosen = [e for e in estimates if e.source == source]
        if not chosen:
            continue
        runs = frozenset().union(*(e.runs for e in chosen))
        devices = ", ".join(sorted({d for e in chosen for d in e.devices}))
        minutes = sorted({round(e.declared.minutes) for e in chosen if e.declared})
        span = f"{minutes[0]}" if len(minutes) == 1 else f"{minutes[0]}-{minutes[-1]}" if minutes else ""
        declared_for = {f"{e.declared.device} at {e.declared.scale} scale" for e in chosen if e.declared}
        declared = f"declared {span} min for {', '.join(sorted(declared_for))}" if minutes else ""
        if source in _MEASURED_TEXT:
            text = f"{_MEASURED_TEXT[source]}: {len(runs)} run{'s' * (len(runs) != 1)} on {devices}"
        elif source == "logged":
            text = f"device log rate on {devices} ({', '.join(sorted(runs))})"
        elif source == "declared":
            text = declared
        elif source == "no GPU rate":
            text = f"no GPU rate ({declared})" if declared else "no GPU rate"
        else:
            text = "no runtime declared"
        parts.append((len(chosen), text))
    if impractical := sum(e.impractical for e in estimates):
        parts.append((impractical, f"impractical: over {IMPRACTICAL_DAYS} days a job"))
    if len(parts) == 1 and not impractical:
        return parts[0][1]
    return "; ".join(f"{text} ({n} jobs)" for n, text in parts)


def _estimate_text(estimate: dict[str, str]) -> str:
    gpu, cpu = estimate[GPU_MACHINE], estimate[CPU_MACHINE]
    return gpu if gpu == cpu else f"GPU machine: {gpu} | 2-core: {cpu}"


_COUNT_TEXT = {"no GPU rate": "without a GPU rate", "none": "not estimated"}


def _sources_text(total: dict) -> str:
    """'4 measured, 30 declared, 2 without a GPU rate, 20 not estimated' (the GPU machine's; the 2-core
    machine's after it where they differ). Measured and declared are always named."""

    def counts(machine: str) -> str:
        found = total["sources"][machine]
        named = [s for s in (*SOURCES, "impractical") if found[s] or s in ("measured", "declared")]
        return ", ".join(f"{found[s]} {_COUNT_TEXT.get(s, s)}" for s in named)

    gpu, cpu = counts(GPU_MACHINE), counts(CPU_MACHINE)
    return gpu if gpu == cpu else f"{gpu} (2-core: {cpu})"


def _counts(total: dict) -> tuple[str, ...]:
    return (
        str(total["jobs"]),
        str(total["built"]),
        str(total["to_run"]),
        _h(total[GPU_MACHINE]["gpu_hours"]),
        _h(total[GPU_MACHINE]["cpu_hours"]),
        _h(total[CPU_MACHINE]["hours"]),
    )


def _hours(estimates: Iterable[Estimate]) -> float:
    return round(sum(e.seconds or 0.0 for e in estimates if not e.impractical) / 3600, 3)


def _duration(seconds: float) -> str:
    """'45 s', '12.3 min', '4.2 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:,.1f} h"


def _h(hours: float) -> str:
    """Hours to 0.1 h, or to 0.01 h under 0.1 (a small build)."""
    return "-" if hours == 0 else "<0.01" if hours < 0.005 else f"{hours:.2f}" if hours < 0.095 else f"{hours:,.1f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns aligned: text left, numbers right; the last column unpadded."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    numeric = [all(re.fullmatch(r"[-<\d.,]+", str(r[i])) for r in rows) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        out = [str(c).rjust(w) if num else str(c).ljust(w) for c, w, num in zip(cells[:-1], widths, numeric)]
        return "  ".join([*out, str(cells[-1])]).rstrip()

    return [line(header), line(["-" * w for w in widths[:-1]] + ["-" * len(header[-1])]), *map(line, rows)]
