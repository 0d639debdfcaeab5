"""Snakemake's own DAG of some targets as plain records: the jobs they need, and which are built already.

`snakemake_dag` reads the workflow as `snakemake --dry-run` does (the dry-run executor, so input functions see
`workflow.dryrun`) and builds its DAG without running the scheduler. Snakemake alone decides what is built
(outputs present, not older than their inputs, no rerun trigger fired), and every rule, a new one included,
is planned with the runtime and GPU its `resources:` declare and the benchmark file it writes.
Snakemake's API stops at "execute"; building the DAG alone uses three of its internals, here and nowhere else.
"""

from __future__ import annotations

import contextlib
import glob
import io
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dpvae.errors import ConfigError, TargetError
from dpvae.paths import CLAIMS, REPO_ROOT, SCORECARD
from dpvae.runtimes import RUNTIME_RESOURCES, Declared

_ERROR_PREFIX = "dpvae: error: "


@dataclass(frozen=True)
class DagJob:
    """One job of the DAG."""

    rule: str
    wildcards: dict[str, str]
    built: bool  # Snakemake would not run it
    declared: Declared | None  # the runtime its rule declares (resources: runtime; dpvae.runtimes), None if none
    gpu: bool  # asks for a GPU (resources: gpu; 0 under `device: cpu`)
    targets: frozenset[str]  # the requested targets that need it
    needs: tuple[int, ...] = ()  # the jobs whose outputs it reads (their places in `Dag.jobs`)


@dataclass(frozen=True)
class BenchmarkFile:
    """A benchmark file on disk that some rule of the workflow writes (any job, in the DAG or not)."""

    rule: str
    wildcards: dict[str, str]
    path: str
    outputs: tuple[str, ...]  # the outputs of the job that wrote it


@dataclass(frozen=True)
class Dag:
    jobs: list[DagJob]
    benchmarks: list[BenchmarkFile]
    rules: tuple[str, ...]  # every rule, in the order the workflow defines them


def snakemake_dag(
    targets: Sequence[str],
    configfiles: Sequence[str | Path] = (),
    workdir: str | Path = ".",
    snakefile: str | Path = REPO_ROOT / "Snakefile",
) -> Dag:
    """The DAG of `targets` (file paths or rule names) under config.yaml + `configfiles`, run in `workdir`.

    A target no rule makes raises TargetError; a workflow that stops while it is read (its one-line
    `dpvae: error:` message) raises ConfigError with that message.
    """
    from snakemake.api import SnakemakeApi
    from snakemake.exceptions import MissingRuleException, RuleException, WorkflowError
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, Quietness, ResourceSettings
    from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry

    quiet = {Quietness.ALL, Quietness.RULES, Quietness.PROGRESS, Quietness.HOST, Quietness.REASON}
    said = io.StringIO()
    try:
        with (
            contextlib.redirect_stderr(said),
            _silenced(logging.getLogger("snakemake")),
            SnakemakeApi(OutputSettings(dryrun=True, quiet=quiet, enable_file_logging=False)) as api,
        ):
            api_workflow = api.workflow(
                resource_settings=ResourceSettings(cores=1),
                config_settings=ConfigSettings(configfiles=[Path(f).resolve() for f in configfiles]),
                snakefile=Path(snakefile),
                workdir=Path(workdir).resolve(),
            )
            api_workflow.dag(DAGSettings(targets=set(targets)))
            workflow = api_workflow._workflow  # internal 1
            workflow._executor_plugin = ExecutorPluginRegistry().get_plugin("dryrun")  # internal 2
            workflow._prepare_dag(forceall=False, ignore_incomplete=True, lock_warn_only=True, nolock=True)
            workflow._build_dag()  # internal 3
            rules = tuple(rule.name for rule in workflow.rules)
            return Dag(_jobs(workflow.dag, targets), _benchmark_files(workflow), rules)
    except SystemExit:  # the Snakefile's stop(): it said why on stderr
        raise ConfigError(_said(said.getvalue()) or "the workflow stopped while it was read") from None
    except MissingRuleException as error:
        missing = re.search(r"No rule to produce (\S+)", str(error))
        raise TargetError(
            f"{missing.group(1) if missing else targets}: no rule makes it; targets are "
            f"figures/<paper>/<item>.pdf, figures/<item>.pdf, {SCORECARD}.pdf, {CLAIMS}.pdf or any file "
            "a rule writes"
        ) from None
    except (RuleException, WorkflowError) as error:  # an ambiguous or cyclic rule, a failing input function
        raise TargetError(_first_line(error)) from None


@contextlib.contextmanager
def _silenced(logger: logging.Logger):
    """No record of `logger` reaches the root logger's handlers (the CLI's) meanwhile."""
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.propagate = propagate


def _jobs(dag, targets: Sequence[str]) -> list[DagJob]:
    wanted: dict[object, set[str]] = {}
    for target in targets or ["<default>"]:
        for job in _target_jobs(dag, target):
            for needed in dag.bfs(dag.dependencies, job):
                wanted.setdefault(needed, set()).add(target)
    jobs = []
    every = list(dag.jobs)
    place = {job: i for i, job in enumerate(every)}
    for job in every:
        resources = dict(job.resources.items())
        declared = [Declared(float(resources[n]), *d) for n, d in RUNTIME_RESOURCES.items() if n in resources]
        jobs.append(
            DagJob(
                rule=job.rule.name,
                wildcards=dict(job.wildcards_dict),
                built=not dag.needrun(job),
                declared=declared[0] if declared else None,
                gpu=bool(resources.get("gpu", 0)),
                targets=frozenset(wanted.get(job, ())),
                needs=tuple(sorted(place[d] for d in dag.dependencies[job] if d in place)),
            )
        )
    return jobs


def _target_jobs(dag, target: str) -> list:
    if target == "<default>":
        return list(dag.targetjobs)
    path = os.path.normpath(target)
    return [
        job
        for job in dag.targetjobs
        if job.rule.name == target or any(os.path.normpath(str(f)) == path for f in job.output)
    ]


def _benchmark_files(workflow) -> list[BenchmarkFile]:
    """Every benchmark file on disk that matches a rule's `benchmark:` pattern (its run's wildcards with it)."""
    from snakemake.io import WILDCARD_REGEX, apply_wildcards

    found = []
    for rule in workflow.rules:
        pattern = rule.benchmark
        if pattern is None or not hasattr(pattern, "regex"):
            continue
        regex = pattern.regex()
        for path in sorted(glob.glob(WILDCARD_REGEX.sub("*", str(pattern)))):
            if match := regex.match(path):
                wildcards = match.groupdict()
                outputs = tuple(apply_wildcards(str(out), wildcards) for out in rule.output)
                found.append(BenchmarkFile(rule.name, wildcards, path, outputs))
    return found


def _said(stderr: str) -> str:
    """The message of the Snakefile's `dpvae: error:` line(s), without the prefix."""
    start = stderr.find(_ERROR_PREFIX)
    return stderr[start + len(_ERROR_PREFIX) :].strip() if start >= 0 else ""


def _first_line(error: Exception) -> str:
    """Snakemake's message in one line: its first line (and the next if the first ends in a colon)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()] or [type(error).__name__]
    return " ".join(lines[:2]) if lines[0].endswith(":") else lines[0]
