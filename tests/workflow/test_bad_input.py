"""Bad input, tried as a user would: every probe ends non-zero with a message naming the culprit, before any
job runs. Each configuration probe goes through `python -m dpvae check-config` and through a real
`snakemake` run (which must stop while reading the Snakefile: no data, results or figures appear)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpvae.paths import REPO_ROOT
from support.workflow_runs import snakemake

pytestmark = pytest.mark.workflow
TARGET = "figures/p3gm/table4.pdf"  # read from the configuration alone: cheap if a probe wrongly passed

#: probe id -> (overlay file content, what the message must name)
CONFIG_PROBES = {
    "unknown top-level key": ("epsilon_typo: 1\n", "config key 'epsilon_typo': unknown key"),
    "unknown nested key": ("data:\n  rooot: x\n", "config key 'data.rooot': unknown key"),
    "string for a number": ("delta: small\n", "config key 'delta': 'small' is not of type 'number'"),
    "epsilon 0": (
        "experiments:\n  p3gm_tabular: {epsilons: [0]}\n",
        "config key 'experiments.p3gm_tabular.epsilons[0]': 0",
    ),
    "epsilon -1": (
        "experiments:\n  p3gm_tabular: {epsilons: [-1]}\n",
        "config key 'experiments.p3gm_tabular.epsilons[0]': -1",
    ),
    "delta 0": ("delta: 0\n", "config key 'delta': 0 is less than or equal to the minimum of 0"),
    "delta 1.5": ("delta: 1.5\n", "config key 'delta': 1.5 is greater than or equal to the maximum of 1"),
    "negative seeds": (
        "experiments:\n  p3gm_tabular: {seeds: -1}\n",
        "config key 'experiments.p3gm_tabular.seeds': -1",
    ),
    "negative repeats": (
        "evaluation:\n  image_classifiers: {repeats: -1}\n",
        "config key 'evaluation.image_classifiers.repeats': -1",
    ),
    "batch larger than the training set": (
        "variants:\n  privae: {params: {batch_size: 1000000}}\n",
        "batch_size 1000000 is larger than the 60000 training records",
    ),
    "unknown dataset": (
        "experiments:\n  p3gm_tabular: {datasets: [adultt]}\n",
        "config key 'experiments.p3gm_tabular.datasets[0]': unknown dataset_id 'adultt'",
    ),
    "unknown method": (
        "variants:\n  p3gm: {method: p3gmm}\n",
        "config key 'variants.p3gm.method': unknown method 'p3gmm'; did you mean 'p3gm'?",
    ),
    "unknown metric": (
        "experiments:\n  p3gm_tabular: {metrics: [tabular_clasifiers]}\n",
        "unknown metric 'tabular_clasifiers'; did you mean 'tabular_classifiers'?",
    ),
}

#: probe id -> (file content or None for no file, what dpvae's message must name besides the file)
FILE_PROBES = {
    "malformed YAML": (b"a: [1,\n", "malformed YAML at line 2"),
    "empty file": (b"", "the file is empty"),
    "binary file": (bytes(range(256)) * 4, "not a text file"),
    "missing file": (None, "config file not found"),
}


def check_config(*files: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "dpvae", "check-config", str(REPO_ROOT / "config.yaml"), *map(str, files)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def assert_no_job_ran(workdir: Path, result: subprocess.CompletedProcess) -> None:
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-2000:]
    for made in ("data", "results", "figures", "logs"):
        assert not (workdir / made).exists(), f"{made}/ was created: a job ran"
    assert "Select jobs to execute" not in output


@pytest.mark.parametrize(("overlay", "culprit"), CONFIG_PROBES.values(), ids=CONFIG_PROBES.keys())
def test_a_bad_configuration_is_named_before_any_job(tmp_path, overlay, culprit):
    bad = tmp_path / "bad.yaml"
    bad.write_text(overlay)
    checked = check_config(bad)
    assert checked.returncode == 2 and culprit in checked.stderr and "Traceback" not in checked.stderr, checked.stderr
    work = tmp_path / "work"
    work.mkdir()
    result = snakemake("--cores", "1", f"--configfile={bad}", TARGET, cwd=work)
    assert_no_job_ran(work, result)
    assert "dpvae: error: invalid configuration:\n  - " in result.stderr and culprit in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and 'File "' not in result.stderr, "the message alone, no traceback"


def test_a_bad_value_on_the_command_line_is_named_before_any_job(tmp_path):
    result = snakemake("--cores", "1", TARGET, "--config", "delta=1.5", cwd=tmp_path)
    assert_no_job_ran(tmp_path, result)
    assert "config key 'delta': 1.5 is greater than or equal to the maximum of 1" in result.stderr


def _config_file(tmp_path: Path, content: bytes | None) -> Path:
    path = tmp_path / "overlay.yaml"
    if content is not None:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize(("content", "problem"), FILE_PROBES.values(), ids=FILE_PROBES.keys())
def test_an_unreadable_config_file_is_named_by_check_config(tmp_path, content, problem):
    path = _config_file(tmp_path, content)
    checked = check_config(path)
    assert checked.returncode == 2, checked.stderr
    assert checked.stderr.startswith("dpvae: error: ") and str(path) in checked.stderr and problem in checked.stderr
    assert "Traceback" not in checked.stderr


@pytest.mark.parametrize(("content", "problem"), FILE_PROBES.values(), ids=FILE_PROBES.keys())
def test_an_unreadable_config_file_stops_snakemake_before_any_job(tmp_path, content, problem):
    work = tmp_path / "work"
    work.mkdir()
    assert_no_job_ran(
        work, snakemake("--cores", "1", f"--configfile={_config_file(tmp_path, content)}", TARGET, cwd=work)
    )


SNAKEMAKE_READS_CONFIGFILES = (
    "Snakemake 9.27 reads --configfile files itself, before the Snakefile (snakemake/settings/types.py "
    "ConfigSettings, snakemake/common/configfile.py): a missing or binary file ends in its traceback, an "
    "empty or malformed one in a message without the file's name; no workflow code runs first. "
    "`python -m dpvae check-config config.yaml FILE` names the file and the problem (README)"
)


@pytest.mark.xfail(strict=True, reason=SNAKEMAKE_READS_CONFIGFILES)
@pytest.mark.parametrize(("content", "problem"), FILE_PROBES.values(), ids=FILE_PROBES.keys())
def test_snakemake_names_an_unreadable_config_file_without_a_traceback(tmp_path, content, problem):
    path = _config_file(tmp_path, content)
    result = snakemake("-n", f"--configfile={path}", TARGET, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and path.name in output and "Traceback" not in output, output[-3000:]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("figures/p3gm/tabel3.pdf", "no item 'tabel3' in paper 'p3gm'; did you mean 'table3'?; its items are: table1,"),
        (
            "figures/p3gx/table3.pdf",
            "no paper 'p3gx'; did you mean 'p3gm'?; the papers are: privae, lvae, p3gm, dp2vae",
        ),
        ("figures/tabel3.pdf", "no item 'tabel3' in any paper; did you mean 'table3'?"),
    ],
)
def test_an_unknown_item_or_paper_is_named_before_any_job(tmp_path, target, message):
    result = snakemake("--cores", "1", target, cwd=tmp_path)
    assert_no_job_ran(tmp_path, result)
    assert message in result.stderr, result.stderr[-3000:]
