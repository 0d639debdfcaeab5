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
from collections.abc import Sequence
from pathlib import Path

from dpvae.paths import LEDGER, TRAIN_RECORD


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpvae", description=__doc__)
    sub = parser.add_subparsers(dest="stage", required=True)

    p = sub.add_parser("check-config", help="validate configuration files and summarise the run table")
    p.add_argument("configfiles", nargs="+")

    p = sub.add_parser("status", help="print the item status table (markdown), or write it into docs/status.md")
    p.add_argument("configfiles", nargs="*", default=["config.yaml"])
    p.add_argument(
        "--update", metavar="FILE", help="replace the status and headline blocks of FILE (docs/status.md, README.md)"
    )

    p = sub.add_parser("progress", help="where running jobs stand: the newest progress line of each job log")
    p.add_argument("--logs", default="logs", help="the folder of the job logs (default: logs)")
    p.add_argument("--all", action="store_true", help="also the logs whose newest line is a finished loop")

    p = sub.add_parser("plan", help="the jobs some targets still need and their estimated GPU- and CPU-hours")
    p.add_argument("targets", nargs="*", help="files or rules, as for snakemake (default: every buildable item)")
    p.add_argument(
        "--configfile",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration overlay on config.yaml, as for snakemake (--configfile=FILE; repeatable)",
    )
    p.add_argument("--directory", default=".", help="the working directory of the build (default: here)")
    p.add_argument("--cores", type=_positive_int, default=2, help="the build's --cores, for its wall time (default: 2)")
    output = p.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="the plan as JSON")
    output.add_argument("--markdown", action="store_true", help="one row per target (markdown)")
    output.add_argument(
        "--update",
        metavar="FILE",
        help="replace the <!-- plan:begin --> block of FILE (README.md) with the plan as markdown",
    )
    output.add_argument(
        "--record",
        action="store_true",
        help="the build's benchmark files as a record (TSV) for benchmarks/measured/<machine>-<date>/",
    )

    p = sub.add_parser("methods", help="every method with its typed parameters (markdown)")
    p.add_argument("name", nargs="?", help="only this method (with --resolve: a variant, or every variant of it)")
    p.add_argument(
        "--resolve",
        nargs=2,
        metavar=("DATASET", "EPSILON"),
        help="each parameter of the variant(s) on DATASET at EPSILON, its value and the config key it comes from",
    )
    p.add_argument(
        "--configfile",
        action="append",
        default=[],
        metavar="FILE",
        help="with --resolve: a configuration overlay on config.yaml (repeatable)",
    )
    p = sub.add_parser("metrics", help="every metric with what it needs and its typed options (markdown)")
    p.add_argument("name", nargs="?", help="only this metric")

    p = sub.add_parser(
        "synth", help="one synthetic dataset: train a method on a file or dataset id, sample, write the ledger beside"
    )
    p.add_argument("--method", required=True, help="a method (`python -m dpvae methods`)")
    p.add_argument("--data", required=True, help="a .csv / .parquet table or an .npz of images, or a dataset id")
    p.add_argument("--epsilon", type=float, default=None, help="target epsilon (private methods)")
    p.add_argument("--delta", type=float, default=1e-5, help="target delta (default 1e-5)")
    p.add_argument("--params", nargs="*", default=[], metavar="K=V", help="the method's parameters (YAML values)")
    p.add_argument("--out", required=True, type=Path, help="synthetic.csv (a table) or synthetic.npz (x, y)")
    p.add_argument(
        "--audit", nargs="?", type=int, const=1000, default=None, metavar="CANARIES",
        help="train with a one-run canary audit (x.audit.json beside x.privacy.json; default 1000 canaries)",
    )  # fmt: skip
    p.add_argument(
        "--headline", choices=("sound", "paper"), default="sound",
        help="the epsilon held to the target: sound (a proven bound; default) or paper (the paper's claim)",
    )  # fmt: skip
    p.add_argument(
        "--calibrate-sound", action=argparse.BooleanOptionalAction, default=True,
        help="under --headline sound (the default), calibrate the noise so that the sound epsilon meets the target "
        "(default; P3GM scales every stage's noise by one factor); --no-calibrate-sound refuses instead",
    )  # fmt: skip
    p.add_argument("--n", type=int, default=None, help="records to draw (default 1000, whatever the data's size)")
    p.add_argument(
        "--seed", type=int, default=None,
        help="repeatable noise for debugging: whoever knows the seed can replay it, so the ledger says not_dp "
        "(default: secret noise from OS entropy, written nowhere)",
    )  # fmt: skip
    p.add_argument(
        "--seed-file", type=Path, default=None, metavar="FILE",
        help="a secret release that repeats: the key is derived from FILE's bytes (read once, never copied)",
    )  # fmt: skip
    p.add_argument(
        "--work", type=Path, default=None, metavar="DIR",
        help="the private workspace (prepared data, run, checkpoints; default <out>.work/, mode 0700)",
    )  # fmt: skip
    p.add_argument("--keep-work", action="store_true", help="keep the private workspace after the release")
    p.add_argument(
        "--report", dest="quality_report", action=argparse.BooleanOptionalAction, default=True,
        help="write the quality report (report.html: statistics of your private data, kept in the workspace, never "
        "released; default); --no-report skips it",
    )  # fmt: skip
    p.add_argument("--force", action="store_true", help="replace an existing --out and its ledger and audit")
    p.add_argument("--label", default=None, help="a table's label column (default: one named label/target/y/class)")
    p.add_argument("--positive", default=None, help="a table's positive label value (y = 1 for it, 0 otherwise)")
    p.add_argument(
        "--declare", type=Path, default=None, metavar="FILE",
        help="YAML: the data's public domain and options as under the config key datasets.<id> (columns, labels "
        "or positive, domain, domain_epsilon, label, drop, test_fraction, layout)",
    )  # fmt: skip
    p.add_argument(
        "--allow-not-dp", action="store_true",
        help="a private method may read the domain (ranges, categories, labels) from the data: not DP",
    )  # fmt: skip
    p.add_argument(
        "--root", type=Path, default=Path("data"),
        help="where a built-in dataset id is prepared (default: data, as the workflow); a file goes to the workspace",
    )  # fmt: skip
    p.add_argument("--device", default="auto", help="torch device: auto, cpu or cuda")

    p = sub.add_parser("ledger", help="a release's privacy ledger on one screen: epsilons, mechanisms, what is public")
    p.add_argument("path", type=Path, help=f"a {LEDGER}, synth's x.{LEDGER} beside x.csv, or a run directory")

    p = sub.add_parser("fetch", help="download or copy from the mirror, and verify, a dataset's raw files")
    p.add_argument("--source", required=True, help="raw source name (data/raw/<source>)")
    p.add_argument("--root", required=True)
    p.add_argument("--mirror", default=None)
    p.add_argument(
        "--allow-unverified",
        action="store_true",
        help="accept files without a published checksum, recording their sha256 (config data.allow_unverified)",
    )
    p.add_argument(
        "--declared",
        type=_json,
        default=None,
        help="a dataset declared in the config: its paths, options and sha256 (JSON, dpvae.data.declared)",
    )

    p = sub.add_parser("prepare", help="write a dataset's canonical prepared form")
    p.add_argument("--dataset", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--seed", type=int, default=0, help="the split's seed (config data.split_seed)")
    p.add_argument(
        "--secret", action="store_true",
        help="a declared dataset whose runs are releases: its split and domain estimate drawn from OS entropy "
        "(the seed is written nowhere)",
    )  # fmt: skip

    p = sub.add_parser("stage1", help="train a method's shared non-private first stage (DP2-VAE's encoders)")
    p.add_argument(
        "--spec", type=_run_spec, required=True, help="the stage-1 spec (JSON, see dpvae.methods.base.stage1_spec)"
    )

    p = sub.add_parser("train", help="train one run")
    p.add_argument("--spec", type=_run_spec, required=True, help="the run spec (JSON, see dpvae.runspec.RunSpec)")

    p = sub.add_parser("sample", help="draw synthetic records of one trained run")
    p.add_argument("--run", required=True, help=f"the run directory (holds {TRAIN_RECORD})")
    p.add_argument("--n", type=int, default=None, help="records to draw (default: the method's)")

    p = sub.add_parser("evaluate", help="compute one metric of one run")
    p.add_argument("--run", required=True, help="the run directory")
    p.add_argument("--metric", required=True)
    p.add_argument("--options", type=_json, default={})
    p.add_argument("--reference", default=None, help="the metric's cached reference (.npz)")
    p.add_argument("--out", required=True)

    p = sub.add_parser("reference", help="build a metric's cached per-dataset reference (e.g. FID statistics)")
    p.add_argument("--data", required=True, help="the prepared dataset directory")
    p.add_argument("--metric", required=True)
    p.add_argument("--options", type=_json, default={})
    p.add_argument("--device", default="auto", help="torch device: auto (CUDA when available), cpu or cuda")
    p.add_argument("--out", required=True)

    p = sub.add_parser("aggregate", help="tidy table of an experiment's runs on one dataset")
    p.add_argument("--spec", required=True, help="the aggregate spec file (experiment and run directories)")
    p.add_argument("--out", required=True)

    p = sub.add_parser("combine", help="concatenate tidy tables (one per variant) into one")
    p.add_argument("tables", nargs="+")
    p.add_argument("--out", required=True)

    p = sub.add_parser("analyze", help="compute an analysis experiment's tidy table")
    p.add_argument("--experiment", required=True)
    p.add_argument("--context", type=_json, required=True, help="the config subset the analysis needs")
    p.add_argument("--out", required=True)

    p = sub.add_parser("render", help="render one figure or table from its spec file")
    p.add_argument("--spec", required=True, help="results/<scale>/items/<paper>/<item>.json")

    p = sub.add_parser("render-experiment", help="render one experiment's table (any experiment) from its spec file")
    p.add_argument("--spec", required=True, help="results/<scale>/experiments/<experiment>.json")
    p.add_argument("--out", required=True, help="output prefix: figures/experiments/<experiment> (.pdf, .csv, .tex)")

    p = sub.add_parser("gather", help="gather one item id from every paper into one PDF")
    p.add_argument("--item", required=True)
    p.add_argument("--pdf", action="append", default=[])
    p.add_argument("--pending", type=_json, default={})
    p.add_argument("--out", required=True)

    p = sub.add_parser(
        "record",
        help="record paper-scale results of built runs into reproductions/<paper>.csv (refused while a file on the "
        "jobs' path is modified: src/, workflow/, envs/, Snakefile, config.yaml, the overlay --command names)",
    )
    p.add_argument("tables", nargs="*", help="tidy tables (results/paper/tables/<experiment>/<dataset>.csv)")
    p.add_argument("--command", default=None, help="the command that produced them (default: this one)")
    p.add_argument("--out-dir", default=None, help="default: <repo>/reproductions")
    p.add_argument(
        "--replaces",
        action="append",
        default=[],
        metavar="OVERLAY",
        help="drop the rows of the recorded keys made under this earlier campaign overlay, every seed (repeatable)",
    )
    p.add_argument(
        "--prune", action="store_true", help="drop rows filed under an item that does not show their dataset"
    )
    p.add_argument(
        "--study",
        metavar="NAME",
        help="the tables are a campaign script's own measurements with their provenance columns (e.g. "
        "workflow/campaigns/dp2vae_real_fid.py's CSV): merged into reproductions/studies/NAME.csv",
    )

    p = sub.add_parser("scorecard", help="every published cell beside ours, with a verdict")
    p.add_argument("--paper", default=None)
    p.add_argument(
        "--reproductions", default=None, help="directory of <paper>.csv files (default: <repo>/reproductions)"
    )
    p.add_argument("--out", default=None, help="write the scorecard CSV here (and a PDF beside it if it ends in .pdf)")

    p = sub.add_parser("claims", help="the papers' claims (claims.csv), each judged over the recorded rows")
    p.add_argument(
        "--reproductions", default=None, help="directory of <paper>.csv files (default: <repo>/reproductions)"
    )
    p.add_argument("--out", default=None, help="write <prefix>.pdf and <prefix>.csv (the verdicts)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a user-fixable error prints its message (naming the key, file or value) and exits 2, a
    bug its traceback and then one line naming the command and the exception, exit 1."""
    from dpvae.allocator import keep_freed_memory
    from dpvae.errors import DpvaeError

    keep_freed_memory()  # a step's large tensors reuse freed memory (no page faults per step): never a result byte
    if problem := foreign_environment():
        return _fail(problem)
    args = _parser().parse_args(argv)
    try:
        return _run(args)
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


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("dpvae").setLevel(logging.INFO)
    if args.stage in ("aggregate", "combine"):  # bookkeeping: pandas only, no torch or method registry
        from dpvae import tables

        if args.stage == "aggregate":
            tables.aggregate(args.spec, args.out)
        else:
            tables.combine(args.tables, args.out)
        return 0
    if args.stage == "progress":  # reads log files only
        from dpvae.progress import newest_lines

        for job in newest_lines(Path(args.logs)):
            if args.all or job.done < job.total:
                print(f"{job.log}: {job.name} {job.done}/{job.total} {job.unit}, ETA {job.eta}")
        return 0
    if args.stage == "render-experiment":  # pandas and matplotlib only
        from dpvae.render.experiment import render_experiment

        render_experiment(args.spec, args.out)
        return 0
    from dpvae import stages

    if args.stage == "check-config":
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
    elif args.stage == "status":
        from dpvae.config import load
        from dpvae.status import status_table, with_status

        config = load(args.configfiles)
        if args.update:
            path = Path(args.update)
            path.write_text(with_status(path.read_text(), config))
        else:
            print(status_table(config))
    elif args.stage == "plan":
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
    elif args.stage == "methods" and args.resolve:
        from dpvae.catalog import resolved_parameters
        from dpvae.config import load
        from dpvae.errors import ConfigError
        from dpvae.paths import REPO_ROOT

        if not args.name:
            raise ConfigError(
                "methods --resolve: name a variant or a method (python -m dpvae methods p3gm --resolve ...)"
            )
        config = load([REPO_ROOT / "config.yaml", *args.configfile])
        print(resolved_parameters(config, args.name, *args.resolve))
    elif args.stage in ("methods", "metrics"):
        from dpvae.catalog import method_catalog, metric_catalog

        print((method_catalog if args.stage == "methods" else metric_catalog)(args.name))
    elif args.stage == "synth":
        from dpvae.synth import Request, parse_params, synth

        fields = ("method", "data", "epsilon", "delta", "out", "audit", "n", "seed", "root", "label", "positive")
        fields += ("declare", "allow_not_dp", "device", "headline", "calibrate_sound", "seed_file", "work")
        fields += ("keep_work", "force", "quality_report")
        given = {k: getattr(args, k) for k in fields if getattr(args, k) is not None} | {"epsilon": args.epsilon}
        request = Request(**given, params=parse_params(args.params))  # --n left out: synth.DEFAULT_N
        print(synth(request).report)
    elif args.stage == "ledger":
        from dpvae.methods.registry import METHODS
        from dpvae.privacy.summary import screen

        print(screen(args.path, lambda name: METHODS.get(name).releases_n if name in METHODS else ""))
    elif args.stage == "fetch":
        if args.declared is not None:
            from dpvae.data.declared import copy_in

            copy_in(args.source, args.declared, args.root)
        else:
            from dpvae.data.registry import fetch_source

            fetch_source(args.source, args.root, args.mirror, allow_unverified=args.allow_unverified)
    elif args.stage == "prepare":
        import secrets

        from dpvae.data.registry import prepare_dataset

        seed = secrets.randbits(63) if args.secret else args.seed  # a release's split and estimate: secret
        prepare_dataset(args.dataset, args.root, seed=seed, secret_seed=args.secret)
    elif args.stage == "stage1":
        stages.stage1(args.spec)
    elif args.stage == "train":
        stages.train(args.spec)
    elif args.stage == "sample":
        stages.sample(args.run, args.n)
    elif args.stage == "evaluate":
        stages.evaluate(args.run, args.metric, args.options, args.out, args.reference)
    elif args.stage == "reference":
        stages.reference(args.data, args.metric, args.options, args.out, args.device)
    elif args.stage == "analyze":
        stages.analyze(args.experiment, args.context, args.out)
    elif args.stage == "render":
        stages.render(args.spec)
    elif args.stage == "gather":
        from dpvae.render.gather import gather

        gather(args.item, args.pdf, args.pending, args.out)
    elif args.stage == "record":
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
    elif args.stage == "scorecard":
        from dpvae.scorecard import claims_line, scorecard, summary_line, write_scorecard

        card = scorecard(paper=args.paper, reproductions_dir=args.reproductions)
        if args.out:
            write_scorecard(card, args.out, reproductions_dir=args.reproductions)
        print(card.to_string(index=False, max_colwidth=40))
        print(summary_line(card))
        print(claims_line(args.reproductions))
    elif args.stage == "claims":
        from dpvae.claims import judge_all, summary_line, write_claims

        table = judge_all(reproductions_dir=args.reproductions)
        if args.out:
            write_claims(table, args.out)
        print(table[["id", "verdict", "evidence"]].to_string(index=False, max_colwidth=100))
        print(summary_line(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
