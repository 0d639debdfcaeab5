"""`plan` predicts a build it has not seen: a small DAG (P3GM's tabular experiment on Adult at smoke scale, two
of its methods, one seed: fetch, prepare, train, sample, evaluate, aggregate, combine; ~17 jobs) is planned in an
empty directory from the committed smoke records alone (`benchmarks/measured/*/*.tsv`, `plan --record`), then
built there on one core; the build's wall time must be within 2x of the plan's, either way."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dpvae.paths import REPO_ROOT, experiment_table
from dpvae.plan import CPU_MACHINE, cost_plan
from support import workflow_runs

pytestmark = [pytest.mark.workflow, pytest.mark.quiet]

SMOKE = REPO_ROOT / "tests" / "config" / "smoke.yaml"
TARGET = experiment_table("smoke", "p3gm_tabular", "adult")
# Two methods of the experiment, and the warm worker the recorded build ran its jobs under (a build of 20+ jobs
# starts one; a job without it also starts Python and imports torch)
OVERLAY = "local_worker: 1\nexperiments:\n  p3gm_tabular: {variants: [privbayes, real]}\n"
WITHIN = 2.0


def test_the_plan_of_a_small_build_from_empty_is_within_2x_of_the_build(
    tmp_path: Path, mirror: Path, request: pytest.FixtureRequest
) -> None:
    """Opt-in: a timing check belongs beside a known load. The committed smoke record
    (benchmarks/measured/cpu-2026-12-02/smoke-all.tsv) is a quiet build of 2 Dec 2026; against it this DAG built
    in 19.3 s for a plan of 18.3 s (1.06x, one other process at nice 19). Run it as `pytest -m quiet`; it fails
    outside 2x either way."""
    if "quiet" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("opt-in: run with `pytest -m quiet` (the committed record's rates were measured under load)")
    work = tmp_path / "work"
    work.mkdir()
    overlay = tmp_path / "small.yaml"
    overlay.write_text(OVERLAY)
    plan = cost_plan([TARGET], [SMOKE, overlay], work, cores=1)
    to_run = [c for c in plan.jobs if c.estimates]
    assert len(to_run) == len(plan.jobs) > 10, "from empty: every job to run"
    sources = {c.job.rule: c.estimates[CPU_MACHINE].source for c in to_run}
    assert set(sources.values()) <= {"measured", "similar", "rule"}, f"not from a smoke measurement: {sources}"
    predicted = plan.startup_s + plan.warmup_s + plan.build_seconds(1)

    started = time.monotonic()
    built = workflow_runs.snakemake(
        "--cores", "1", "--configfile", str(SMOKE), str(overlay), "--", TARGET, cwd=work, mirror=mirror, timeout=900
    )
    measured = time.monotonic() - started
    assert built.returncode == 0, built.stderr[-3000:]
    assert (work / TARGET).is_file()
    print(f"plan {predicted:.1f} s, build {measured:.1f} s, ratio {measured / predicted:.2f}")
    assert 1 / WITHIN <= measured / predicted <= WITHIN, (
        f"plan {predicted:.0f} s (start-up {plan.startup_s:.0f} s, worker {plan.warmup_s:.0f} s), "
        f"build {measured:.0f} s"
    )
