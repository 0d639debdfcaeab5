"""`python -m dpvae <command> ...`: the stages the Snakemake rules call, and the user's commands.

User commands: check-config, status, plan, methods, metrics, synth, ledger, record, scorecard, claims. A user-fixable
problem (bad config, data, target, privacy budget, a missing or unreadable file) prints one or two lines naming the
key, file or value and exits 2; anything else is a bug: its traceback, then one line naming the command and
the exception (in a workflow job: the traceback in the job's log, the line on the terminal too), exit 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpvae.paths import LEDGER, TRAIN_RECORD
from dpvae.registry import Registry


@dataclass(frozen=True)
class Arg:
    """One argument of a command: argparse's `add_argument(*flags, **options)`."""

    flags: tuple[str, ...]
    options: dict[str, Any]


def arg(*flags: str, **options: Any) -> Arg:
    return Arg(flags, options)


@dataclass(frozen=True)
class OneOf:
    """Arguments of which a command takes at most one (an argparse mutually exclusive group)."""

    args: tuple[Arg, ...]


def one_of(*args: Arg) -> OneOf:
    return OneOf(args)


Handler = Callable[[argparse.Namespace], int | None]


@dataclass(frozen=True)
class Command:
    """A command: its name, one line of help, its arguments (in help order) and the function that runs it
    (returns its exit status; None for 0)."""

    name: str
    help: str
    arguments: tuple[Arg | OneOf, ...]
    run: Handler


COMMANDS: Registry[Command] = Registry("command")


def command(name: str, help: str, *arguments: Arg | OneOf) -> Callable[[Handler], Handler]:
    """Function decorator: register `fn` as command `name` with `arguments` (the order of `--help`)."""

    def decorate(fn: Handler) -> Handler:
        COMMANDS.add(name, Command(name, help, arguments, fn))
        return fn

    return decorate


def parser() -> argparse.ArgumentParser:
    """The command line of every registered command, in registration order."""
    top = argparse.ArgumentParser(prog="dpvae", description=__doc__)
    sub = top.add_subparsers(dest="stage", required=True)
    for cmd in COMMANDS.values():
        p = sub.add_parser(cmd.name, help=cmd.help)
        for a in cmd.arguments:
            if isinstance(a, OneOf):
                group = p.add_mutually_exclusive_group()
                for member in a.args:
                    group.add_argument(*member.flags, **member.options)
            else:
                p.add_argument(*a.flags, **a.options)
    return top


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None


def _run_spec(text: str) -> object:
    """A run spec's JSON text as a `RunSpec` (an unknown or missing key: one line naming it)."""
    from dpvae.errors import ConfigError
    from dpvae.runspec import RunSpec

    try:
        return RunSpec.from_json(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a user-fixable error prints its message (naming the key, file or value) and exits 2, a
    bug its traceback and then one line naming the command and the exception, exit 1."""
    from dpvae.allocator import keep_freed_memory
    from dpvae.errors import DpvaeError

    keep_freed_memory()  # a step's large tensors reuse freed memory (no page faults per step): never a result byte
    if problem := foreign_environment():
        return _fail(problem)
    args = parser().parse_args(argv)
    try:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        logging.getLogger("dpvae").setLevel(logging.INFO)
        return COMMANDS[args.stage].run(args) or 0
    except DpvaeError as error:
        return _fail(str(error))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError) as error:
        if error.filename is None:  # not about a path the user gave: a bug
            return _bug(args.stage, error)
        return _fail(f"{error.filename}: {error.strerror}")
    except Exception as error:  # noqa: BLE001 - a bug, or an input this stage cannot read
        return _bug(args.stage, error)


def foreign_environment(argv0: str | None = None, prefix: str | None = None) -> str | None:
    """Why this command would run another checkout's dpvae or interpreter through a copied virtual environment
    (None if it does not). A venv is tied to the directory it was made at: its scripts start with that path's
    python, and an editable install made before its path was relative runs that checkout's src/. A copied or
    moved checkout's .venv must be made again (`make clean-env && make setup`) rather than silently run the original."""
    from dpvae.paths import REPO_ROOT

    script, prefix = Path(argv0 if argv0 is not None else sys.argv[0]), Path(prefix or sys.prefix)
    remake = "remake it: `make clean-env && make setup` (or run this checkout's commands with another environment)"
    venv = script.parent.parent
    if script.parent.name == "bin" and (venv / "pyvenv.cfg").is_file() and venv.resolve() != prefix.resolve():
        return f"{script} is a script of {venv} but starts the Python of {prefix}: {venv} was copied; {remake}"
    try:
        config = (prefix / "pyvenv.cfg").read_text()
    except OSError:
        return None
    made = [line.split()[-1] for line in config.splitlines() if line.startswith("command =") and line.split()]
    if made and Path(made[0]).resolve() != prefix.resolve() and Path(made[0]).resolve().parent == REPO_ROOT:
        return (
            f"{prefix} was made at {made[0]} and runs the dpvae of {REPO_ROOT / 'src'}, not of "
            f"{prefix.parent / 'src'}: {prefix} was copied; {remake}"
        )
    return None


def _fail(message: str, status: int = 2) -> int:
    """Print the message to stderr (a job's log) and, in a workflow job, to the terminal too: the rules
    open file descriptor $DPVAE_ERROR_FD on Snakemake's stderr. Exit status `status`."""
    line = f"dpvae: error: {message}"
    print(line, file=sys.stderr, flush=True)
    if (fd := os.environ.get("DPVAE_ERROR_FD", "")).isdigit() and int(fd) > 2:
        try:
            os.write(int(fd), (line + "\n").encode())
        except OSError:  # not open: a command line run by hand
            pass
    return status


def _bug(stage: str, error: Exception) -> int:
    """The traceback to stderr (a job's log), then one line naming the command, the exception and where the
    traceback is: what a failed job shows on the terminal, as user-fixable errors do. Exit status 1."""
    import traceback

    traceback.print_exc()
    reason = (str(error).strip().splitlines() or [""])[0]
    if len(reason) > 300:
        reason = reason[:297] + "..."
    log = _stderr_file()
    where = f"traceback in {log}" if log else "traceback above"
    return _fail(f"{stage} failed: {type(error).__name__}{': ' if reason else ''}{reason} ({where})", status=1)


def _stderr_file() -> str | None:
    """The file stderr writes to (a job's log), relative to the working directory where it lies below it;
    None for a terminal or pipe, or where /proc does not say."""
    try:
        path = Path(os.readlink("/proc/self/fd/2"))
        if not path.is_file():
            return None
        return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)
    except (OSError, ValueError):
        return None


@command(
    "check-config",
    "validate configuration files and summarise the run table",
    arg("configfiles", nargs="+"),
)
def _check_config(args: argparse.Namespace) -> None:
    from dpvae.config import load
    from dpvae.items import ITEMS
    from dpvae.runs import experiment_runs
    from dpvae.status import done_items

    config = load(args.configfiles)
    runs = {r for name in config.trained() for r in experiment_runs(config, name)}
    done = [i.key for i in done_items(config)]
    print(
        f"configuration valid: {len(config.experiments)} experiments, {len(runs)} distinct runs, "
        f"{len(done)}/{len(ITEMS)} items buildable: {', '.join(done)}"
    )


@command(
    "status",
    "print the item status table (markdown), or write it into docs/status.md",
    arg("configfiles", nargs="*", default=["config.yaml"]),
    arg("--update", metavar="FILE", help="replace the status and headline blocks of FILE (docs/status.md, README.md)"),
)
def _status(args: argparse.Namespace) -> None:
    from dpvae.config import load
    from dpvae.status import status_table, with_status

    config = load(args.configfiles)
    if args.update:
        path = Path(args.update)
        path.write_text(with_status(path.read_text(), config))
    else:
        print(status_table(config))


@command(
    "progress",
    "where running jobs stand: the newest progress line of each job log",
    arg("--logs", default="logs", help="the folder of the job logs (default: logs)"),
    arg("--all", action="store_true", help="also the logs whose newest line is a finished loop"),
)
def _progress(args: argparse.Namespace) -> None:
    """Reads log files only."""
    from dpvae.progress import newest_lines

    for job in newest_lines(Path(args.logs)):
        if args.all or job.done < job.total:
            print(f"{job.log}: {job.name} {job.done}/{job.total} {job.unit}, ETA {job.eta}")


@command(
    "plan",
    "the jobs some targets still need and their estimated GPU- and CPU-hours",
    arg("targets", nargs="*", help="files or rules, as for snakemake (default: every buildable item)"),
    arg(
        "--configfile",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration overlay on config.yaml, as for snakemake (--configfile=FILE; repeatable)",
    ),
    arg("--directory", default=".", help="the working directory of the build (default: here)"),
    arg("--cores", type=_positive_int, default=2, help="the build's --cores, for its wall time (default: 2)"),
    one_of(
        arg("--json", action="store_true", help="the plan as JSON"),
        arg("--markdown", action="store_true", help="one row per target (markdown)"),
        arg(
            "--update",
            metavar="FILE",
            help="replace the <!-- plan:begin --> block of FILE (README.md) with the plan as markdown",
        ),
        arg(
            "--record",
            action="store_true",
            help="the build's benchmark files as a record (TSV) for benchmarks/measured/<machine>-<date>/",
        ),
    ),
)
def _plan(args: argparse.Namespace) -> None:
    from dpvae.plan import cost_plan

    timed = not (args.record or args.markdown or args.update)  # same bytes for the same files
    plan = cost_plan(args.targets, args.configfile, args.directory, cores=args.cores, timed=timed)
    if args.record:
        from dpvae.devices import device_name, resolve_device

        here = resolve_device("auto")  # a build here without a GPU ran every job on this CPU
        sys.stdout.write(plan.to_records(device_name(here) if here == "cpu" else ""))
    elif args.update:
        from dpvae.plan import with_plan

        path = Path(args.update)
        path.write_text(with_plan(path.read_text(), plan, args.update))
    else:
        print(
            json.dumps(plan.to_dict(), indent=1)
            if args.json
            else plan.to_markdown()
            if args.markdown
            else plan.to_text()
        )


@command(
    "methods",
    "every method with its typed parameters (markdown)",
    arg("name", nargs="?", help="only this method (with --resolve: a variant, or every variant of it)"),
    arg(
        "--resolve",
        nargs=2,
        metavar=("DATASET", "EPSILON"),
        help="each parameter of the variant(s) on DATASET at EPSILON, its value and the config key it comes from",
    ),
    arg(
        "--configfile",
        action="append",
        default=[],
        metavar="FILE",
        help="with --resolve: a configuration overlay on config.yaml (repeatable)",
    ),
)
def _methods(args: argparse.Namespace) -> None:
    if args.resolve:
        return _resolve(args)
    from dpvae.catalog import method_catalog

    print(method_catalog(args.name))


def _resolve(args: argparse.Namespace) -> None:
    """`methods NAME --resolve DATASET EPSILON`."""
    from dpvae.catalog import resolved_parameters
    from dpvae.config import load
    from dpvae.errors import ConfigError
    from dpvae.paths import REPO_ROOT

    if not args.name:
        raise ConfigError("methods --resolve: name a variant or a method (python -m dpvae methods p3gm --resolve ...)")
    config = load([REPO_ROOT / "config.yaml", *args.configfile])
    print(resolved_parameters(config, args.name, *args.resolve))


@command(
    "metrics",
    "every metric with what it needs and its typed options (markdown)",
    arg("name", nargs="?", help="only this metric"),
)
def _metrics(args: argparse.Namespace) -> None:
    from dpvae.catalog import metric_catalog

    print(metric_catalog(args.name))


@command(
    "synth",
    "one synthetic dataset: train a method on a file or dataset id, sample, write the ledger beside",
    arg("--method", required=True, help="a method (`python -m dpvae methods`)"),
    arg("--data", required=True, help="a .csv / .parquet table or an .npz of images, or a dataset id"),
    arg("--epsilon", type=float, default=None, help="target epsilon (private methods)"),
    arg("--delta", type=float, default=1e-5, help="target delta (default 1e-5)"),
    arg("--params", nargs="*", default=[], metavar="K=V", help="the method's parameters (YAML values)"),
    arg("--out", required=True, type=Path, help="synthetic.csv (a table) or synthetic.npz (x, y)"),
    arg(
        "--audit", nargs="?", type=int, const=1000, default=None, metavar="CANARIES",
        help="train with a one-run canary audit (x.audit.json beside x.privacy.json; default 1000 canaries)",
    ),
    arg(
        "--headline", choices=("sound", "paper"), default="sound",
        help="the epsilon held to the target: sound (a proven bound; default) or paper (the paper's claim)",
    ),
    arg(
        "--calibrate-sound", action=argparse.BooleanOptionalAction, default=True,
        help="under --headline sound (the default), calibrate the noise so that the sound epsilon meets the target "
        "(default; P3GM scales every stage's noise by one factor); --no-calibrate-sound refuses instead",
    ),
    arg(
        "--n",
        type=int,
        default=None,
        help="records to draw (default: the training N where the release treats it as public, bounded DP; else 1000)",
    ),
    arg(
        "--seed", type=int, default=None,
        help="repeatable noise for debugging: whoever knows the seed can replay it, so the ledger says not_dp "
        "(default: secret noise from OS entropy, written nowhere)",
    ),
    arg(
        "--seed-file", type=Path, default=None, metavar="FILE",
        help="a secret release that repeats: the key is derived from FILE's bytes (read once, never copied)",
    ),
    arg(
        "--work", type=Path, default=None, metavar="DIR",
        help="the private workspace (prepared data, run, checkpoints, report; mode 0700; default: in "
        "$XDG_STATE_HOME or ~/.local/state, outside the folder of --out)",
    ),
    arg("--keep-work", action="store_true", help="keep the private workspace after the release"),
    arg(
        "--report", dest="quality_report", action=argparse.BooleanOptionalAction, default=True,
        help="write the quality report (report.html: statistics of your private data, kept in the workspace, never "
        "released; default); --no-report skips it",
    ),
    arg("--force", action="store_true", help="replace an existing --out and its ledger and audit"),
    arg("--label", default=None, help="a table's label column (default: one named label/target/y/class)"),
    arg("--positive", default=None, help="a table's positive label value (y = 1 for it, 0 otherwise)"),
    arg(
        "--declare", type=Path, default=None, metavar="FILE",
        help="YAML: the data's public domain and options as under the config key datasets.<id> (columns, labels "
        "or positive, domain, domain_epsilon, label, drop, test_fraction, layout)",
    ),
    arg(
        "--allow-not-dp", action="store_true",
        help="a private method may read the domain (ranges, categories, labels) from the data: not DP",
    ),
    arg(
        "--root", type=Path, default=Path("data"),
        help="where a built-in dataset id is prepared (default: data, as the workflow); a file goes to the workspace",
    ),
    arg("--device", default="auto", help="torch device: auto, cpu or cuda"),
)  # fmt: skip
def _synth(args: argparse.Namespace) -> None:
    from dpvae.synth import Request, parse_params, synth

    fields = ("method", "data", "epsilon", "delta", "out", "audit", "n", "seed", "root", "label", "positive")
    fields += ("declare", "allow_not_dp", "device", "headline", "calibrate_sound", "seed_file", "work")
    fields += ("keep_work", "force", "quality_report")
    given = {k: getattr(args, k) for k in fields if getattr(args, k) is not None} | {"epsilon": args.epsilon}
    request = Request(**given, params=parse_params(args.params))  # --n left out: synth.default_n
    release = synth(request)
    print(release.report, flush=True)
    if release.private_notes is not None:  # the data holder's eyes only: the terminal, never a file of ours
        print(release.private_notes, file=sys.stderr, flush=True)


@command(
    "ledger",
    "a release's privacy ledger on one screen: epsilons, mechanisms, what is public",
    arg("path", type=Path, help=f"a {LEDGER}, synth's x.{LEDGER} beside x.csv, or a run directory"),
)
def _ledger(args: argparse.Namespace) -> None:
    from dpvae.methods.registry import METHODS
    from dpvae.privacy.summary import screen

    print(screen(args.path, lambda name: METHODS.get(name).releases_n if name in METHODS else ""))


@command(
    "fetch",
    "download or copy from the mirror, and verify, a dataset's raw files",
    arg("--source", required=True, help="raw source name (data/raw/<source>)"),
    arg("--root", required=True),
    arg("--mirror", default=None),
    arg(
        "--allow-unverified",
        action="store_true",
        help="accept files without a published checksum, recording their sha256 (config data.allow_unverified)",
    ),
    arg(
        "--declared",
        type=_json,
        default=None,
        help="a dataset declared in the config: its paths, options and sha256 (JSON, dpvae.data.declared)",
    ),
)
def _fetch(args: argparse.Namespace) -> None:
    if args.declared is not None:
        from dpvae.data.declared import copy_in

        copy_in(args.source, args.declared, args.root)
    else:
        from dpvae.data.registry import fetch_source

        fetch_source(args.source, args.root, args.mirror, allow_unverified=args.allow_unverified)


@command(
    "prepare",
    "write a dataset's canonical prepared form",
    arg("--dataset", required=True),
    arg("--root", required=True),
    arg("--seed", type=int, default=0, help="the split's seed (config data.split_seed)"),
    arg(
        "--secret", action="store_true",
        help="a declared dataset whose runs are releases: its split and domain estimate drawn from OS entropy "
        "(the seed is written nowhere)",
    ),
)  # fmt: skip
def _prepare(args: argparse.Namespace) -> None:
    from dpvae import randomness
    from dpvae.data.registry import prepare_dataset

    seed = randomness.secret_seed(f"prepare|{args.dataset}") if args.secret else args.seed  # a release's: secret
    prepare_dataset(args.dataset, args.root, seed=seed, secret_seed=args.secret)


@command(
    "stage1",
    "train a method's shared non-private first stage (DP2-VAE's encoders)",
    arg("--spec", type=_run_spec, required=True, help="the stage-1 spec (JSON, see dpvae.methods.base.stage1_spec)"),
)
def _stage1(args: argparse.Namespace) -> None:
    from dpvae import stages

    stages.stage1(args.spec)


@command(
    "train",
    "train one run",
    arg("--spec", type=_run_spec, required=True, help="the run spec (JSON, see dpvae.runspec.RunSpec)"),
)
def _train(args: argparse.Namespace) -> None:
    from dpvae import stages

    stages.train(args.spec)


@command(
    "sample",
    "draw synthetic records of one trained run",
    arg("--run", required=True, help=f"the run directory (holds {TRAIN_RECORD})"),
    arg("--n", type=int, default=None, help="records to draw (default: the method's)"),
)
def _sample(args: argparse.Namespace) -> None:
    from dpvae import stages

    stages.sample(args.run, args.n)


@command(
    "evaluate",
    "compute one metric of one run",
    arg("--run", required=True, help="the run directory"),
    arg("--metric", required=True),
    arg("--options", type=_json, default={}),
    arg("--reference", default=None, help="the metric's cached reference (.npz)"),
    arg("--out", required=True),
)
def _evaluate(args: argparse.Namespace) -> None:
    from dpvae import stages

    stages.evaluate(args.run, args.metric, args.options, args.out, args.reference)


@command(
    "reference",
    "build a metric's cached per-dataset reference (e.g. FID statistics)",
    arg("--data", required=True, help="the prepared dataset directory"),
    arg("--metric", required=True),
    arg("--options", type=_json, default={}),
    arg("--device", default="auto", help="torch device: auto (CUDA when available), cpu or cuda"),
    arg("--out", required=True),
)
def _reference(args: argparse.Namespace) -> None:
    from dpvae import stages

    stages.reference(args.data, args.metric, args.options, args.out, args.device)


@command(
    "aggregate",
    "tidy table of an experiment's runs on one dataset",
    arg("--spec", required=True, help="the aggregate spec file (experiment and run directories)"),
    arg("--out", required=True),
)
def _aggregate(args: argparse.Namespace) -> None:
    """Bookkeeping: pandas only, no torch or method registry."""
    from dpvae import tables

    tables.aggregate(args.spec, args.out)


@command(
    "combine",
    "concatenate tidy tables (one per variant) into one",
    arg("tables", nargs="+"),
    arg("--out", required=True),
)
def _combine(args: argparse.Namespace) -> None:
    """Bookkeeping: pandas only, no torch or method registry."""
    from dpvae import tables

    tables.combine(args.tables, args.out)


@command(
    "analyze",
    "compute an analysis experiment's tidy table",
    arg("--experiment", required=True),
    arg("--context", type=_json, required=True, help="the config subset the analysis needs"),
    arg("--out", required=True),
)
def _analyze(args: argparse.Namespace) -> None:
    from dpvae import stages

    stages.analyze(args.experiment, args.context, args.out)


@command(
    "render",
    "render one figure or table from its spec file",
    arg("--spec", required=True, help="results/<scale>/items/<paper>/<item>.json"),
)
def _render(args: argparse.Namespace) -> None:
    from dpvae import stages

    stages.render(args.spec)


@command(
    "render-experiment",
    "render one experiment's table (any experiment) from its spec file",
    arg("--spec", required=True, help="results/<scale>/experiments/<experiment>.json"),
    arg("--out", required=True, help="output prefix: figures/experiments/<experiment> (.pdf, .csv, .tex)"),
)
def _render_experiment(args: argparse.Namespace) -> None:
    """Pandas and matplotlib only."""
    from dpvae.render.experiment import render_experiment

    render_experiment(args.spec, args.out)


@command(
    "gather",
    "gather one item id from every paper into one PDF",
    arg("--item", required=True),
    arg("--pdf", action="append", default=[]),
    arg("--pending", type=_json, default={}),
    arg("--out", required=True),
)
def _gather(args: argparse.Namespace) -> None:
    from dpvae.render.gather import gather

    gather(args.item, args.pdf, args.pending, args.out)


@command(
    "record",
    "record paper-scale results of built runs into reproductions/<paper>.csv (refused while a file on the "
    "jobs' path is modified: src/, workflow/, envs/, Snakefile, config.yaml, the overlay --command names)",
    arg("tables", nargs="*", help="tidy tables (results/paper/tables/<experiment>/<dataset>.csv)"),
    arg("--command", default=None, help="the command that produced them (default: this one)"),
    arg("--out-dir", default=None, help="default: <repo>/reproductions"),
    arg(
        "--replaces",
        action="append",
        default=[],
        metavar="OVERLAY",
        help="drop the rows of the recorded keys made under this earlier campaign overlay, every seed (repeatable)",
    ),
    arg("--prune", action="store_true", help="drop rows filed under an item that does not show their dataset"),
    arg(
        "--study",
        metavar="NAME",
        help="the tables are a campaign script's own measurements with their provenance columns (e.g. "
        "workflow/campaigns/dp2vae_real_fid.py's CSV): merged into reproductions/studies/NAME.csv",
    ),
)
def _record(args: argparse.Namespace) -> int | None:
    from dpvae.reproductions import prune, record

    if not args.tables and not args.prune:
        return _fail("record: name the tidy tables to record (or --prune)")
    if args.study:
        from dpvae.reproductions import record_measured

        for table in args.tables:
            print(f"recorded into {record_measured(table, args.study, args.out_dir)}")
    elif args.tables:
        command = args.command or "python -m dpvae record " + " ".join(args.tables)
        for path in record(args.tables, command=command, out_dir=args.out_dir, replaces=tuple(args.replaces)):
            print(f"recorded into {path}")
    if args.prune:
        for path, n in prune(args.out_dir).items():
            print(f"{path}: dropped {n} rows filed under an item that does not show their dataset")
    return None


@command(
    "scorecard",
    "every published cell beside ours, with a verdict",
    arg("--paper", default=None),
    arg("--reproductions", default=None, help="directory of <paper>.csv files (default: <repo>/reproductions)"),
    arg("--out", default=None, help="write the scorecard CSV here (and a PDF beside it if it ends in .pdf)"),
)
def _scorecard(args: argparse.Namespace) -> None:
    from dpvae.scorecard import claims_line, scorecard, summary_line, write_scorecard

    card = scorecard(paper=args.paper, reproductions_dir=args.reproductions)
    if args.out:
        write_scorecard(card, args.out, reproductions_dir=args.reproductions)
    print(card.to_string(index=False, max_colwidth=40))
    print(summary_line(card))
    print(claims_line(args.reproductions))


@command(
    "claims",
    "the papers' claims (claims.csv), each judged over the recorded rows",
    arg("--reproductions", default=None, help="directory of <paper>.csv files (default: <repo>/reproductions)"),
    arg("--out", default=None, help="write <prefix>.pdf and <prefix>.csv (the verdicts)"),
)
def _claims(args: argparse.Namespace) -> None:
    from dpvae.claims import judge_all, summary_line, write_claims

    table = judge_all(reproductions_dir=args.reproductions)
    if args.out:
        write_claims(table, args.out)
    print(table[["id", "verdict", "evidence"]].to_string(index=False, max_colwidth=100))
    print(summary_line(table))


if __name__ == "__main__":
    sys.exit(main())
