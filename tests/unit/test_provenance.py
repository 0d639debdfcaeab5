"""A commit is '-dirty' only when a file a job's result may depend on differs from it, and `record` refuses then."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from dpvae import provenance, reproductions
from dpvae.errors import DataError

FILES = ("src/pkg/a.py", "workflow/rules.smk", "config.yaml", "Snakefile", "campaign.yaml", "docs/a.md", "README.md")


def _git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture()
def checkout(tmp_path, monkeypatch) -> Iterator[tuple[Path, str]]:
    """A committed checkout holding `FILES` (campaign.yaml: an overlay outside workflow/), and its sha."""
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"{name}\n")
    (tmp_path / ".gitignore").write_text("/results/\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "x")
    monkeypatch.setattr(provenance, "REPO_ROOT", tmp_path)
    monkeypatch.delenv("DPVAE_COMMIT", raising=False)
    provenance.git_commit.cache_clear()
    yield tmp_path, _git(tmp_path, "rev-parse", "HEAD")
    provenance.git_commit.cache_clear()


def test_changes_off_the_path_leave_the_commit_clean(checkout):
    repo, sha = checkout
    (repo / "docs" / "a.md").write_text("edited\n")
    (repo / "README.md").unlink()
    (repo / "tests").mkdir()
    (repo / "tests" / "test_new.py").write_text("")
    (repo / "results").mkdir()
    (repo / "results" / "run.json").write_text("{}")  # ignored
    assert sorted(provenance.changed_files()) == ["README.md", "docs/a.md", "tests/test_new.py"]
    assert provenance.git_commit() == sha


@pytest.mark.parametrize(
    "change",
    ["edit src/pkg/a.py", "add src/pkg/new.py", "delete config.yaml", "edit Snakefile", "rename workflow/rules.smk"],
)
def test_a_change_on_the_path_makes_the_commit_dirty(checkout, change):
    repo, sha = checkout
    verb, name = change.split()
    if verb in ("edit", "add"):
        (repo / name).write_text("changed\n")
    elif verb == "delete":
        (repo / name).unlink()
    else:  # staged: the rename lists both names, the original on the path
        _git(repo, "mv", name, "docs/rules.smk")
    assert name in provenance.changed_files()
    assert provenance.git_commit() == f"{sha}-dirty"


def test_the_commit_a_device_call_names_wins_over_a_stale_git(checkout, monkeypatch):
    """A device's copy can carry an older commit's .git beside a newer tree: gpu-window.sh's DPVAE_COMMIT decides."""
    repo, sha = checkout
    (repo / "src" / "pkg" / "a.py").write_text("changed\n")
    assert provenance.git_commit() == f"{sha}-dirty"
    provenance.git_commit.cache_clear()
    monkeypatch.setenv("DPVAE_COMMIT", "f6b37a48d31a5be5b1dc819cf292b86f11541747")
    assert provenance.git_commit() == "f6b37a48d31a5be5b1dc819cf292b86f11541747"


def test_record_refuses_a_change_on_the_path_naming_the_files_in_one_line(checkout):
    repo, _ = checkout
    for name in ("src/pkg/a.py", "campaign.yaml", "docs/a.md"):
        (repo / name).write_text("changed\n")
    with pytest.raises(DataError) as refused:
        reproductions.check_tree("snakemake --configfile=campaign.yaml results/x.csv")
    message = str(refused.value)
    assert "src/pkg/a.py" in message and "campaign.yaml" in message and "docs/a.md" not in message
    assert "\n" not in message
    (repo / "src" / "pkg" / "a.py").write_text("src/pkg/a.py\n")  # back as committed
    reproductions.check_tree("snakemake results/x.csv")  # an overlay the command does not name: off its path
    with pytest.raises(DataError, match="campaign.yaml"):
        reproductions.check_tree("CONFIG=campaign.yaml workflow/campaigns/queue.sh")


def _dirty_commits(directory: Path) -> pd.Series:
    """The 7-character sha of every recorded row under `directory` (its own CSVs) naming `<sha>-dirty`."""
    files = sorted(directory.glob("*.csv"))
    commits = pd.concat([pd.read_csv(f, usecols=["commit"], dtype=str) for f in files])["commit"].dropna()
    return commits[commits.str.endswith("-dirty")].str[:7]


def test_every_dirty_commit_in_the_recorded_rows_is_explained_with_its_row_count():
    """reproductions/README.md says, per `-dirty` commit, how its code may differ (Done-when: no row names a commit
    whose code differs without saying how); a replaced or re-recorded cell changes the counts, so they are checked."""
    papers = _dirty_commits(reproductions.REPRODUCTIONS_DIR)
    studies = _dirty_commits(reproductions.REPRODUCTIONS_DIR / "studies")
    readme = (reproductions.REPRODUCTIONS_DIR / "README.md").read_text()
    table = dict(re.findall(r"^\| `([0-9a-f]{7})` \([^|]*\| (\d+) \|", readme, flags=re.M))
    assert {sha: int(n) for sha, n in table.items()} == pd.concat([papers, studies]).value_counts().to_dict()
    stated = re.search(r"(\d+) rows \((\d+) in the papers' files, (\d+) in", readme).groups()
    assert tuple(map(int, stated)) == (len(papers) + len(studies), len(papers), len(studies))
