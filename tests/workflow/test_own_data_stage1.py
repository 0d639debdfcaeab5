"""DP²-VAE on a user's own images through the workflow (issue 62): its runs are releases, so its first stage (K
non-private encoders of the private data, and the partition they were trained on, both secret to the stage-1 job's
process) is a private working file. Every run that loads it takes its partition from it (a release's train job
cannot draw the same secret partition again), and Snakemake deletes it once every such run has trained (`temp`);
the finished build then plans nothing."""

from __future__ import annotations

import yaml

from support.own_releases import CASES, IMAGE_DECLARATION
from support.workflow_runs import snakemake

CASE = CASES["dp2vae-image"]
EPSILONS = (5, 10)  # two runs load one first stage
OVERLAY = {
    "scale": "own",
    "local_worker": 1,
    "datasets": {"mine": {"path": "mydata/data.npz", **IMAGE_DECLARATION}},
    "variants": {"dp2vae": {"method": "dp2vae", "params": CASE.params}},
    "experiments": {"walk": {"description": "DP2-VAE's first stage in a release", "datasets": ["mine"],
                             "variants": ["dp2vae"], "epsilons": list(EPSILONS), "seeds": 1, "metrics": []}},
}  # fmt: skip
TARGETS = [f"results/own/runs/mine/dp2vae/eps{eps}/seed0/samples.npz" for eps in EPSILONS]


def test_a_releases_first_stage_is_loaded_by_its_runs_then_deleted(tmp_path):
    (tmp_path / "mydata").mkdir()
    CASE.write(CASE.records(CASE.sizes[0], seed=0), tmp_path / "mydata" / "data.npz")
    (tmp_path / "overlay.yaml").write_text(yaml.safe_dump(OVERLAY))
    built = snakemake("--cores", "2", "--configfile=overlay.yaml", *TARGETS, cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-3000:]
    assert built.stderr.count("localrule stage1_release:") == 1, "one first stage, as a release's"
    for eps in EPSILONS:
        log = (tmp_path / f"logs/results/own/runs/mine/dp2vae/eps{eps}/seed0/train.log").read_text()
        assert "encoders loaded from results/own/stage1/" in log, log[-2000:]
    stage1 = tmp_path / "results" / "own" / "stage1"
    left = sorted(p.name for p in stage1.rglob("*") if p.is_file())
    assert left == ["stage1.tsv"], f"the first stage's files outlive its runs: {left}"  # only its benchmark
    again = snakemake("-n", "--configfile=overlay.yaml", *TARGETS, cwd=tmp_path)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stdout[-2000:]
