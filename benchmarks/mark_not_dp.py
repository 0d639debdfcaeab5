"""Give the recorded reproductions their `not_dp` column (issue 62 Build 6); re-runnable, a second run changes nothing.

    python benchmarks/mark_not_dp.py [--reproductions DIR] [--ledgers CSV] [--check]

Rows recorded before `record` read the run's ledger had no `not_dp`. For each row of `reproductions/<paper>.csv`
(and `reproductions/studies/<experiment>.csv` written by `record`):

* P3GM's Adult rows of Tables VI / VIII and Fig. 8 recorded at a commit from before the papers' public domains (its
  data registry has no `REFERENCE_CODE_IDS`; commit 3fedd29, 27 Nov 2026 03:11 UTC) trained on P3GM's reference
  code's whole-set min-max scaling, which is now the dataset id `adult-refcode`: their dataset becomes
  `adult-refcode` (the rule `benchmarks/recompute_ledgers.py --recorded` plans them by). A row dated after that
  commit is refused, not relabelled.
* `not_dp`, where empty, is the reason the ledger of the row's configuration gives as `recompute_ledgers.py
  --recorded` recomputed it (`benchmarks/measured/recomputed-ledgers.csv`: the same paper, an item among its items,
  dataset, variant, and the row's commit among its commits): the reference code's preprocessing for the
  `adult-refcode` rows, the un-noised public slice for Ryan's. A configuration that is not private (no row in that
  file: `original`, `real`, a VAE) keeps it empty: its numbers are not a private release.

Every other value stays as it was. `--check` writes nothing and exits 1 where a file would change.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from dpvae.data.registry import REFERENCE_SUFFIX  # noqa: E402
from dpvae.files import atomic_write  # noqa: E402
from dpvae.reproductions import COLUMNS, STUDY_COLUMNS, recorded_dataset  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LEDGERS = REPO / "benchmarks" / "measured" / "recomputed-ledgers.csv"
#: the commit that gave the papers' datasets their public domains (the `-refcode` ids keep the reference code's rule)
PUBLIC_DOMAINS = "3fedd29ad1f7739473178e986c806d2a08a33450"
#: (paper, items, dataset): the rows that trained on the reference code's preprocessing before PUBLIC_DOMAINS
REFCODE_ROWS = ("p3gm", ("table6", "table8", "fig8"), "adult")


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout


def before_public_domains(commit: str, cache: dict[str, bool]) -> bool:
    """Whether the recorded `commit` (`-dirty` read as the commit) has a data registry without the public domains."""
    commit = commit.removesuffix("-dirty")
    if commit not in cache:
        shown = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{commit}:src/dpvae/data/registry.py"], capture_output=True, text=True
        )
        if shown.returncode != 0:
            raise SystemExit(f"mark_not_dp: commit {commit} has no src/dpvae/data/registry.py here")
        cache[commit] = "REFERENCE_CODE_IDS" not in shown.stdout
    return cache[commit]


def relabel(frame: pd.DataFrame, cache: dict[str, bool]) -> pd.Series:
    """Which rows of a paper's file trained on P3GM's reference code's preprocessing (see the module docstring)."""
    paper, items, dataset = REFCODE_ROWS
    named = (frame["paper"] == paper) & frame["item"].isin(items) & (frame["dataset"] == dataset)
    old = pd.Series([named[i] and before_public_domains(str(c), cache) for i, c in frame["commit"].items()])
    limit = pd.Timestamp(git("log", "-1", "--format=%cI", PUBLIC_DOMAINS).strip()).tz_convert("UTC")
    late = old & (pd.to_datetime(frame["date"], utc=True) >= limit)
    if late.any():
        raise SystemExit(f"mark_not_dp: {int(late.sum())} row(s) of an old commit dated after {limit}: check them")
    return old.to_numpy()


def reasons(ledgers: pd.DataFrame) -> dict[tuple[str, str, str, str, str], str]:
    """(paper, item or a study's experiment, recorded dataset, variant, short commit) -> the ledger's not_dp."""
    found = {}
    for row in ledgers[ledgers["not_dp"] != ""].itertuples():
        for item in row.items.split():
            for commit in row.commits.split():
                found[(row.paper, item, recorded_dataset(row.dataset_id), row.variant, commit[:7])] = row.not_dp
    return found


def study_paper(experiment: str, ledgers: pd.DataFrame) -> str:
    """The paper of a study's experiment, as the recomputed ledgers name it ('' for none)."""
    papers = ledgers.loc[ledgers["items"].str.split().map(lambda items: experiment in items), "paper"]
    return papers.iloc[0] if len(papers) else ""


def marked(frame: pd.DataFrame, known: dict, study: str, cache: dict[str, bool]) -> pd.DataFrame:
    """`frame` with its `not_dp` column (after `value`), P3GM's reference-code Adult rows relabelled; `study`: the
    paper of a study's file ('' for a paper's file)."""
    frame = frame.copy()
    if "not_dp" not in frame:
        frame.insert(list(frame.columns).index("value") + 1, "not_dp", "")
    frame["not_dp"] = frame["not_dp"].fillna("").astype(str)
    if not study:
        frame.loc[relabel(frame, cache), "dataset"] = REFCODE_ROWS[2] + REFERENCE_SUFFIX
    for i, row in frame[frame["not_dp"] == ""].iterrows():
        paper, item = (study, row["experiment"]) if study else (row["paper"], row["item"])
        variant = row["variant"] if not study or not row["setting"] else f"{row['variant']}@{row['setting']}"
        key = (paper, item, str(row["dataset"]), str(variant), str(row["commit"]).removesuffix("-dirty")[:7])
        frame.loc[i, "not_dp"] = known.get(key, "")
    return frame


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reproductions", type=Path, default=REPO / "reproductions")
    parser.add_argument("--ledgers", type=Path, default=LEDGERS)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 where a file would change")
    args = parser.parse_args(argv)
    ledgers = pd.read_csv(args.ledgers, dtype=str, keep_default_na=False)
    known = reasons(ledgers)
    cache: dict[str, bool] = {}
    changed = []
    studies = sorted((args.reproductions / "studies").glob("*.csv"))
    for path in sorted(args.reproductions.glob("*.csv")) + studies:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        is_study = path.parent.name == "studies"
        study = study_paper(path.stem, ledgers) if is_study else ""
        if is_study and not study:
            continue  # a study the recomputed ledgers do not know: recorded since `record` reads each run's ledger
        columns = STUDY_COLUMNS if is_study else COLUMNS
        if set(frame.columns) - {"not_dp"} != set(columns) - {"not_dp"}:
            continue  # a campaign script's own measurements (`record --study`): no runs, no ledgers
        new = marked(frame, known, study, cache)[list(columns)]  # rows in their order: `record` sorts when it writes
        if new.equals(frame):
            continue
        changed.append(path)
        counts = (new["not_dp"] != "").sum(), (new["dataset"] != frame["dataset"]).sum() if len(new) else 0
        print(f"{path}: {counts[0]} row(s) not DP" + ("" if study else f"; {counts[1]} relabelled"))
        if not args.check:
            atomic_write(path, lambda tmp, new=new: new.to_csv(tmp, index=False))
    print(f"{len(changed)} file(s) {'to change' if args.check else 'changed'}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
