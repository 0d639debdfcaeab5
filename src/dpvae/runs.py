"""The run table: expand a validated config into every run an experiment needs.

A run is (dataset, variant, epsilon label, seed). Variants of an experiment with a sweep are derived ids
`<variant>@<sweep name>=<point>`. Non-private variants run once per seed with epsilon label 'inf'.
Hyper-parameters resolve as: variant params < per_dataset < per_setting ("*", then the run's dataset) < sweep
point (`param_layers`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpvae import randomness
from dpvae.config_types import EVERY_DATASET, Config, Experiment, PerSetting, Sweep, as_config
from dpvae.paths import ledger_file, prepared_meta, run_dir, run_id, train_record
from dpvae.runspec import Audit, RunSpec
from dpvae.schema import format_eps

SWEEP_SEPARATOR = "@"


@dataclass(frozen=True, order=True)
class Run:
    dataset: str
    variant: str
    eps: str
    seed: int

    @property
    def id(self) -> str:
        """'<dataset>/<variant>/eps<eps>/seed<seed>': the run's name, the same at every scale."""
        return run_id(self.dataset, self.variant, self.eps, self.seed)

    def path(self, scale: str) -> str:
        """Its directory at one scale (results/<scale>/runs/<id>)."""
        return run_dir(scale, self.id)

    @property
    def base_variant(self) -> str:
        return split_variant(self.variant)[0]


def split_variant(variant_id: str) -> tuple[str, tuple[str, str] | None]:
    """'p3gm@d_p=10' -> ('p3gm', ('d_p', '10')); 'p3gm' -> ('p3gm', None)."""
    if SWEEP_SEPARATOR not in variant_id:
        return variant_id, None
    base, point = variant_id.split(SWEEP_SEPARATOR, 1)
    name, label = point.split("=", 1)
    return base, (name, label)


def variant_ids(experiment: Experiment | Any) -> list[str]:
    """The (possibly sweep-derived) variant ids of an experiment."""
    exp = experiment if isinstance(experiment, Experiment) else Experiment.from_json(experiment)
    if not exp.sweep:
        return list(exp.variants)
    return [f"{v}{SWEEP_SEPARATOR}{exp.sweep.name}={p}" for v in exp.variants for p in exp.sweep.labels()]


def is_private(config: Config | Any, variant_id: str) -> bool:
    """Whether a variant's runs are private: its `private` if configured, else its method's."""
    from dpvae.methods.registry import METHODS  # here: aggregation imports this module without the methods

    variant = as_config(config).variants[split_variant(variant_id)[0]]
    return bool(METHODS.get(variant.method).private if variant.private is None else variant.private)


def experiment_seeds(exp: Experiment | Any) -> list[int]:
    """An experiment's seeds: `seeds: n` is 0..n-1; a list names them (e.g. [3, 4]: two more seeds beside
    recorded seeds 0-2, without running those again)."""
    return (exp if isinstance(exp, Experiment) else Experiment.from_json(exp)).seed_list()


def experiment_runs(config: Config | Any, experiment: str, dataset: str | None = None) -> list[Run]:
    """Every run of `experiment` (optionally on one dataset), in a stable order."""
    config = as_config(config)
    exp = config.experiments[experiment]
    datasets = [dataset] if dataset else exp.datasets
    runs = []
    for ds in datasets:
        for vid in variant_ids(exp):
            labels = [format_eps(e) for e in exp.epsilons] if is_private(config, vid) else ["inf"]
            runs += [Run(ds, vid, eps, seed) for eps in labels for seed in exp.seed_list()]
    return runs


def setting_matches(entry: PerSetting | Any, dataset: str, eps: str) -> bool:
    """Whether a variant's `per_setting` entry applies to a run on `dataset` at epsilon label `eps`."""
    return (entry if isinstance(entry, PerSetting) else PerSetting.from_json(entry)).matches(dataset, eps)


def param_layers(
    config: Config | Any,
    variant: str,
    dataset: str,
    eps: str,
    sweep: Sweep | Any | None = None,
    point: str | None = None,
) -> list[tuple[str, dict]]:
    """(source, values) of every layer that sets a run's hyper-parameters, lowest first: on a dataset declared under
    `datasets`, the method's defaults for its kind of data (`Method.data_defaults`) < variant params < per_dataset <
    per_setting for every dataset ("*") < per_setting for this dataset < sweep point."""
    key = f"variants.{variant}"
    config = as_config(config)
    entry = config.variants[variant]
    layers = [(f"{key}.params", entry.params)]
    if dataset in entry.per_dataset:
        layers.append((f"{key}.per_dataset.{dataset}", entry.per_dataset[dataset]))
    settings = list(enumerate(entry.per_setting))
    for every in (True, False):
        layers += [
            (f"{key}.per_setting[{i}] (dataset {s.dataset}, epsilon {s.epsilon})", s.params)
            for i, s in settings
            if s.matches(dataset, eps) and (s.dataset == EVERY_DATASET) == every
        ]
    if sweep and point is not None:
        sweep = sweep if isinstance(sweep, Sweep) else Sweep.from_json(sweep)
        layers.append((f"sweep {sweep.name}={point}", sweep.points[point]))
    declared = config.dataset_entry(dataset)
    if declared is not None:  # the papers' datasets: their configurations state every parameter (specs unchanged)
        stated: dict = {}
        for _, values in layers:
            stated.update(values)
        if defaults := _data_defaults(entry.method, declared, stated.get("max_train")):
            layers.insert(0, (f"the kind of data of '{dataset}' (Method.data_defaults)", defaults))
    return layers


def _data_defaults(method: str, declared: dict, max_train: int | None) -> dict:
    """`Method.data_defaults` of a declared dataset, from its facts (`declared.facts`: read once per file version)."""
    from dpvae.data.declared import facts
    from dpvae.errors import DataError
    from dpvae.methods.registry import METHODS

    try:
        found = facts(declared)
    except (KeyError, ValueError, OSError, DataError):
        return {}  # a declaration that cannot be read: validation names its problem
    if max_train:
        found = dataclasses.replace(found, n_train=min(found.n_train, max_train))
    return METHODS.get(method).data_defaults(found)


def resolve_params(
    config: Config | Any,
    variant: str,
    dataset: str,
    eps: str,
    sweep: Sweep | Any | None = None,
    point: str | None = None,
) -> dict:
    """Hyper-parameters of one run: the layers of `param_layers`, later ones winning."""
    params: dict = {}
    for _, values in param_layers(config, variant, dataset, eps, sweep, point):
        params.update(copy.deepcopy(dict(values)))
    return params


def resolved_sources(
    config: Config | Any,
    variant: str,
    dataset: str,
    eps: str,
    sweep: Sweep | Any | None = None,
    point: str | None = None,
) -> dict[str, tuple[Any, str]]:
    """Each hyper-parameter a run's configuration sets -> (its value, the layer it comes from)."""
    sources: dict[str, tuple[Any, str]] = {}
    for source, values in param_layers(config, variant, dataset, eps, sweep, point):
        sources.update({k: (v, source) for k, v in values.items()})
    return sources


def run_spec(config: Config | Any, run: Run) -> RunSpec:
    """Everything a stage needs to train, sample or evaluate one run (`RunSpec`, its JSON the train command's)."""
    config = as_config(config)
    base, point = split_variant(run.variant)
    sweep = None
    if point:
        sweep = next(
            e.sweep
            for e in config.experiments.values()
            if e.sweep is not None and e.sweep.name == point[0] and base in e.variants
        )
    variant = config.variants[base]
    private = is_private(config, base)
    audit = variant.audit  # only audited runs carry the key
    spec = RunSpec(
        run_id=run.id,
        run=run.path(config.scale),
        scale=config.scale,
        dataset=run.dataset,
        variant=run.variant,
        method=variant.method,
        private=private,
        params=resolve_params(config, base, run.dataset, run.eps, sweep, point[1] if point else None),
        epsilon=float(run.eps) if private else None,
        delta=config.delta,
        seed=run.seed,
        device=config.device,
        data_root=config.data.root,
        audit=Audit.from_dict(dict(audit), f"config key 'variants.{base}.audit'") if audit else None,
        calibrate="sound" if private and variant.calibrate == "sound" else None,  # likewise
        precision=_precision(config, variant.method),
        data_identity=_data_identity(config, run.dataset),
        randomness=_randomness(config, run.dataset, private),
    )
    stage1 = stage1_of(spec)
    return dataclasses.replace(spec, stage1=stage1.run) if stage1 else spec


def stage1_of(spec: RunSpec) -> RunSpec | None:
    """The spec of the shared first stage run `spec` loads (`dpvae.methods.base.stage1_spec`), or None.

    `run_spec` names its directory in the run spec's `stage1`: the train stage then loads it (the workflow
    builds it first); a spec without `stage1` trains the stage in-process, drawing the same."""
    from dpvae.methods.base import stage1_spec  # here: aggregation imports this module without the methods
    from dpvae.methods.registry import METHODS

    method = METHODS.get(spec.method)
    params = method.Params.parse(spec.params, key=f"variants.{spec.variant}.params", name=method.name)
    return stage1_spec(spec, params, method)


def _data_identity(config: Config, dataset: str) -> dict | None:
    """The keyed fingerprint of a dataset declared in the config (of its files' sha256 and options: a changed
    file changes the spec, so its runs train again); None for a built-in one, whose specs stay as they were."""
    entry = config.dataset_entry(dataset)
    if entry is None:
        return None
    from dpvae.data.declared import fingerprint, identity

    return fingerprint(identity(entry), config.data.root)


def prepares_secretly(config: Config | Any, dataset: str) -> bool:
    """Whether a dataset's preparation is a release's (a declared dataset whose runs are secret, `_randomness`): its
    split and domain estimate then come from OS entropy (`dpvae prepare --secret`)."""
    return _randomness(as_config(config), dataset, private=True) == randomness.SECRET


def secret_datasets(config: Config | Any) -> list[str]:
    """The datasets whose preparation and private runs are a release's (`prepares_secretly`), sorted."""
    config = as_config(config)
    return sorted(d for d in config.datasets if prepares_secretly(config, d))


def _randomness(config: Config, dataset: str, private: bool) -> str | None:
    """'secret' for a private run on a dataset declared in the config (a release) unless its declaration says
    `randomness: seeded`; None (seeded, a replication run) otherwise, so that the papers' runs keep their specs."""
    entry = config.datasets.get(dataset)
    if not private or entry is None or (entry.randomness or randomness.SECRET) != randomness.SECRET:
        return None
    return randomness.SECRET


def _precision(config: Config, method: str) -> str | None:
    """The configured precision where it changes what the run computes: not fp32 and applied by the method
    (`Method.precisions`); else None, so that fp32 runs keep their specs and hashes."""
    from dpvae.methods.registry import METHODS
    from dpvae.models.precision import DEFAULT

    wanted = config.precision or DEFAULT
    return wanted if wanted != DEFAULT and wanted in METHODS.get(method).precisions else None


def find_run(config: Config | Any, dataset: str, variant: str, eps: str, seed: int | str) -> Run:
    """The run with these wildcards if some experiment needs it, else a ValueError."""
    config = as_config(config)
    run = Run(dataset, variant, eps, int(seed))
    for name, exp in config.experiments.items():
        if exp.trains and dataset in exp.datasets and run in experiment_runs(config, name, dataset):
            return run
    raise ValueError(f"no experiment in the configuration needs run {run.id}")


def recomputed_ledger(run: str | Path) -> tuple[str, str]:
    """A private run's written ledger (its privacy.json) and the one this code computes again from the run's spec
    (train.json) and the data-dependent numbers the written one records (`Method.recompute_ledger`), both as the
    text `Ledger.write` writes: equal texts mean a bit-identical ledger."""
    from dpvae.files import json_text
    from dpvae.methods.registry import get_method  # here: aggregation imports this module without the methods

    run = Path(run)
    written = ledger_file(run).read_text()
    spec = RunSpec.from_dict(json.loads(train_record(run).read_text())["spec"], f"{train_record(run)}: spec")
    method = get_method(spec.method)
    params = method.Params.parse(spec.params, key=f"variants.{spec.variant}.params", name=method.name)
    budgeted, fitted = domain_budget(spec)
    ledger = method.recompute_ledger(params, budgeted, json.loads(written))
    return written, json_text(released_ledger(ledger, fitted, spec).to_dict())


def planned_release(spec: RunSpec, facts: Any = None) -> Any:
    """The ledger a private run of `spec` writes (its privacy.json, as a `Ledger`), computed before training: the
    method's `planned_ledger` on the prepared data's facts (`prepared_facts`, or the `facts` given), with its
    dataset's domain cost composed in as the train stage does (`domain_budget`, `released_ledger`); None where the
    method cannot plan it (an LVAE Lipschitz variant has no ledger)."""
    from dpvae.methods.registry import get_method  # here: aggregation imports this module without the methods

    method = get_method(spec.method)
    params = method.Params.parse(spec.params, key=f"variants.{spec.variant}.params", name=method.name)
    budgeted, fitted = domain_budget(spec)
    facts = facts if facts is not None else prepared_facts(spec, getattr(params, "max_train", None))
    planned = method.planned_ledger(params, budgeted, facts)
    return None if planned is None else released_ledger(planned, fitted, spec)


def domain_budget(spec: RunSpec) -> tuple[RunSpec, Any]:
    """(the spec its method trains under, the run's dataset domain or None). A private run's method spends its
    target ε less a declared dataset's domain estimate (`dpvae.data.domain`); a run calibrated to the sound
    bound (spec `calibrate: sound`) spends the ε' at which the whole release's sound ε meets the target
    (`sound_calibrated_epsilon` over the method's planned ledgers on the prepared data's facts)."""
    from dpvae.data import domain

    fitted = domain.of_run(spec)
    if not spec.private:
        return spec, fitted
    if spec.calibrate == "sound":
        return dataclasses.replace(spec, epsilon=_sound_budget(spec, fitted)), fitted
    if fitted is None or fitted.estimate is None:
        return spec, fitted
    return dataclasses.replace(spec, epsilon=domain.training_epsilon(spec, fitted)), fitted


def _sound_budget(spec: RunSpec, fitted: Any) -> float:
    """The method's own target for a sound-calibrated run (refused, naming both, where none meets the target)."""
    from dpvae.errors import PrivacyBudgetExceeded
    from dpvae.methods.registry import METHODS

    method = METHODS.get(spec.method)
    params = method.Params.parse(spec.params, key=f"variants.{spec.variant}.params", name=method.name)
    facts = prepared_facts(spec, getattr(params, "max_train", None))
    calibrated = sound_calibrated_epsilon(
        lambda eps: method.planned_ledger(params, dataclasses.replace(spec, epsilon=eps), facts), spec, fitted
    )
    if calibrated is None:
        raise PrivacyBudgetExceeded(spec.epsilon, float("inf"))
    return calibrated


def prepared_facts(spec: RunSpec, max_train: int | None = None) -> Any:
    """The `Facts` of a run's prepared dataset (`dataset_facts`)."""
    return dataset_facts(spec.data_root, spec.dataset, max_train)


def dataset_facts(data_root: str | Path, dataset: str, max_train: int | None = None) -> Any:
    """The `Facts` of a prepared dataset (its meta.json): record shape, split sizes (training after `max_train`),
    label classes."""
    from dpvae.data.declared import Facts

    meta = json.loads(prepared_meta(Path(data_root), dataset).read_text())
    n_train, n_test = meta["shapes"]["train"][0], meta["shapes"]["test"][0]
    classes = len(meta.get("label_names") or []) or int(meta.get("classes", 0))
    shape = tuple(meta["shapes"]["train"][1:])
    return Facts(shape, min(n_train, max_train or n_train), n_test, classes)


def released_ledger(ledger: Any, fitted: Any, spec: RunSpec) -> Any:
    """A method's ledger as the run releases it: its dataset's domain cost composed in (the estimate's pure
    ε-DP Laplace histograms before it in both accountings, `Ledger` preprocessing; a domain read from the data
    marked not DP), judged against the spec's target; a sound-calibrated run's headline is its sound ε; where its
    noise came from (`dpvae.randomness`: seeded, not a release, or secret)."""
    from dpvae.privacy.ledger import Mechanism, marked_not_dp, with_preprocessing
    from dpvae.samplers import laplace_sampler

    target = spec.epsilon
    if fitted is not None and (estimate := fitted.estimate) is not None:

        def record(adjacency: str) -> Mechanism:
            sensitivity = estimate.sensitivity(adjacency)
            name = f"domain estimate: Laplace histograms of {len(estimate.columns)} column(s)' bounds"
            sampler = laplace_sampler(estimate.scale, sensitivity) if estimate.discrete else None
            return Mechanism(name, estimate.scale / sensitivity, sensitivity=sensitivity, sampler=sampler)

        sound = ledger.sound.adjacency if ledger.sound is not None else "replace-one"
        ledger = with_preprocessing(ledger, record(ledger.paper.adjacency), record(sound), target)
    if fitted is not None and fitted.not_dp is not None:
        ledger = marked_not_dp(ledger, fitted.not_dp)
    if spec.calibrate == "sound" and ledger.sound is not None:
        ledger = dataclasses.replace(ledger, headline="sound", target_epsilon=target)
    return dataclasses.replace(ledger, randomness=randomness.note(spec))


def sound_calibrated_epsilon(planned: Any, spec: RunSpec, fitted: Any) -> float | None:
    """The largest ε' (to 1e-6 relative) at which a method's planned ledger (`planned(ε')`, `Method.planned_ledger`
    at target ε'), as released on `fitted`, has a sound ε within the spec's target; None if none in
    [target * 1e-6, target] does (no sound accounting, or a method that cannot calibrate that low).

    A log grid from the target down finds the first ε' that meets it; Brent's method then finds where the sound ε
    crosses the target between it and the grid point above (it is continuous and increasing in ε'), and the
    point returned is one that meets it (bisection where Brent's cannot run). A target the method's own
    calibration cannot reach counts as not meeting it."""
    from scipy import optimize

    from dpvae.errors import ConfigError, PrivacyBudgetExceeded

    excesses: dict[float, float] = {}

    def excess(eps: float) -> float:
        """The release's sound ε at ε' less the target (inf: ε' cannot be planned, or there is no sound ε)."""
        if eps not in excesses:
            try:
                released = released_ledger(planned(eps), fitted, dataclasses.replace(spec, calibrate="sound"))
            except ConfigError:  # the parameters themselves: refused, naming the key, whatever ε'
                raise
            except (ValueError, PrivacyBudgetExceeded):  # e.g. a noise multiplier out of the calibration's range,
                released = None  # or mechanisms before DP-SGD (P3GM's encoding) that alone exceed ε'
            sound = None if released is None or released.sound is None else released.sound.epsilon
            excesses[eps] = math.inf if sound is None else sound - target
        return excesses[eps]

    target = float(spec.epsilon)
    grid = [float(eps) for eps in target * np.logspace(0, -6, 61)]
    first = next((i for i, eps in enumerate(grid) if excess(eps) <= 0), None)  # the points below are not evaluated
    if first is None:
        return None
    if first == 0:
        return target
    low, high = grid[first], grid[first - 1]
    if math.isfinite(excess(high)) and excess(low) < 0:
        try:
            root = optimize.brentq(excess, low, high, xtol=1e-7 * low)
        except (ValueError, RuntimeError):  # e.g. an infinite excess inside the bracket: bisect
            root = None
        for candidate in () if root is None else (root, root * (1 - 1e-6)):
            if low <= candidate and excess(candidate) <= 0:
                return float(candidate)
    while high - low > 1e-6 * low:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if excess(middle) <= 0 else (low, middle)
    return float(low)
