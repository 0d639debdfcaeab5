"""The Snakemake rules' view of a validated configuration: targets, inputs, specs and resources.

`Rules(config)` validates the configuration once and answers every question a rule's input function or
params ask, from an index of all runs (so that planning 7,000 jobs stays linear). Rules pass file paths,
never run tables: the run lists of an aggregate and the inputs of a render job are written to small JSON
spec files by local rules (`aggregate_spec`, `item_spec`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

from dpvae.config import Config, Experiment, facts_of, typed
from dpvae.data.declared import Facts
from dpvae.data.registry import get_dataset, unverified_source_problem
from dpvae.errors import ConfigError, NotBuiltError, TargetError
from dpvae.eval.registry import METRICS
from dpvae.items import ITEMS, PAPERS, SECTIONS, Item, get_item, item_datasets, items_with_id
from dpvae.methods.base import Resources
from dpvae.methods.registry import METHODS
from dpvae.paths import (
    CLAIMS,
    EXPERIMENT_TARGET,
    FIGURES,
    GATHER_TARGET,
    ITEM_TARGET,
    SCORECARD,
    analysis_table,
    experiment_prefix,
    experiment_table,
    fetched_marker,
    item_prefix,
    job_benchmark,
    ledger_file,
    metric_file,
    model_path,
    prepared_dir,
    reference_file,
    samples_file,
    stage1_dir,
    stage1_id,
    stage1_record,
    train_record,
    variant_table,
)
from dpvae.render.output import scale_note
from dpvae.render.spec import ItemSpec, render_config
from dpvae.runs import Run, experiment_runs, run_spec, split_variant, stage1_of
from dpvae.runspec import FrozenDict, RunSpec
from dpvae.specs import AggregateSpec, AnalysisContext, ExperimentSpec, RunFiles
from dpvae.status import RENDERERS, done_items, missing_parts

EXPERIMENT_OUTPUTS = ("pdf", "csv", "tex")
RULE_TARGETS = frozenset({"all"})


class Rules:
    """Every rule-level question about one configuration (validated on construction)."""

    def __init__(self, config: Config | dict, basedir: str | Path = ".") -> None:
        self.config = typed(config)
        self.basedir = Path(basedir)
        self.scale = self.config.scale
        self._specs: dict[Run, RunSpec] = {}
        self._dataset_facts: dict[str, Facts | None] = {}

    # -- runs ------------------------------------------------------------------------------------

    @cached_property
    def _runs(self) -> dict[str, list[Run]]:
        """(experiment, dataset) -> runs; experiments without training are left out."""
        index: dict[str, list[Run]] = {}
        for name, exp in self.config.trained().items():
            for dataset in exp.datasets:
                index[f"{name}/{dataset}"] = experiment_runs(self.config, name, dataset)
        return index

    @cached_property
    def _all_runs(self) -> set[Run]:
        return {run for runs in self._runs.values() for run in runs}

    def runs(self, experiment: str, dataset: str) -> list[Run]:
        return self._runs[f"{experiment}/{dataset}"]

    def all_runs(self) -> set[Run]:
        """Every run some experiment needs."""
        return self._all_runs

    def run(self, dataset: str, variant: str, eps: str, seed: int | str) -> Run:
        run = Run(dataset, variant, eps, int(seed))
        if run not in self._all_runs:
            raise TargetError(f"no experiment in the configuration needs run {run.id}")
        return run

    def run_dir(self, run: Run) -> str:
        return run.path(self.scale)

    def spec(self, dataset: str, variant: str, eps: str, seed: int | str) -> RunSpec:
        return self._spec(self.run(dataset, variant, eps, seed))

    def _spec(self, run: Run) -> RunSpec:
        if run not in self._specs:
            self._specs[run] = run_spec(self.config, run)
        return self._specs[run]

    def spec_json(self, dataset: str, variant: str, eps: str, seed: int | str) -> str:
        return self.spec(dataset, variant, eps, seed).to_json()

    def _facts(self, dataset: str) -> Facts | None:
        """The dataset's facts as the configuration knows them (what a job's resources scale with)."""
        if dataset not in self._dataset_facts:
            self._dataset_facts[dataset] = facts_of(self.config.to_json(), dataset)
        return self._dataset_facts[dataset]

    def train_resources(self, dataset: str, variant: str, eps: str, seed: int | str) -> Resources:
        spec = self.spec(dataset, variant, eps, seed)
        method = METHODS.get(spec.method)
        return method.resources(method.Params.parse(spec.params, name=method.name), self._facts(dataset))

    # -- shared first stages (dpvae.methods.base.stage1_spec) -----------------------------------------

    def stage1_users(self) -> dict[str, list[Run]]:
        """stage-1 directory -> the runs that load it."""
        users: dict[str, list[Run]] = {}
        for run in sorted(self._all_runs):
            if path := self._spec(run).stage1:
                users.setdefault(path, []).append(run)
        return users

    @cached_property
    def _stage1(self) -> dict[str, RunSpec]:
        """stage-1 directory -> its spec (the same from every run that loads it)."""
        return {path: stage1_of(self._spec(runs[0])) for path, runs in self.stage1_users().items()}

    def stage1_inputs(self, dataset: str, variant: str, eps: str, seed: int | str) -> list[str]:
        """What a run's train job reads of its shared first stage (nothing if it has none)."""
        path = self.spec(dataset, variant, eps, seed).stage1
        return [model_path(path), stage1_record(path)] if path else []

    def stage1_spec(self, dataset: str, method: str, key: str, seed: int | str) -> RunSpec:
        path = stage1_dir(self.scale, stage1_id(dataset, method, key, seed))
        if path not in self._stage1:
            raise TargetError(f"no run in the configuration loads the stage 1 {path}")
        return self._stage1[path]

    def stage1_spec_json(self, dataset: str, method: str, key: str, seed: int | str) -> str:
        return self.stage1_spec(dataset, method, key, seed).to_json()

    def stage1_resources(self, dataset: str, method: str, key: str, seed: int | str) -> Resources:
        spec = self.stage1_spec(dataset, method, key, seed)
        entry = METHODS.get(method)
        return entry.stage1_resources(entry.Params.parse(spec.params, name=method), self._facts(dataset))

    # -- metrics ---------------------------------------------------------------------------------

    def metric_options(self, metric: str) -> dict:
        """The configured options of `metric` (its defaults apply to the rest)."""
        return self.config.evaluation.configured(metric)

    def reference_options(self, metric: str) -> dict:
        keys = METRICS.get(metric).reference_keys
        return {k: v for k, v in self.metric_options(metric).items() if k in keys}

    def evaluate_inputs(self, dataset: str, run_dir: str, metric: str) -> dict[str, str]:
        """Exactly what the metric needs: samples, the model, the prepared data and/or its reference."""
        needs = METRICS.get(metric).needs
        inputs = {"train": train_record(run_dir)}
        if "samples" in needs:
            inputs["samples"] = samples_file(run_dir)
        if "model" in needs:
            inputs["model"] = model_path(run_dir)
        if "data" in needs or "samples" in needs:
            inputs["data"] = prepared_dir(self.config.data.root, dataset)
        if "reference" in needs:
            inputs["reference"] = reference_file(self.scale, dataset, metric)
        return inputs

    # -- aggregate, analyze, render, gather -------------------------------------------------------

    def analysis_context(self, experiment: str) -> AnalysisContext:
        """The configuration subset an analysis reads (its experiment, the variant it names, data root, delta)."""
        exp = self.config.experiments[experiment]
        names = [(exp.params or {}).get("variant")]
        return AnalysisContext(
            exp,
            FrozenDict({n: self.config.variants[n] for n in names if n}),
            self.config.data.root,
            self.config.delta,
        )

    def _variant_runs(self, experiment: str, dataset: str, variant: str) -> list[Run]:
        runs = [r for r in self.runs(experiment, dataset) if r.variant == variant]
        if not runs:
            raise TargetError(f"experiment '{experiment}' has no variant '{variant}' on dataset '{dataset}'")
        return runs

    def aggregate_spec(self, experiment: str, dataset: str, variant: str) -> AggregateSpec:
        """What `dpvae aggregate` reads: the experiment and the directory of each run of one variant."""
        runs = tuple(self.run_dir(r) for r in self._variant_runs(experiment, dataset, variant))
        return AggregateSpec(experiment, dataset, variant, self.config.experiments[experiment], runs)

    def variant_tables(self, experiment: str, dataset: str) -> list[str]:
        """One tidy table per variant (so that no job lists thousands of inputs); `combine` joins them."""
        variants = dict.fromkeys(r.variant for r in self.runs(experiment, dataset))
        return [variant_table(self.scale, experiment, dataset, v) for v in variants]

    def aggregate_inputs(self, experiment: str, dataset: str, variant: str) -> list[str]:
        metrics = self.config.experiments[experiment].metrics
        files = []
        for run in self._variant_runs(experiment, dataset, variant):
            path = self.run_dir(run)
            files += [train_record(path), ledger_file(path)] + [metric_file(path, m) for m in metrics]
        return files

    def item_tables(self, item: Item) -> dict[str, list[str]]:
        """experiment -> the tidy tables an item reads."""
        tables = {}
        for name in item.experiments:
            if not self.config.experiments[name].trains:
                tables[name] = [analysis_table(self.scale, name)]
            else:
                tables[name] = [experiment_table(self.scale, name, d) for d in item_datasets(item, self.config, name)]
        return tables

    def item_artifacts(self, item: Item) -> list[str]:
        files = []
        for name in item.experiments:
            if not self.config.experiments[name].trains:
                continue
            computed = [a for a in item.artifacts if a in self.config.experiments[name].metrics]
            for dataset in item_datasets(item, self.config, name):  # only what the experiment computes
                files += [metric_file(self.run_dir(run), a) for run in self.runs(name, dataset) for a in computed]
        return files

    def item_spec(self, paper: str, item_id: str) -> ItemSpec:
        """What `dpvae render` reads: tables, artifacts, the configuration subset the renderer uses, scale."""
        item = get_item(f"{paper}/{item_id}")
        experiments = {n: self.config.experiments[n] for n in item.experiments}
        variants = {split_variant(v)[0] for e in experiments.values() for v in e.variants}
        context = render_config(
            experiments, {v: self.config.variants[v] for v in sorted(variants)}, self.config.delta, self.scale
        )
        tables = FrozenDict({e: tuple(paths) for e, paths in self.item_tables(item).items()})
        artifacts = tuple(self.item_artifacts(item))
        return ItemSpec(item.key, self.scale, tables, artifacts, context, FrozenDict(self._check_setting(item)))

    # -- one table for any experiment: figures/experiments/<experiment>.pdf ------------------------------

    def training_experiment(self, experiment: str) -> Experiment:
        """The experiment's configuration; a TargetError naming the valid ones (or the analysis' item)."""
        experiments = self.config.experiments
        if experiment not in experiments:
            from dpvae.registry import did_you_mean

            trained = list(self.config.trained())
            raise TargetError(
                f"{experiment_prefix(experiment)}.pdf: no experiment '{experiment}' in the configuration"
                f"{did_you_mean(experiment, trained)}; experiments with runs: {', '.join(trained)}"
            )
        exp = experiments[experiment]
        if not exp.trains:
            items = [i.key for i in ITEMS.values() if experiment in i.experiments]
            raise TargetError(
                f"{experiment_prefix(experiment)}.pdf: experiment '{experiment}' is an analysis without runs "
                f"(its table: {analysis_table(self.scale, experiment)}; its item: {', '.join(items) or 'none'})"
            )
        return exp

    def _experiment_datasets(self, experiment: str) -> tuple[list[str], list[str]]:
        """(datasets rendered, datasets left out as unreachable: config data.unreachable)."""
        unreachable = set(self.config.data.unreachable)
        datasets = self.training_experiment(experiment).datasets
        return [d for d in datasets if d not in unreachable], [d for d in datasets if d in unreachable]

    def experiment_benchmarks(self, experiment: str) -> dict[str, list[str]]:
        """run directory -> the benchmark files of its train, sample (if a metric needs samples) and evaluate jobs."""
        metrics = self.training_experiment(experiment).metrics
        sampled = any("samples" in METRICS.get(m).needs for m in metrics)
        runs = {}
        for dataset in self._experiment_datasets(experiment)[0]:
            for run in self.runs(experiment, dataset):
                path = self.run_dir(run)
                names = ["train", *(["sample"] if sampled else []), *(f"evaluate-{m}" for m in metrics)]
                runs[path] = [job_benchmark(path, n) for n in names]
        return runs

    def experiment_spec(self, experiment: str) -> ExperimentSpec:
        """What `dpvae render-experiment` reads: the tidy tables, each run's benchmark files, scale and delta."""
        exp = self.training_experiment(experiment)
        datasets, left_out = self._experiment_datasets(experiment)
        return ExperimentSpec(
            experiment,
            exp.description,
            self.scale,
            self.config.delta,
            tables=tuple(experiment_table(self.scale, experiment, d) for d in datasets),
            runs=tuple(RunFiles(d, tuple(b)) for d, b in self.experiment_benchmarks(experiment).items()),
            left_out=tuple(left_out),
            items=tuple(i.key for i in ITEMS.values() if experiment in i.experiments),
        )

    def experiment_inputs(self, experiment: str) -> list[str]:
        datasets = self._experiment_datasets(experiment)[0]
        tables = [experiment_table(self.scale, experiment, d) for d in datasets]
        return tables + [b for paths in self.experiment_benchmarks(experiment).values() for b in paths]

    def render_inputs(self, paper: str, item_id: str) -> list[str]:
        item = get_item(f"{paper}/{item_id}")
        return [p for paths in self.item_tables(item).values() for p in paths] + self.item_artifacts(item)

    def renderer_files(self, paper: str) -> list[str]:
        """The paper's renderer source: render/<paper>.py, or every module of the package render/<paper>/."""
        render = self.basedir / "src" / "dpvae" / "render"
        module = render / f"{paper}.py"
        return [str(module)] if module.is_file() else sorted(str(p) for p in (render / paper).glob("*.py"))

    def published_files(self, paper: str) -> list[str]:
        directory = self.basedir / "workflow" / "resources" / "published"
        return sorted(str(p) for p in directory.glob(f"{paper}*.csv"))

    def caption(self, paper: str, item_id: str) -> str:
        """The item's report caption (workflow/report/<paper>/<item>.rst) and its scale."""
        path = self.basedir / "workflow" / "report" / paper / f"{item_id}.rst"
        text = path.read_text().strip() if path.is_file() else get_item(f"{paper}/{item_id}").title
        note = scale_note(self.scale)
        scale = f"\n\n**Scale: {self.scale}** — {note}." if note else ""
        return text + scale

    def _pending(self, item: Item) -> list[str]:
        """What keeps an item from building: a renderer or analysis not written, or a setting it cannot show."""
        from dpvae.render.setting import setting_problem

        renderer = RENDERERS.get(item.key) if item.key in RENDERERS else None
        experiments = {n: self.config.experiments[n].to_json() for n in item.experiments}
        problem = setting_problem(item.key, experiments, getattr(renderer, "handles", frozenset()))
        return missing_parts(item, self.config) + ([problem] if problem else [])

    def gathered(self, item_id: str) -> list[str]:
        return [f"{item_prefix(i.paper, i.id)}.pdf" for i in items_with_id(item_id) if not self._pending(i)]

    def gather_pending(self, item_id: str) -> dict[str, list[str]]:
        return {i.key: self._pending(i) for i in items_with_id(item_id) if self._pending(i)}

    def default_targets(self) -> list[str]:
        """Every item that builds today (and whose renderer can show the configured setting), the scorecard and the
        papers' claims judged."""
        done = [i for i in done_items(self.config) if not self._pending(i)]
        return [f"{item_prefix(i.paper, i.id)}.pdf" for i in done] + [f"{SCORECARD}.pdf", f"{CLAIMS}.pdf"]

    def fetch_inputs(self, dataset: str, dryrun: bool = True) -> list[str]:
        """The marker of the verified raw source a dataset is prepared from (none for generated data).

        Unless `dryrun`, a source that is not fetched yet and has files without any checksum must be listed
        in data.allow_unverified: refused here, while planning, saying what to write.
        """
        declared = {name: entry.to_json() for name, entry in self.config.datasets.items()}
        spec = get_dataset(dataset, declared)
        if not spec.files:
            return []
        root = self.config.data.root
        marker = fetched_marker(root, spec.source)
        if dataset not in declared and not dryrun and not Path(marker).is_file():
            problem = unverified_source_problem(spec.source, root, list(self.config.data.allow_unverified))
            if problem:
                raise ConfigError(f"dataset '{dataset}': {problem}")
        return [marker]

    def declared_files(self, source: str) -> list[str]:
        """The files of a dataset declared in the config (the fetch job's inputs); none for a raw source."""
        from dpvae.data.declared import copies

        entry = self.config.dataset_entry(source)
        return [] if entry is None else list(copies(entry).values())

    def declaration(self, source: str) -> str:
        """The fetch job's `--declared` option for a dataset declared in the config: its paths, options and
        identity (the files' sha256: a changed file re-runs the fetch and everything after it); '' otherwise."""
        import shlex

        from dpvae.data.declared import declaration

        entry = self.config.dataset_entry(source)
        return "" if entry is None else "--declared " + shlex.quote(_compact(declaration(entry)))

    # -- targets ---------------------------------------------------------------------------------

    def check_buildable(self, target: str, dryrun: bool) -> None:
        """Refuse a target that names no item (with the valid ids); unless `dryrun`, also an item whose
        methods, metrics, analyses or renderer do not exist yet — while planning, before any job runs."""
        self.check_targets([target], built_only=not dryrun)

    def check_targets(self, targets: Iterable[str], built_only: bool) -> None:
        """`check_buildable` for several targets at once (one message naming every missing part)."""
        not_built: dict[str, list[str]] = {}
        for target in targets:
            items = self._target_items(str(target))
            for item in items:
                self._check_setting(item)
                if built_only and (missing := missing_parts(item, self.config)):
                    not_built[item.key] = missing
        if not_built:
            needed: dict[str, list[str]] = {}
            for key, parts in not_built.items():
                for part in parts:
                    needed.setdefault(part, []).append(key)
            lines = [f"  {part} (needed by {', '.join(keys)})" for part, keys in sorted(needed.items())]
            raise NotBuiltError(
                "cannot build "
                + ", ".join(sorted(not_built))
                + ": not implemented yet:\n"
                + "\n".join(lines)
                + "\n(`snakemake -n` still plans them; "
                "`python -m dpvae status` lists what builds today)"
            )

    def _check_setting(self, item: Item) -> dict:
        """Each of the item's experiments' Setting (`render.setting`); a ConfigError (one line) for an item whose
        renderer cannot show its experiments' configured data or epsilons. The one check: rendering reads it."""
        from dpvae.render.setting import checked_settings

        renderer = RENDERERS.get(item.key) if item.key in RENDERERS else None
        experiments = {n: self.config.experiments[n].to_json() for n in item.experiments}
        return checked_settings(item.key, experiments, getattr(renderer, "handles", frozenset()))

    def _target_items(self, target: str) -> list[Item]:
        if target in RULE_TARGETS or not target.startswith((f"{FIGURES}/", f"./{FIGURES}/")):
            return []
        if m := EXPERIMENT_TARGET.match(target):
            self.training_experiment(m["experiment"])
            if m["ext"] not in EXPERIMENT_OUTPUTS:
                raise TargetError(
                    f"{target}: an experiment's table is "
                    + ", ".join(f"{experiment_prefix(m['experiment'])}.{e}" for e in EXPERIMENT_OUTPUTS)
                )
            return []
        if m := ITEM_TARGET.match(target):
            item = get_item(f"{m['paper']}/{m['item']}")
            if m["ext"] not in item.outputs:
                raise TargetError(
                    f"{target}: item {item.key} is a {item.kind}; its outputs are "
                    + ", ".join(f"{item_prefix(item.paper, item.id)}.{e}" for e in item.outputs)
                )
            return [item]
        if m := GATHER_TARGET.match(target):
            if m["item"] in ("scorecard", "claims"):
                return []
            if not items_with_id(m["item"]):
                if m["item"] in SECTIONS:
                    raise TargetError(
                        f"{target}: '{m['item']}' is a paper; ask for {FIGURES}/{m['item']}/<item>.pdf "
                        f"with an item id of {', '.join(i.id for i in ITEMS.values() if i.paper == m['item'])}"
                    )
                from dpvae.registry import did_you_mean

                ids = sorted({i.id for i in ITEMS.values()})
                raise TargetError(
                    f"{target}: no item '{m['item']}' in any paper{did_you_mean(m['item'], ids)}; "
                    f"item ids: {', '.join(ids)}"
                )
            return []  # a gather includes only what builds, with a cover page saying what is pending
        raise TargetError(
            f"{target}: not a target of this workflow; ask for figures/<paper>/<item>.pdf "
            f"(papers: {', '.join(PAPERS)}; the project's own: {', '.join(SECTIONS[len(PAPERS) :])}), "
            f"figures/<item>.pdf, figures/experiments/<experiment>.pdf, {SCORECARD}.pdf or {CLAIMS}.pdf"
        )


def _compact(spec: dict) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))
