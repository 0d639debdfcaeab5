"""`python -m dpvae <stage> ...`: the command-line stages the Snakemake rules call."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpvae", description=__doc__)
    sub = parser.add_subparsers(dest="stage", required=True)

    p = sub.add_parser("check-config", help="validate configuration files and summarise the run table")
    p.add_argument("configfiles", nargs="+")

    p = sub.add_parser("status", help="print the item status table (markdown), or write it into README.md")
    p.add_argument("configfiles", nargs="*", default=["config.yaml"])
    p.add_argument("--update-readme", metavar="README", help="replace the status block of this README")

    p = sub.add_parser("fetch", help="download or copy from the mirror, and verify, a dataset's raw files")
    p.add_argument("--source", required=True, help="raw source name (data/raw/<source>)")
    p.add_argument("--root", required=True)
    p.add_argument("--mirror", default=None)
    p.add_argument("--allow-unverified", action="store_true",
                   help="accept files without a published checksum, recording their sha256 (config data.allow_unverified)")

    p = sub.add_parser("prepare", help="write a dataset's canonical prepared form")
    p.add_argument("--dataset", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--seed", type=int, default=0)

    for name, text in (("train", "train one run"), ("sample", "draw synthetic records of one run")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--spec", type=_json, required=True, help="the run spec (JSON, see dpvae.runs.run_spec)")
        if name == "sample":
            p.add_argument("--n", type=int, default=None, help="records to draw (default: the method's)")

    p = sub.add_parser("evaluate", help="compute one metric of one run")
    p.add_argument("--spec", type=_json, required=True)
    p.add_argument("--metric", required=True)
    p.add_argument("--options", type=_json, default={})
    p.add_argument("--out", required=True)

    p = sub.add_parser("aggregate", help="tidy table of an experiment's runs on one dataset")
    p.add_argument("--experiment", required=True)
    p.add_argument("--context", type=_json, required=True, help='{"experiment": {...}, "runs": [specs]}')
    p.add_argument("--out", required=True)

    p = sub.add_parser("analyze", help="compute an analysis experiment's tidy table")
    p.add_argument("--experiment", required=True)
    p.add_argument("--context", type=_json, required=True, help="the config subset the analysis needs")
    p.add_argument("--out", required=True)

    p = sub.add_parser("render", help="render one figure or table")
    p.add_argument("--item", required=True, help="<paper>/<item id>")
    p.add_argument("--context", type=_json, default={})
    p.add_argument("--table", action="append", default=[], metavar="EXPERIMENT=PATH")
    p.add_argument("--artifact", action="append", default=[])

    p = sub.add_parser("gather", help="gather one item id from every paper into one PDF")
    p.add_argument("--item", required=True)
    p.add_argument("--pdf", action="append", default=[])
    p.add_argument("--pending", type=_json, default={})
    p.add_argument("--out", required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one stage; a configuration or data error prints its message (naming the key or file), exit 2."""
    from dpvae.config import ConfigError
    from dpvae.data.errors import DataError

    try:
        return _run_stage(_parser().parse_args(argv))
    except (ConfigError, DataError) as error:
        print(f"dpvae: error: {error}", file=sys.stderr)
        return 2


def _run_stage(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("dpvae").setLevel(logging.INFO)
    from dpvae import stages

    if args.stage == "check-config":
        from dpvae.config import load_config
        from dpvae.items import ITEMS, missing_parts
        from dpvae.runs import experiment_runs

        config = load_config(args.configfiles)
        runs = {r for name, e in config["experiments"].items() if "analysis" not in e
                for r in experiment_runs(config, name)}
        done = [k for k, item in ITEMS.items() if not missing_parts(item, config)]
        print(f"configuration valid: {len(config['experiments'])} experiments, {len(runs)} distinct runs, "
              f"{len(done)}/{len(ITEMS)} items buildable: {', '.join(done)}")
    elif args.stage == "status":
        from dpvae.config import load_config
        from dpvae.items import readme_with_status, status_table

        config = load_config(args.configfiles)
        if args.update_readme:
            path = Path(args.update_readme)
            path.write_text(readme_with_status(path.read_text(), config))
        else:
            print(status_table(config))
    elif args.stage == "fetch":
        from dpvae.data.registry import fetch_source

        fetch_source(args.source, args.root, args.mirror, allow_unverified=args.allow_unverified)
    elif args.stage == "prepare":
        from dpvae.data.registry import prepare_dataset

        prepare_dataset(args.dataset, args.root, seed=args.seed)
    elif args.stage == "train":
        stages.train(args.spec)
    elif args.stage == "sample":
        stages.sample(args.spec, args.n)
    elif args.stage == "evaluate":
        stages.evaluate(args.spec, args.metric, args.options, args.out)
    elif args.stage == "aggregate":
        stages.aggregate(args.experiment, args.context["experiment"], args.context["runs"], args.out)
    elif args.stage == "analyze":
        stages.analyze(args.experiment, args.context, args.out)
    elif args.stage == "render":
        tables: dict[str, list[str]] = {}
        for entry in args.table:
            experiment, _, path = entry.partition("=")
            tables.setdefault(experiment, []).append(path)
        stages.render(args.item, args.context, tables, args.artifact)
    elif args.stage == "gather":
        from dpvae.render.gather import gather

        gather(args.item, args.pdf, args.pending, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
