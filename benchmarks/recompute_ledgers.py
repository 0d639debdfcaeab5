"""Recompute private ledgers with this checkout's code: of run directories (bit for bit), or of every recorded run.

    python benchmarks/recompute_ledgers.py [results/paper] [--glob 'runs/*/*/eps*/seed*']
    DPVAE_DATA_MIRROR=../shared/data python benchmarks/recompute_ledgers.py --recorded [--out CSV]

Run directories: for each run with a `privacy.json` of a private run and its `train.json`, the method's
`recompute_ledger` reruns the noise calibration and the accounting from the run's spec and the data-dependent numbers
the ledger records (rates, steps, sizes), without training, and the JSON it would write must equal the file byte for
byte (`dpvae.runs.recomputed_ledger`). Use it after any change to the accounting code: a ledger that moves is a
changed privacy claim. Prints one line per run and a summary; exits 1 if any ledger differs.

`--recorded`: the paper-scale run directories are not kept, only their rows in `reproductions/<paper>.csv` (and
`reproductions/studies/`). For every distinct private configuration they record, the run's spec is rebuilt as the
recorded command built it — config.yaml and the overlay its command names (`--configfile=`, or `CONFIG=` for a
queue script) at the recorded commit (`<sha>-dirty` read as `<sha>`), expanded by this checkout's
`dpvae.runs.run_spec` — and its ledger planned with this checkout's code (`dpvae.runs.planned_release`: the method's
`planned_ledger` on the prepared dataset's facts, its domain cost composed in; no training). A configuration at a
commit whose files no longer validate falls back to this checkout's config.yaml and overlay (read where the overlay
lives now, `dpvae.paths.campaign_overlay`), and the `config` column says so, naming the overlay as recorded. A papers'
table recorded before the public domains (Adult, Credit, ESR at a commit whose registry has no `REFERENCE_CODE_IDS`)
was prepared by P3GM's reference code's rule and is planned on its `-refcode` dataset, as it trained. Datasets are
prepared from the offline mirror ($DPVAE_DATA_MIRROR) or generated; one that is neither (a real dataset not reachable
here) is planned on the registry's documented facts (`facts` column). Writes one CSV row per distinct spec (sorted),
prints a one-screen summary, and exits 1 if a recomputed paper ε exceeds the recorded target or a configuration
could not be recomputed.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import hashlib
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from dpvae.paths import LEDGER, campaign_overlay, ledger_file, prepared_meta, results_dir, train_record  # noqa: E402
from dpvae.runs import recomputed_ledger  # noqa: E402
from dpvae.runspec import RunSpec  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "measured" / "recomputed-ledgers.csv"
#: the overlay a recorded command names: snakemake's --configfile=FILE, or a queue script's CONFIG=FILE
OVERLAY = re.compile(r"(?:--configfile[= ]|\bCONFIG=)(\S+\.ya?ml)")
#: keys of a run spec that name one run of a configuration, not what it computes
RUN_KEYS = ("run_id", "run", "seed", "stage1", "data_root")
COLUMNS = (
    "paper", "items", "dataset", "dataset_id", "variant", "method", "commits", "config", "facts", "spec_sha",
    "rows", "recorded_epsilon", "paper_epsilon", "sound_epsilon", "headline", "not_dp", "paper_equals_target",
    "paper_within_target", "error",
)  # fmt: skip
#: the paper ε "equals" the recorded target within this relative tolerance (calibration rounds σ up)
EQUAL_RTOL = 1e-6


def private_runs(results: Path, pattern: str) -> list[Path]:
    """Run directories under `results` with a private run's ledger and a train.json."""
    runs = sorted(p.parent for p in results.glob(f"{pattern}/{LEDGER}") if train_record(p.parent).is_file())
    return [run for run in runs if json.loads(ledger_file(run).read_text()).get("epsilon") is not None]


def compare_run_directories(results: Path, pattern: str) -> int:
    """The run-directory mode: each private run's ledger recomputed and compared byte for byte."""
    runs = private_runs(results, pattern)
    differ = 0
    for run in runs:
        written, again = recomputed_ledger(run)
        if written == again:
            print(f"{run}: identical")
            continue
        differ += 1
        diff = difflib.unified_diff(written.splitlines(), again.splitlines(), "written", "recomputed", lineterm="")
        print(f"{run}: DIFFERS\n" + "\n".join(diff))
    print(f"{len(runs)} private runs, {len(runs) - differ} identical, {differ} differ")
    return 1 if differ or not runs else 0


# ------------------------------------------------------------------------------------------- --recorded


@dataclass(frozen=True)
class Recorded:
    """One recorded run as a reproductions row names it (the seed and the value left out)."""

    paper: str  # the paper ("study" for reproductions/studies/: its experiment's paper is in the config)
    item: str  # the item (a study: its experiment)
    experiment: str | None  # a study's experiment; None: the experiments the item reads
    dataset: str  # the papers' dataset name (`-refcode` kept: the recorded row's)
    setting: str
    variant: str
    epsilon: float
    commit: str  # without "-dirty"
    overlays: tuple[str, ...]


def recorded_rows(reproductions: Path) -> list[Recorded]:
    """Every row of `reproductions/*.csv` and `reproductions/studies/*.csv` with a variant and a target ε (private
    rows and rows of private variants' non-private twins alike; privacy is decided on the config)."""
    found = []
    files = sorted(reproductions.glob("*.csv")) + sorted(reproductions.glob("studies/*.csv"))
    for path in files:
        study = path.parent.name == "studies"
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle):
                if not row.get("variant") or row.get("scale", "paper") != "paper" or row.get("epsilon") in ("", None):
                    continue
                found.append(
                    Recorded(
                        paper="study" if study else row["paper"],
                        item=row["experiment"] if study else row["item"],
                        experiment=row["experiment"] if study else None,
                        dataset=row["dataset"],
                        setting=row.get("setting") or "",
                        variant=row["variant"],
                        epsilon=float(row["epsilon"]),
                        commit=row["commit"].removesuffix("-dirty"),
                        overlays=tuple(OVERLAY.findall(row.get("command") or "")),
                    )
                )
    return found


def git_show(repo: Path, commit: str, path: str) -> str | None:
    """The text of `path` at `commit` in `repo`, or None where it has no such file."""
    done = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


@dataclass
class Configs:
    """Configurations as recorded commands built them, loaded once each: (config, where it came from)."""

    repo: Path
    cache: dict[tuple[str, tuple[str, ...]], tuple[dict | None, str]] = field(default_factory=dict)
    local: dict[tuple[str, ...], tuple[dict | None, str]] = field(default_factory=dict)

    def at(self, commit: str, overlays: tuple[str, ...]) -> tuple[dict | None, str]:
        """The validated configuration of config.yaml + `overlays` at `commit` (this checkout's, saying why, where
        those no longer validate or are missing), and a short description of its source."""
        key = (commit, overlays)
        if key not in self.cache:
            self.cache[key] = self._load(commit, overlays)
        return self.cache[key]

    def here(self, overlays: tuple[str, ...], why: str) -> tuple[dict | None, str]:
        """This checkout's config.yaml + `overlays` (the fallback), its source saying `why`."""
        if overlays not in self.local:
            self.local[overlays] = self._load_here(overlays)
        config, detail = self.local[overlays]
        return config, (f"this checkout's {detail} ({why})" if config is not None else f"{why}; {detail}")

    def _load_here(self, overlays: tuple[str, ...]) -> tuple[dict | None, str]:
        from dpvae.config import load_config
        from dpvae.errors import ConfigError

        names = ("config.yaml", *overlays)  # as recorded; read where they live now
        missing = [name for name in names if not (REPO / campaign_overlay(name)).is_file()]
        if missing:
            return None, f"this checkout lacks {', '.join(missing)}"
        try:
            return load_config([REPO / campaign_overlay(name) for name in names]), "+".join(names)
        except ConfigError as error:
            return None, f"this checkout's fails too ({str(error).splitlines()[-1].strip(' -')})"

    def _load(self, commit: str, overlays: tuple[str, ...]) -> tuple[dict | None, str]:
        from dpvae.config import load_config
        from dpvae.errors import ConfigError

        names = ("config.yaml", *overlays)
        source = f"{commit[:7]}:" + "+".join(names)
        texts = [git_show(self.repo, commit, name) for name in names]
        why = f"{names[texts.index(None)]} not at {commit[:7]}" if None in texts else None
        if why is None:
            try:
                return load_config(_written(texts)), source
            except ConfigError as error:
                why = str(error).splitlines()[-1].strip(" -")
        return self.here(overlays, f"{source} fails: {why}")


def _written(texts: Iterable[str]) -> list[Path]:
    """The texts as files of a temporary directory (kept for the process: load_config reads paths)."""
    folder = Path(tempfile.mkdtemp(prefix="recorded-config-"))
    paths = []
    for i, text in enumerate(texts):
        path = folder / f"{i}.yaml"
        path.write_text(text)
        paths.append(path)
    return paths


def experiments_of(config: dict, recorded: Recorded) -> list[str]:
    """The experiments of `config` the recorded row can come from (a study's own, else those its item reads)."""
    from dpvae.items import ITEMS

    if recorded.experiment is not None:
        return [recorded.experiment]
    item = ITEMS.get(f"{recorded.paper}/{recorded.item}")
    return list(item.experiments) if item else []


def of_analysis(config: dict, recorded: Recorded) -> bool:
    """Whether the row comes from analysis experiments only (computed from the configuration: no run, no ledger)."""
    names = [config["experiments"].get(name) for name in experiments_of(config, recorded)]
    return bool(names) and all(exp is not None and "analysis" in exp for exp in names)


def find_run(config: dict, recorded: Recorded):
    """The run of `config` the recorded row names (dataset by its published name and implied setting, the variant
    with a study's sweep point, the ε label), or None."""
    from dpvae.data.registry import REFERENCE_SUFFIX
    from dpvae.reproductions import cell_dataset, published_dataset, recorded_dataset
    from dpvae.runs import SWEEP_SEPARATOR, Run, experiment_runs
    from dpvae.schema import format_eps

    def names(dataset: str) -> bool:
        """The recorded dataset is this id's (`adult-refcode` only a -refcode id's), or a config from before the
        -refcode ids names its published data (`adult`: `as_prepared` plans it on what it trained on)."""
        published, implied = published_dataset(dataset)
        if implied and implied not in settings:
            return False
        own = recorded_dataset(dataset) == recorded.dataset
        return own or (published == cell_dataset(recorded.dataset) and not dataset.endswith(REFERENCE_SUFFIX))

    settings = set(filter(None, recorded.setting.split(";")))
    for name in experiments_of(config, recorded):
        exp = config["experiments"].get(name)
        if exp is None or "analysis" in exp:
            continue
        variants = {recorded.variant}
        if SWEEP_SEPARATOR not in recorded.variant and (sweep := exp.get("sweep")):
            variants |= {
                f"{recorded.variant}{SWEEP_SEPARATOR}{s}" for s in settings if s.startswith(sweep["name"] + "=")
            }
        own_first = sorted(exp["datasets"], key=lambda d: recorded_dataset(d) != recorded.dataset)
        for dataset in filter(names, own_first):
            for run in experiment_runs(config, name, dataset):
                if run.variant in variants and run.eps == format_eps(recorded.epsilon):
                    return Run(run.dataset, run.variant, run.eps, 0)
    return None


@dataclass
class Facts:
    """Prepared datasets' facts (preparing each once into `root`), else the registry's documented ones."""

    root: Path
    mirror: Path | None
    known: dict[str, tuple[object, str]] = field(default_factory=dict)

    def of(self, dataset: str) -> tuple[object | None, str]:
        """(the dataset's `Facts` before `max_train`, "prepared" or "registry (...)"); None, why: neither."""
        if dataset not in self.known:
            self.known[dataset] = self._facts(dataset)
        return self.known[dataset]

    def _facts(self, dataset: str) -> tuple[object | None, str]:
        from dpvae.data.registry import fetch_dataset, get_dataset, prepare_dataset
        from dpvae.runs import dataset_facts

        spec = get_dataset(dataset)
        reachable = not spec.files or (
            self.mirror is not None and all((self.mirror / spec.source / f.filename).is_file() for f in spec.files)
        )
        if reachable:
            if not prepared_meta(self.root, dataset).is_file():
                fetch_dataset(dataset, self.root, self.mirror)
                prepare_dataset(dataset, self.root, seed=0)
            return dataset_facts(self.root, dataset), "prepared"
        if spec.facts is None:
            return None, f"{dataset}: not reachable and no documented facts"
        return spec.facts, "registry (not reachable here)"


_PUBLIC_DOMAINS: dict[str, bool] = {}


def as_prepared(spec: RunSpec, repo: Path, commit: str) -> RunSpec:
    """`spec` on the data its run trained on: a papers' table (Adult, Credit, ESR) recorded at a commit from
    before their public domains was prepared by P3GM's reference code's rule, which is now the `-refcode` dataset
    (its ledger marked not DP); any other spec as it is."""
    from dpvae.data.registry import REFERENCE_CODE_IDS, REFERENCE_SUFFIX

    if spec.dataset not in REFERENCE_CODE_IDS:
        return spec
    if commit not in _PUBLIC_DOMAINS:
        registry = git_show(repo, commit, "src/dpvae/data/registry.py") or ""
        _PUBLIC_DOMAINS[commit] = "REFERENCE_CODE_IDS" in registry
    return spec if _PUBLIC_DOMAINS[commit] else replace(spec, dataset=spec.dataset + REFERENCE_SUFFIX)


def spec_key(spec: RunSpec) -> str:
    """sha256 (12 hex) of what a spec computes: without the keys that name one run."""
    kept = {k: v for k, v in spec.to_dict().items() if k not in RUN_KEYS}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:12]


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.10g}"


def recompute_recorded(reproductions: Path, repo: Path, facts: Facts) -> tuple[list[dict], int]:
    """One output row per distinct (paper, dataset, variant, target, spec) of the private recorded runs, and the
    number of rows of analysis experiments (no run: nothing to recompute)."""
    import dataclasses

    from dpvae.methods.registry import METHODS
    from dpvae.runs import is_private, run_spec

    configs = Configs(repo)
    groups: dict[tuple, dict] = {}
    analysis_rows = 0
    for recorded in recorded_rows(reproductions):
        config, source = configs.at(recorded.commit, recorded.overlays)
        if config is not None and of_analysis(config, recorded):
            analysis_rows += 1
            continue
        run = find_run(config, recorded) if config is not None else None
        if config is not None and run is None and not source.startswith("this checkout"):
            config, source = configs.here(recorded.overlays, f"{source} has no run of {recorded.item}")
            run = find_run(config, recorded) if config is not None else None
        paper = recorded.paper
        if recorded.experiment is not None and config is not None:  # a study: its experiment's, or method's, paper
            exp = config["experiments"].get(recorded.experiment) or {}
            methods = {config["variants"].get(v, {}).get("method") for v in exp.get("variants", [])} - {None}
            paper = exp.get("paper") or next((METHODS.get(m).paper for m in sorted(methods)), paper)
        base = {"paper": paper, "dataset": recorded.dataset, "variant": recorded.variant}
        if config is None or run is None:
            why = source if config is None else f"no run of {recorded.item} in {source}"
            key = (paper, recorded.dataset, recorded.variant, recorded.epsilon, "", why)
            group = groups.setdefault(key, {**base, "error": why, "dataset_id": ""})
        else:
            if not is_private(config, run.variant):
                continue
            spec = as_prepared(run_spec(config, run), repo, recorded.commit)
            key = (paper, spec.dataset, run.variant, recorded.epsilon, spec_key(spec), "")
            base["variant"] = run.variant  # with a study's sweep point
            group = groups.setdefault(key, {**base, "spec": spec, "dataset_id": spec.dataset})
        group.setdefault("items", set()).add(recorded.item)
        group.setdefault("commits", set()).add(recorded.commit[:7])
        group.setdefault("sources", set()).add(source)
        group["rows"] = group.get("rows", 0) + 1
        group["recorded_epsilon"] = recorded.epsilon

    ledgers: dict[str, tuple] = {}  # spec_sha -> (ledger, facts source, error)
    out = []
    for key in sorted(groups, key=lambda k: tuple(str(part) for part in k)):
        group = groups[key]
        row = {
            "paper": group["paper"],
            "items": " ".join(sorted(group["items"])),
            "dataset": group["dataset"],
            "dataset_id": group["dataset_id"],
            "variant": group["variant"],
            "commits": " ".join(sorted(group["commits"])),
            "config": " | ".join(sorted(group["sources"])),
            "rows": group["rows"],
            "recorded_epsilon": _number(group["recorded_epsilon"]),
        }
        spec = group.get("spec")
        if spec is None:
            out.append({**row, "error": group["error"]})
            continue
        sha = spec_key(spec)
        row |= {"method": spec.method, "spec_sha": sha}
        if sha not in ledgers:
            ledgers[sha] = _plan(spec, facts, METHODS, dataclasses)
        ledger, facts_source, error = ledgers[sha]
        row["facts"] = facts_source
        if ledger is None:
            out.append({**row, "error": error})
            continue
        target = group["recorded_epsilon"]
        paper = ledger.paper.epsilon
        row |= {
            "paper_epsilon": _number(paper),
            "sound_epsilon": _number(ledger.sound.epsilon if ledger.sound is not None else None),
            "headline": ledger.headline,
            "not_dp": ledger.not_dp or "",
            "paper_equals_target": str(math.isclose(paper, target, rel_tol=EQUAL_RTOL)).lower(),
            "paper_within_target": str(paper <= target * (1 + 1e-12)).lower(),
        }
        out.append(row)
    return [{column: row.get(column, "") for column in COLUMNS} for row in out], analysis_rows


def _plan(spec: RunSpec, facts: Facts, methods, dataclasses) -> tuple:
    """(the released ledger planned for `spec` or None, where its facts came from, why it is None)."""
    from dpvae.runs import planned_release

    dataset_facts, source = facts.of(spec.dataset)
    if dataset_facts is None:
        return None, "", source
    method = methods.get(spec.method)
    max_train = spec.params.get("max_train")
    limited = dataclasses.replace(dataset_facts, n_train=min(dataset_facts.n_train, max_train or dataset_facts.n_train))
    try:
        ledger = planned_release(replace(spec, data_root=str(facts.root)), limited)
    except Exception as error:  # one configuration's failure is a row of the output, not the end of the run
        return None, source, f"{type(error).__name__}: {error}".splitlines()[0]
    if ledger is None:
        return None, source, f"method '{method.name}' plans no ledger for these parameters"
    return ledger, source, ""


def write_csv(rows: list[dict], path: Path) -> str:
    """The rows as CSV text (written to `path`)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(buffer.getvalue())
    return buffer.getvalue()


def summary(rows: list[dict], analysis_rows: int = 0) -> tuple[str, int]:
    """A one-screen summary of the recomputed rows and the exit status (1: a paper ε over its target, or a
    configuration not recomputed)."""
    done = [r for r in rows if not r["error"]]
    failed = [r for r in rows if r["error"]]
    over = [r for r in done if r["paper_within_target"] == "false"]
    lines = [
        f"{len(rows)} distinct private configurations recorded ({sum(int(r['rows']) for r in rows)} rows; "
        f"{analysis_rows} rows of analyses, which train nothing, left out)"
    ]
    for paper, count in sorted(Counter(r["paper"] for r in rows).items()):
        equal = sum(1 for r in done if r["paper"] == paper and r["paper_equals_target"] == "true")
        below = sum(1 for r in done if r["paper"] == paper and r["paper_equals_target"] == "false" and r not in over)
        not_dp = sum(1 for r in done if r["paper"] == paper and r["not_dp"])
        lines.append(
            f"  {paper}: {count} configurations; paper ε = target {equal}, below {below}; not DP {not_dp}; "
            f"sound ε {_range(done, paper)}"
        )
    fallback = [r for r in rows if "this checkout's" in r["config"]]
    registry = [r for r in done if r["facts"].startswith("registry")]
    lines.append(
        f"config: {len(rows) - len(fallback)} as recorded, {len(fallback)} (in part) from this checkout's (the "
        "recorded commit lacks the overlay or the run, or no longer validates: `config` column)"
    )
    lines.append(f"facts: {len(done) - len(registry)} prepared datasets, {len(registry)} registry facts")
    for reason, count in sorted(Counter(r["not_dp"].split(";")[0][:100] for r in done if r["not_dp"]).items()):
        lines.append(f"not DP ({count}): {reason}")
    short: dict[tuple[str, str], list[dict]] = {}  # paper ε below the target, by variant (sweeps together)
    for r in done:
        if r["paper_equals_target"] == "false" and r not in over:
            short.setdefault((r["paper"], r["variant"].split("@")[0]), []).append(r)
    for (paper, variant), found in sorted(short.items()):
        spent = sorted(f"{float(r['paper_epsilon']):.3g}/{float(r['recorded_epsilon']):g}" for r in found)
        lines.append(f"paper ε below target: {paper} {variant} ({len(found)}): {', '.join(dict.fromkeys(spent))}")
    for r in over:
        lines.append(
            f"OVER TARGET: {r['paper']} {r['dataset']} {r['variant']}: {r['paper_epsilon']} > {r['recorded_epsilon']}"
        )
    for r in failed:
        lines.append(f"NOT RECOMPUTED: {r['paper']} {r['dataset']} {r['variant']}: {r['error']}")
    return "\n".join(lines), 1 if over or failed else 0


def _range(rows: list[dict], paper: str) -> str:
    values = sorted(float(r["sound_epsilon"]) for r in rows if r["paper"] == paper and r["sound_epsilon"])
    return f"{values[0]:.4g}..{values[-1]:.4g}" if values else "none"


def recorded_main(args: argparse.Namespace) -> int:
    mirror = args.mirror or os.environ.get("DPVAE_DATA_MIRROR")
    with tempfile.TemporaryDirectory(prefix="recompute-data-") as scratch:
        root = Path(args.data_root) if args.data_root else Path(scratch)
        facts = Facts(root, Path(mirror) if mirror else None)
        rows, analysis_rows = recompute_recorded(Path(args.reproductions), Path(args.repo), facts)
    write_csv(rows, Path(args.out))
    text, status = summary(rows, analysis_rows)
    print(text)
    out = Path(args.out).resolve()
    print(f"wrote {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default=results_dir("paper"))
    parser.add_argument("--glob", default="runs/*/*/eps*/seed*")
    parser.add_argument("--recorded", action="store_true", help="recompute the runs reproductions/ records")
    parser.add_argument("--reproductions", default=str(REPO / "reproductions"), help="with --recorded")
    parser.add_argument("--repo", default=str(REPO), help="the git repository holding the recorded commits")
    parser.add_argument("--out", default=str(OUT), help="with --recorded: the CSV written")
    parser.add_argument("--data-root", default=None, help="prepared datasets (kept); default: a temporary one")
    parser.add_argument("--mirror", default=None, help="the offline data mirror (default $DPVAE_DATA_MIRROR)")
    args = parser.parse_args(argv)
    if args.recorded:
        return recorded_main(args)
    return compare_run_directories(Path(args.results), args.glob)


if __name__ == "__main__":
    sys.exit(main())
