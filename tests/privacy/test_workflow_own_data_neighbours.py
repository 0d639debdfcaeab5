"""Your own data through the workflow: one record never shapes what an experiment's build writes (issue 62).

A user declares a dataset under the config key `datasets:` and builds an experiment with Snakemake; its private
runs are releases (secret randomness, `prepare --secret`). This test builds two tiny such experiments (PrivBayes
and DP-GM on a declared table, DP²-VAE at two ε on declared images, each with a test file: the runs, their samples
and the experiments' tables) for D, for D' (in each dataset one training record replaced by an extreme one: a value
beyond its bounds, a new category, an undeclared label; a white image of an undeclared class) and for D_test (those
records in the test files), each in the same working directory, with every job's secret key pinned to
one seed file (a `sitecustomize` on PYTHONPATH calls `randomness.use_seed_file` in every process Snakemake starts:
the secret noise is then the same in the three builds, so bytes can be compared). Every file the build writes must be
byte-identical for D and D' except, and for D and D_test except (samples included):

* the data's own copies: the user's files (`mydata/`), `data/raw/<id>/`, the prepared arrays and the data root's
  key (`data/.dataset-key`), and the keyed identity and checksums that name them (replaced by placeholders);
* for D' only, the ledgered outputs: each run's samples and the model files its method releases (`released`);
* Snakemake's own bookkeeping (`.snakemake/`: its start times, locks and its record of each job's inputs) and the
  jobs' benchmarks (`benchmarks/*.tsv`: wall times and memory), which hold no value of the data;
* wall times and the machine in the runs' `train.json` (`support.neighbours.VOLATILE_PROVENANCE`), and in log
  lines their time stamps, rates (records/s), elapsed times and ETAs and the process ids (`WALL_CLOCK`).

No job fails, and no file outside the data's copies names the extreme record. DP²-VAE's first stage (K non-private
encoders of the private images and their partition) is a private working file: made once as a release's, loaded by
both runs, deleted once they have trained; the finished build then plans nothing.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from dpvae.methods.registry import METHODS
from dpvae.paths import REPO_ROOT
from support.neighbours import VOLATILE_PROVENANCE
from support.own_releases import CASES, IMAGE_DECLARATION, TABLE_DECLARATION
from support.workflow_runs import snakemake

CASE = CASES["privbayes-table"]  # the table and its extreme record
IMAGES = CASES["dp2vae-image"]  # the images and theirs
VARIANTS = {
    "privbayes": {"histogram_bins": 5},
    "dp-gm": {"epochs": 1, "batch_size": 50, "hidden": 16, "rff_dim": 16, "clusters": 2, "kmeans_iters": 2},
}
IMAGE_EPSILONS = (5, 10)  # two runs load one first stage
OVERLAY = {
    "scale": "own",
    "local_worker": 1,  # jobs fork from one warm process (seconds of imports each otherwise)
    "datasets": {"mine": {"path": "mydata/data.csv", "test_path": "mydata/test.csv", "label": "label",
                          **TABLE_DECLARATION},
                 "pics": {"path": "mydata/pics.npz", "test_path": "mydata/pics-test.npz", **IMAGE_DECLARATION}},
    "variants": {name: {"method": name, "params": params} for name, params in VARIANTS.items()}
                | {"dp2vae": {"method": "dp2vae", "params": IMAGES.params}},
    "experiments": {"walk": {"description": "the neighbour walk", "datasets": ["mine"], "variants": list(VARIANTS),
                             "epsilons": [10], "seeds": 1, "metrics": []},
                    "images": {"description": "the neighbour walk on images", "datasets": ["pics"],
                               "variants": ["dp2vae"], "epsilons": list(IMAGE_EPSILONS), "seeds": 1,
                               "metrics": []}},
}  # fmt: skip
#: the experiments' tables and each run's samples (which no metric here reads)
TARGETS = (
    "results/own/tables/walk/mine.csv",
    "results/own/tables/images/pics.csv",
    *(f"results/own/runs/mine/{name}/eps10/seed0/samples.npz" for name in VARIANTS),
    *(f"results/own/runs/pics/dp2vae/eps{eps}/seed0/samples.npz" for eps in IMAGE_EPSILONS),
)
#: what may differ for any neighbour: the data's copies, Snakemake's bookkeeping, the jobs' wall times
DATA_COPIES = ("mydata/*", "data/raw/*", "data/prepared/*/train.npz", "data/prepared/*/test.npz", "data/.dataset-key")
BOOKKEEPING = (".snakemake/*", "*/benchmarks/*.tsv")
#: the ledgered outputs of a run (D' only): its samples and what its method's mechanisms release
RELEASED = ("results/own/runs/*/samples.npz",) + tuple(
    f"results/own/runs/{dataset}/{name}/*/model/{pattern}"
    for dataset, names in (("mine", VARIANTS), ("pics", ["dp2vae"]))
    for name in names
    for pattern in METHODS.get(name).released
)
#: what says when or how fast a job ran, or which process it was (log lines' times, rates, elapsed times, pids)
WALL_CLOCK = (
    # a log line's time and level (a job forked by the warm worker and one in its own process format them apart)
    (
        rb"(?m)^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ INFO dpvae\.progress: |\d\d/\d\d/\d{4} \d\d:\d\d:\d\d:INFO:)",
        b"<time> INFO ",
    ),
    (rb"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?", b"<time>"),
    (rb"[0-9.e+-]+ (?:[a-z]+ )*[a-z]+/s\b", b"<rate>"),  # "12.5 records/s", "6.82 encoder steps/s"
    (rb"(elapsed|ETA) [0-9.hms]+", rb"\1 <wall time>"),
    (rb"pid \d+", b"pid <pid>"),
    (rb'"seconds": [0-9.]+', b'"seconds": <wall time>'),
)
#: makes every Python process of the build take its secret key from the seed file the test names
HOOK = """import os
if os.environ.get("DPVAE_WALK_SEED_FILE"):
    from pathlib import Path
    from dpvae import randomness
    randomness.use_seed_file(Path(os.environ["DPVAE_WALK_SEED_FILE"]))
"""


def _build(tmp_path: Path, name: str, data: dict[str, object]) -> Path:
    """The experiments built in tmp_path/work (the same path for every variant) from `data` (file name under
    mydata/ -> records), then moved to tmp_path/name."""
    work = tmp_path / "work"
    (work / "mydata").mkdir(parents=True)
    for file, records in data.items():
        (CASE if file.endswith(".csv") else IMAGES).write(records, work / "mydata" / file)
    (work / "overlay.yaml").write_text(yaml.safe_dump(OVERLAY))
    result = snakemake("--cores", "2", "--configfile=overlay.yaml", *TARGETS, cwd=work)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.count("localrule stage1_release:") == 1, "one first stage, as a release's"
    return Path(shutil.move(work, tmp_path / name))


def _files(work: Path, exempt: tuple[str, ...]) -> dict[str, bytes]:
    """Every file of a build but the exempt ones, with the keyed identity, checksums, provenance and times
    replaced by placeholders."""
    keyed = {}
    for meta_path in sorted((work / "data" / "prepared").glob("*/meta.json")):
        meta = json.loads(meta_path.read_text())
        keyed[meta["identity"]["hmac_sha256"]] = "<keyed identity>"
        keyed |= {digest: "<checksum of a prepared split>" for digest in meta["files_sha256"].values()}
    found = {}
    for path in sorted(p for p in work.rglob("*") if p.is_file()):
        name = str(path.relative_to(work))
        if any(fnmatch.fnmatch(name, pattern) for pattern in exempt):
            continue
        text = path.read_bytes()
        if path.name == "train.json":
            record = json.loads(text)
            text = json.dumps({k: v for k, v in record.items() if k not in VOLATILE_PROVENANCE}).encode()
            keyed[record["spec_sha256"]] = "<hash of the keyed spec>"
        found[name] = text
    for name, text in found.items():
        for pattern, placeholder in WALL_CLOCK:
            text = re.sub(pattern, placeholder, text)
        for value, placeholder in keyed.items():
            text = text.replace(value.encode(), placeholder.encode())
        found[name] = text
    return found


def _differing(a: dict[str, bytes], b: dict[str, bytes]) -> set[str]:
    return {name for name in a.keys() | b.keys() if a.get(name) != b.get(name)}


@pytest.fixture
def pinned_key(tmp_path, monkeypatch) -> Path:
    """Every process of the builds takes its key from one seed file (`HOOK` as the sitecustomize on PYTHONPATH)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    (tmp_path / "seed").write_bytes(b"the same secret for D, D' and D_test")
    monkeypatch.setenv("PYTHONPATH", f"{hook}:{REPO_ROOT / 'src'}")
    monkeypatch.setenv("DPVAE_WALK_SEED_FILE", str(tmp_path / "seed"))
    return tmp_path / "seed"


def test_one_record_never_shapes_what_an_own_data_build_writes(tmp_path, pinned_key):
    case = {"data.csv": CASE, "test.csv": CASE, "pics.npz": IMAGES, "pics-test.npz": IMAGES}
    sizes = {"data.csv": CASE.sizes[0], "test.csv": CASE.sizes[1], "pics.npz": IMAGES.sizes[0],
             "pics-test.npz": IMAGES.sizes[1]}  # fmt: skip
    data = {file: case[file].records(n, seed) for seed, (file, n) in enumerate(sizes.items())}

    def with_extreme(*files: str) -> dict[str, object]:
        return data | {file: case[file].replaced(data[file], 0, case[file].extreme) for file in files}

    d = _build(tmp_path, "d", data)
    d2 = _build(tmp_path, "d2", with_extreme("data.csv", "pics.npz"))
    dt = _build(tmp_path, "dt", with_extreme("test.csv", "pics-test.npz"))
    always = DATA_COPIES + BOOKKEEPING
    assert _differing(_files(d, always + RELEASED), _files(d2, always + RELEASED)) == set()
    assert _differing(_files(d, always), _files(dt, always)) == set()  # a test record shapes nothing, samples included
    for eps in IMAGE_EPSILONS:
        log = (d / f"logs/results/own/runs/pics/dp2vae/eps{eps}/seed0/train.log").read_text()
        assert "encoders loaded from results/own/stage1/" in log, log[-2000:]
    left = sorted(p.name for p in (d / "results" / "own" / "stage1").rglob("*") if p.is_file())
    assert left == ["stage1.tsv"], f"the first stage's files outlive its runs: {left}"  # only its benchmark
    ledgers = sorted(d.glob("results/own/runs/*/*/*/*/privacy.json"))
    assert len(ledgers) == len(VARIANTS) + len(IMAGE_EPSILONS)
    assert all(
        json.loads(p.read_text())["randomness"] == "secret (a seed file the user keeps; never copied)" for p in ledgers
    )
    for build in (d, d2, dt):
        for path in (p for p in build.rglob("*") if p.is_file() and not p.is_relative_to(build / "mydata")):
            if "raw" in path.parts:
                continue
            text = path.read_bytes()
            assert b"purple" not in text and b"HIV+" not in text and b"7777777" not in text, path
    d.rename(tmp_path / "work")  # where it was built: its paths as Snakemake recorded them
    again = snakemake("-n", "--configfile=overlay.yaml", *TARGETS, cwd=tmp_path / "work")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stdout[-2000:]
