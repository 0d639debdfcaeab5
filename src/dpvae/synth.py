"""`python -m dpvae synth`: one synthetic dataset from one method, outside the workflow: a release.

The data is a file (a table or image arrays, declared as under the config key `datasets`) or a built-in id.
Everything the release is made from goes to a private workspace (`--work`, default `release.default_workspace`,
outside --out's folder, mode 0700): a file's prepared copy (under the id `<stem>`, the same for neighbouring files),
the run (trained by the workflow's own train stage: ledger, budget check, canary audit), its checkpoints and
records. The release bundle is `release.RELEASED`: the samples (`--out`: `.csv`, the table's columns in their own
units in the file's order; `.npz`, `x` and `y` as prepared), the ledger `x.privacy.json` and, with `--audit`,
`x.audit.json`; nothing else is written beside it, and the workspace is deleted once the bundle is in place
(`--keep-work` keeps it; it is private, never part of it), all but the quality report (`release.REPORT`,
`dpvae.quality`): statistics of the private data for its holder, written before the bundle and kept in the workspace
(`--no-report` skips it).

The noise is secret (`dpvae.randomness`): drawn from OS entropy, or from `--seed-file` (read once, never copied),
and written nowhere. `--seed N` makes the run repeatable for debugging; whoever knows N can replay the noise, so the
ledger then says `not_dp`. Every argument is checked before anything is written; a problem is one line naming the
option and value. The headline ε is the sound one: a private method whose sound ε (a ledger that is not DP:
unbounded) exceeds the target is refused, before training where the method computes its ledger from the data's
facts (`Method.planned_ledger`), else after training and before any sample is written; `--headline paper`
releases under the paper's claim instead. The outputs are staged in the workspace and moved beside `--out` at the
end (ledger, audit, then the samples), so a failure leaves the previous outputs (or none) as they were.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpvae.errors import ConfigError, DataError
from dpvae.files import atomic_write
from dpvae.paths import PREPARED_META, audit_file, ledger_file, model_path, prepared_dir, prepared_meta
from dpvae.release import bundle, default_workspace
from dpvae.runspec import Audit, RunSpec

LABEL_GUESSES = ("label", "target", "y", "class")
OUT_SUFFIXES = (".csv", ".npz")
#: Records drawn unless --n says, where the release treats the training-set size N as protected (an add/remove-one
#: headline of a method that does not release N): a fixed number, so that the samples do not tell N. Where N is
#: public (bounded DP, `n_is_public`), the default is N itself, the size of the data the release stands in for.
DEFAULT_N = 1000
DEVICES = re.compile(r"auto|cpu|cuda(:\d+)?")


@dataclass(frozen=True)
class Request:
    """What `dpvae synth` was asked for (the command line, typed)."""

    method: str
    data: str
    epsilon: float | None
    delta: float
    params: dict[str, Any]
    out: Path
    audit: int | None = None  # canaries, or None: no audit
    n: int | None = None  # records to draw (None: `default_n`)
    seed: int | None = None  # None: secret randomness (a release); N: repeatable, not DP (whoever knows N replays)
    seed_file: Path | None = None  # the secret's material, read once (never copied): a repeatable secret release
    root: Path = Path("data")  # where a built-in dataset's public files are prepared
    work: Path | None = None  # the private workspace (default: `release.default_workspace`)
    keep_work: bool = False  # keep the workspace after a release
    force: bool = False  # replace an existing --out and its bundle
    label: str | None = None
    positive: Any = None
    device: str = "auto"
    headline: str = "sound"  # the ε a private release is held to: "sound" (a proven bound) or "paper" (its claim)
    declare: Path | None = None  # YAML: the data's public domain and options (as a config `datasets` entry)
    allow_not_dp: bool = False  # a private method may read the domain from the data (not DP)
    calibrate_sound: bool = True  # under --headline sound: the noise calibrated so that the sound ε meets --epsilon
    quality_report: bool = True  # write the data holder's quality report into the workspace (never released)


@dataclass(frozen=True)
class Release:
    """What `synth` wrote, and the few lines a user must know of it."""

    samples: Path
    ledger: Path
    audit: Path | None
    report: str
    quality: Path | None = None  # the quality report, in the private workspace
    #: what preparing a file did to values outside its domain (`domain.Notes`; None: a built-in dataset): for the
    #: data holder's terminal (the CLI prints it to stderr), in memory only, never written to a file
    private_notes: str | None = None


SEED_GIVEN = (
    "seed given: whoever knows --seed can replay the run's noise (a repeatable run for debugging, not a release)"
)


def beside(out: Path) -> tuple[Path, Path]:
    """The ledger and the audit written beside `out` (`release.RELEASED`): x.csv -> x.privacy.json, x.audit.json."""
    _, ledger, audit = bundle(out)
    return ledger, audit


def workspace(request: Request) -> Path:
    """The release's private workspace: --work, or `release.default_workspace` (outside --out's folder)."""
    return request.work if request.work is not None else default_workspace(request.out)


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """`k=v` pairs, each value read as YAML (`epochs=3`, `gen_channels=[16, 8]`, `lr=1e-3`)."""
    import yaml

    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--params {pair!r}: write key=value (e.g. epochs=3)")
        try:
            params[key] = yaml.safe_load(value)
        except yaml.YAMLError as error:
            raise ConfigError(f"--params {pair!r}: the value is not valid YAML ({error})") from None
    return params


def synth(request: Request) -> Release:
    """Check, (refuse,) prepare, train, (refuse,) sample in the private workspace; write the release bundle beside
    `request.out`; delete the workspace unless `keep_work`."""
    from dpvae import randomness

    method, params, entry, facts = _checked(request)
    work = workspace(request)
    run_dir = work / "run"
    if request.seed_file is not None:
        randomness.use_seed_file(request.seed_file)  # read once: the key lives in this process only
    spec = _spec(request, method, params.to_dict(), "", run_dir)  # a draft: the dataset is named below
    if method.private:
        spec, params = _planned(method, params, spec, facts, entry, request)  # refused before training if it can be
    _make_private_dir(work)  # every check passed: the first write
    report_file(work).unlink(missing_ok=True)  # an earlier release's report is not this one's
    root = work / "data" if entry is not None else request.root
    dataset = _dataset_id(request, entry)
    identity = None
    if entry is not None:  # a changed file is another dataset; keyed: no file hash in the run's spec
        from dpvae.data import declared

        identity = declared.fingerprint(declared.identity(entry), root)
    named = _spec(request, method, params.to_dict(), dataset, run_dir, root)
    spec = dataclasses.replace(named, calibrate=spec.calibrate, data_identity=identity)
    prepared = _prepare(dataset, entry, request, root, spec)
    from dpvae import stages
    from dpvae.data.store import load_prepared
    from dpvae.privacy.ledger import Ledger, marked_not_dp
    from dpvae.tables import read_spec

    if not _trained(run_dir, spec, read_spec):
        shutil.rmtree(run_dir, ignore_errors=True)
        stages.train(spec)
    ledger = None
    if method.private:
        try:
            ledger = _headlined(method, Ledger.read(ledger_file(run_dir)), request)
        except ConfigError:
            shutil.rmtree(run_dir)
            raise
        if request.seed is not None:
            ledger = marked_not_dp(ledger, SEED_GIVEN)
    n_train = facts.n_train if facts is not None else _n_train(prepared)
    request = dataclasses.replace(request, n=default_n(method, ledger, n_train) if request.n is None else request.n)
    samples = np.load(stages.sample(run_dir, request.n))
    data = load_prepared(prepared)
    if ledger is not None:  # the released ledger says what it treats as public, N only where it is public
        ledger = dataclasses.replace(ledger, public=_public(method, ledger, n_train, data.meta, request))
    quality = _quality(data, samples, ledger, method, request) if request.quality_report else None
    release = _publish(run_dir, samples, data.meta, ledger, request)
    report = _report(method, ledger, release, request, quality)
    notes = None if entry is None else _private_notes(root, dataset, data.meta)
    if not request.keep_work:
        _clear(work, keep=None if quality is None else report_file(work))
    quality_file = None if quality is None else report_file(work)
    return dataclasses.replace(release, report=report, quality=quality_file, private_notes=notes)


def _private_notes(root: Path, dataset: str, meta: dict) -> str:
    """The notes of a file's preparation (`declared.private_notes`), counted again from the workspace's copies."""
    from dpvae.data import declared, domain
    from dpvae.paths import raw_dir

    entry = declared.recorded(dataset, root)
    return declared.private_notes(raw_dir(root, dataset), entry, domain.Domain.from_dict(meta["domain"])).text()


def n_is_public(method: Any, ledger: Any) -> bool:
    """Whether the release treats the training-set size N as public: a non-private method, a headline under
    replace-one neighbours (bounded DP: neighbours have the same N), or a method whose release depends on N
    (`Method.releases_n`) -- what the ledger's `public` says (`privacy.summary.public_text`)."""
    if ledger is None:
        return True
    return ledger.headline_accounting.adjacency == "replace-one" or bool(method.releases_n)


def default_n(method: Any, ledger: Any, n_train: int) -> int:
    """Records drawn without --n: the training N where it is public (`n_is_public`), else `DEFAULT_N`."""
    return n_train if n_is_public(method, ledger) else DEFAULT_N


def _quality(data: Any, samples: Any, ledger: Any, method: Any, request: Request) -> Any:
    """The quality report's statistics (`dpvae.quality`), its page written into the workspace (`release.REPORT`)."""
    from dpvae import quality, quality_report
    from dpvae.release import RELEASED

    work = workspace(request)
    found = quality.assess(data, {k: samples[k] for k in samples.files}, ledger)
    context = quality_report.Context(method.name, request.out, work, ", ".join(RELEASED))
    quality_report.write(found, context, report_file(work))
    return found


def report_file(work: Path) -> Path:
    """The quality report in the workspace `work`."""
    from dpvae.release import REPORT

    return work / REPORT


def _clear(work: Path, keep: Path | None) -> None:
    """Delete the workspace, or all of it but `keep` (the workspace stays, mode 0700, holding it alone)."""
    if keep is None:
        shutil.rmtree(work)
        return
    for path in work.iterdir():
        if path == keep:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _make_private_dir(path: Path) -> None:
    """The workspace, readable by its owner only (0700)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)


def _planned(
    method: Any, params: Any, spec: RunSpec, facts: Any, entry: dict | None, request: Request
) -> tuple[RunSpec, Any]:
    """The spec and parameters to train, after what the planned ledger (`Method.planned_ledger`, with the declared
    domain's cost) says before any training. Under `--headline sound` the noise is calibrated to the sound bound
    (the method's own parameters where it needs them, `Method.sound_calibrated_params`, then its own target lowered
    until the release's sound ε meets --epsilon, `runs.sound_calibrated_epsilon`); refused, with the smallest sound
    ε the method reaches, where nothing meets it. `--no-calibrate-sound` refuses instead where the sound ε exceeds
    the target."""
    from dpvae import randomness
    from dpvae.data import domain
    from dpvae.runs import released_ledger, sound_calibrated_epsilon

    planned = None if facts is None else method.planned_ledger(params, spec, facts)
    if planned is None:
        return spec, params
    fitted = None
    if entry is not None:  # the declared domain's cost (an estimate costs its ε whatever its columns)
        spent = entry.get("domain_epsilon")
        secret = randomness.is_secret(spec)  # the preparation draws a release's estimate exactly (`prepare`)
        estimate = None if spent is None else domain.Estimate(float(spent), ("planned",), 0.0, discrete=secret)
        fitted = domain.Domain(domain.source(entry), (), (), estimate)
    sound_spec = dataclasses.replace(spec, calibrate="sound")

    def planned_with(candidate: Any, eps: float) -> Any:
        ledger = method.planned_ledger(candidate, dataclasses.replace(spec, epsilon=eps), facts)
        return None if ledger is None else released_ledger(ledger, fitted, sound_spec)

    training = spec.epsilon - (fitted.estimate.epsilon if fitted and fitted.estimate else 0)
    if request.calibrate_sound and request.headline == "sound":  # the train stage finds the same ε' (`domain_budget`)
        tuned = method.sound_calibrated_params(params, lambda p: planned_with(p, training), spec.epsilon)
        if tuned is not None:
            params = tuned
        spec = dataclasses.replace(sound_spec, params=params.to_dict())
        found = sound_calibrated_epsilon(
            lambda eps: method.planned_ledger(params, dataclasses.replace(spec, epsilon=eps), facts), spec, fitted
        )
        if found is None:
            raise ConfigError(
                f"--epsilon {request.epsilon}: no noise level gives method '{method.name}' a sound ε within it"
                + _smallest(lambda eps: planned_with(params, eps), spec.epsilon)
            )
        training = found
    _headlined(
        method,
        released_ledger(
            method.planned_ledger(params, dataclasses.replace(spec, epsilon=training), facts), fitted, spec
        ),
        request,
    )
    return spec, params


def _smallest(planned: Any, target: float) -> str:
    """'; the smallest it reaches is ε = X' over the method's own targets down to a millionth of `target`."""
    from dpvae.privacy.summary import num

    reached = []
    for eps in target * np.logspace(0, -6, 13):
        try:
            ledger = planned(float(eps))
        except (ValueError, ConfigError, ArithmeticError, RuntimeError):
            continue
        if ledger is not None and ledger.sound is not None:
            reached.append(ledger.sound.epsilon)
    if not reached:
        return " (its sound accounting is missing: --headline paper releases under the paper's claim)"
    return f"; the smallest sound ε it reaches is {num(min(reached))} (ask for that, or pass --headline paper)"


def _check_arguments(request: Request) -> None:
    """The numbers and names of the command line, each refused in one line naming the option and its value."""
    _check_out(request)
    _check_numbers(request)
    taken = [p for p in bundle(request.out) if p.exists()]
    if taken and not request.force:
        raise ConfigError(f"--out {request.out}: {taken[0]} exists; pass --force to replace the release")

    if request.headline not in ("sound", "paper"):
        raise ConfigError(f"--headline {request.headline!r}: sound (a proven bound) or paper (the paper's claim)")
    if not DEVICES.fullmatch(request.device):
        raise ConfigError(f"--device {request.device!r}: auto, cpu, cuda or cuda:<index>")
    if request.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"--device {request.device}: no CUDA device is visible here")
    if request.root.exists() and not request.root.is_dir():
        raise ConfigError(f"--root {request.root}: not a directory")


def _check_out(request: Request) -> None:
    """--out: a .csv or .npz file, not a directory, not the --data file."""
    if request.out.suffix.lower() not in OUT_SUFFIXES:
        raise ConfigError(f"--out {request.out}: write .csv (a table) or .npz (x and y arrays)")
    if request.out.is_dir():
        raise ConfigError(f"--out {request.out}: a directory; name the file to write")
    if request.out.resolve() == Path(request.data).resolve():
        raise ConfigError(f"--out {request.out}: the --data file itself; write the samples elsewhere")


def _check_numbers(request: Request) -> None:
    """--epsilon, --delta, --n, --audit, --seed and --seed-file: in range, and one seed at most."""
    if request.epsilon is not None and not (math.isfinite(request.epsilon) and request.epsilon > 0):
        raise ConfigError(f"--epsilon {request.epsilon}: the target epsilon must be finite and > 0")
    if not 0 < request.delta < 1:
        raise ConfigError(f"--delta {request.delta}: the target delta must be in (0, 1)")
    if request.n is not None and request.n < 1:
        raise ConfigError(f"--n {request.n}: draw at least 1 record")
    if request.audit is not None and request.audit < 1:
        raise ConfigError(f"--audit {request.audit}: audit with at least 1 canary")
    if request.seed is not None and request.seed < 0:
        raise ConfigError(f"--seed {request.seed}: the seed must be >= 0")
    if request.seed is not None and request.seed_file is not None:
        raise ConfigError("--seed-file: a secret seed, or --seed: a known one, not both")
    if request.seed_file is not None and not request.seed_file.is_file():
        raise ConfigError(f"--seed-file {request.seed_file}: no such file")


def _checked(request: Request) -> tuple[Any, Any, dict | None, Any]:
    """The method, its typed parameters, the dataset id, its declaration (None: built-in) and the run's facts
    (`n_train` after `max_train`; None where unknown), all checked."""
    from dpvae.data import declared
    from dpvae.data.registry import get_dataset
    from dpvae.methods.registry import METHODS
    from dpvae.registry import did_you_mean

    _check_arguments(request)
    if request.method not in METHODS:
        known = sorted(METHODS)
        hint = did_you_mean(request.method, known)
        raise ConfigError(f"--method {request.method!r}: not a method{hint} (known: {', '.join(known)})")
    method = METHODS.get(request.method)
    if problems := method.Params.errors(request.params, "--params", method.name):
        raise ConfigError(problems[0].replace("config key '--params.", "--params '"))
    params = method.Params.parse(request.params, name=method.name)
    if method.private and request.epsilon is None:
        raise ConfigError(f"--epsilon: method '{method.name}' is private and needs a target epsilon")
    if not method.private and request.epsilon is not None:
        raise ConfigError(f"--epsilon {request.epsilon}: method '{method.name}' is not private; leave it out")
    if request.audit is not None and not method.private:
        raise ConfigError(f"--audit: method '{method.name}' is not private; there is nothing to audit")
    path = Path(request.data)
    if path.is_file():
        entry = _declare(path, request, method.private)
        facts = declared.facts(entry)
    else:
        if declared.kind_of(path) is not None:
            raise ConfigError(f"--data {request.data}: no such file")
        try:
            facts = get_dataset(request.data).facts
        except (KeyError, ValueError) as error:
            raise ConfigError(f"--data {request.data!r}: neither a file nor a dataset id ({error})") from None
        entry = None
    spent = (entry or {}).get("domain_epsilon")
    if method.private and spent is not None and request.epsilon is not None and request.epsilon <= spent:
        raise ConfigError(
            f"--epsilon {request.epsilon}: leaves nothing after the domain estimate's domain_epsilon {spent} "
            f"(--declare {request.declare})"
        )
    if request.out.suffix.lower() == ".csv" and facts is not None and facts.kind == "image":
        raise ConfigError(f"--out {request.out}: '{request.data}' holds images; write .npz")
    if facts is not None:
        limit = getattr(params, "max_train", None) or facts.n_train
        facts = dataclasses.replace(facts, n_train=min(facts.n_train, limit))
        defaults = {k: v for k, v in method.data_defaults(facts).items() if k not in request.params}
        if defaults:  # the kind of data decides these defaults (a table's PriVAE: the MLP VAE's)
            params = method.Params.parse({**defaults, **request.params}, name=method.name)
    _check_fit(method, params, facts, request)
    if entry is not None and method.needs_public_data:
        raise ConfigError(f"--method {method.name} cannot take --data {request.data}: {method.needs_public_data}")
    return method, params, entry, facts


def _dataset_id(request: Request, entry: dict | None) -> str:
    """A built-in id as given; a file as its stem, with `-file` after a stem that is a built-in id or raw source
    (adult.csv is not the built-in `adult`, whose preparer would read its raw files). Not its hash (keyed or not):
    the id names the run's first-stage random streams (`methods.base.stage1_spec`), so it must be the same for
    neighbouring files; another version of the file is another dataset by the keyed identity its prepared copy and
    the run's spec carry."""
    from dpvae.data.registry import is_builtin_name

    if entry is None:
        return request.data
    stem = re.sub(r"[^a-z0-9_.-]+", "-", Path(request.data).stem.lower()).strip("-.") or "data"
    return f"{stem}-file" if is_builtin_name(stem) else stem


DECLARE_KEYS = (
    "label", "labels", "positive", "domain", "domain_epsilon", "columns", "categorical", "drop", "test_fraction",
    "test_path", "layout", "description",
)  # fmt: skip


def _declare(path: Path, request: Request, private: bool) -> dict:
    """The declaration of a data file (as under the config key `datasets`: --declare's YAML, --label,
    --positive), its problems refused. A private method needs the data's public domain declared (or
    estimated, domain: estimate); reading it from the data (domain: from_data) takes --allow-not-dp."""
    from dpvae.data import declared

    entry: dict[str, Any] = {"path": str(path.resolve()), **_declaration_file(request.declare)}
    if entry.get("test_path") is not None:
        entry["test_path"] = str((request.declare.parent / entry["test_path"]).resolve())  # type: ignore[union-attr]
    if declared.kind_of(path) == "table":
        if request.label is not None:
            entry["label"] = request.label
        elif "label" not in entry:
            guess = next((c for c in declared._columns(str(path)) if c.lower() in LABEL_GUESSES), None)
            if guess is None:
                raise ConfigError(
                    f"--label: name the label column of {path} (none is called {', '.join(LABEL_GUESSES)})"
                )
            entry["label"] = guess
        if request.positive is not None:
            entry["positive"] = request.positive
    elif request.label or request.positive is not None:
        raise ConfigError(f"--label/--positive: {path} holds image arrays; their labels are its `y`")
    if request.declare is None and (request.allow_not_dp or not private):
        entry["domain"] = "from_data"
    if entry.get("domain") == "from_data" and private and not request.allow_not_dp:
        raise ConfigError(
            f"--declare {request.declare}: domain: from_data reads ranges, categories and labels from the private "
            "file, unnoised (not DP); declare them, use domain: estimate, or pass --allow-not-dp"
        )
    if request.declare is None and private and not request.allow_not_dp:
        raise ConfigError(
            f"--data {path}: a private method needs the data's public domain: --declare FILE (each column's "
            "bounds or categories and the labels, or domain: estimate with domain_epsilon), or --allow-not-dp to "
            "read it from the data (not DP; the ledger says so)"
        )
    where = f"--declare {request.declare}" if request.declare is not None else "--data"
    for problem in declared.problems("data", entry):
        raise ConfigError(
            problem.replace("config key 'datasets.data.path'", "--data").replace(
                "config key 'datasets.data.", where + " "
            )
        )
    return entry


def _written_loader() -> Any:
    """A YAML loader that reads `no`, `yes`, `on`, `off` as the strings written (YAML 1.2: only true/false are
    booleans), so that a label set `[no, yes]` is the labels in the file, not two booleans."""
    import re as re_

    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re_.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    return Loader


def _declaration_file(path: Path | None) -> dict[str, Any]:
    """--declare's YAML mapping (keys as under the config key datasets.<id>, without path), or the one dataset
    of a config overlay (e.g. examples/own-data/*.yaml; its `path` is --data's)."""
    if path is None:
        return {}
    import yaml

    try:
        loaded = yaml.load(path.read_text(), Loader=_written_loader())  # noqa: S506 - a SafeLoader subclass
    except OSError as error:
        raise ConfigError(f"--declare {path}: cannot read it ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"--declare {path}: not valid YAML ({error})") from None
    if isinstance(loaded, dict) and isinstance(loaded.get("datasets"), dict):  # a config overlay: its one dataset
        if len(loaded["datasets"]) != 1:
            raise ConfigError(f"--declare {path}: its `datasets` declares {len(loaded['datasets'])} datasets, not one")
        (loaded,) = loaded["datasets"].values()
        loaded = {k: v for k, v in loaded.items() if k != "path"} if isinstance(loaded, dict) else loaded
    if not isinstance(loaded, dict):
        raise ConfigError(f"--declare {path}: a mapping of keys (columns, labels, domain, ...) is needed")
    if unknown := sorted(set(loaded) - set(DECLARE_KEYS)):
        raise ConfigError(f"--declare {path}: unknown key {unknown[0]!r} (keys: {', '.join(DECLARE_KEYS)})")
    return loaded


def _check_fit(method: Any, params: Any, facts: Any, request: Request) -> None:
    """The method takes the data, its batch fits the run's training records, its own size checks hold."""
    if facts is None:
        return
    if facts.kind not in method.kinds:
        raise ConfigError(
            f"--method {method.name} cannot take --data {request.data}: it trains on {' and '.join(method.kinds)} "
            f"records, and the data holds "
            + (
                f"{'x'.join(map(str, facts.record_shape))} images"
                if facts.kind == "image"
                else f"{list(facts.record_shape)} records (a table)"
            )
        )
    batch = getattr(params, "batch_size", None)
    if isinstance(batch, int) and batch > facts.n_train:
        given = "batch_size" in request.params
        what = f"--params batch_size={batch}" if given else f"--method {method.name}'s default batch_size {batch}"
        fix = "" if given else " (--params batch_size=B sets a smaller one)"
        raise ConfigError(f"{what} is larger than the {facts.n_train} training records{fix}")
    for name, why in method.data_errors(params, facts):
        where = f"--params {name}" if name else f"--method {method.name}"
        raise ConfigError(f"{where} does not fit --data {request.data}: {why}")


def _prepare(dataset: str, entry: dict | None, request: Request, root: Path, spec: RunSpec) -> Path:
    """The prepared set in the data root (a file copied into the workspace's, a built-in id fetched from the mirror
    or downloaded, then prepared); a file's split is drawn from the run's randomness (secret in a release)."""
    from dpvae import randomness
    from dpvae.data import declared
    from dpvae.data.registry import fetch_dataset, prepare_dataset
    from dpvae.data.store import load_prepared
    from dpvae.paths import data_mirror

    out = prepared_dir(root, dataset)
    if entry is not None:
        wanted = declared.declaration(entry)
        keyed = declared.fingerprint(wanted["identity"], root)
        if prepared_meta(root, dataset).is_file() and load_prepared(out).meta.get("identity") == keyed:
            return out
        declared.copy_in(dataset, wanted, root)
        secret = randomness.is_secret(spec)
        return prepare_dataset(dataset, root, seed=randomness.stream_seed(spec, "split"), secret_seed=secret)
    if prepared_meta(root, dataset).is_file():
        return out
    fetch_dataset(dataset, root, data_mirror(None))
    return prepare_dataset(dataset, root, seed=0)


def _spec(
    request: Request, method: Any, params: dict, dataset: str, run_dir: Path, root: Path | None = None
) -> RunSpec:
    """A run spec as the workflow's (`dpvae.runs.run_spec`) for this one run (its data identity: `synth`); its
    randomness secret unless --seed is given."""
    from dpvae import randomness

    return RunSpec.standalone(
        f"synth/{method.name}",  # one run per workspace; the same for neighbouring datasets
        str(run_dir),
        scale="synth",
        dataset=dataset,
        method=method.name,
        private=method.private,
        params=params,
        epsilon=float(request.epsilon) if method.private else None,
        delta=request.delta,
        seed=request.seed or 0,
        device=request.device,
        data_root=str(root if root is not None else request.root),
        audit=None if request.audit is None else Audit(request.audit),
        randomness=None if request.seed is not None else randomness.SECRET,
    )


def _trained(run_dir: Path, spec: RunSpec, read_spec: Any) -> bool:
    """The run directory holds a finished training of exactly this spec (then it is reused)."""
    try:
        return model_path(run_dir).is_dir() and read_spec(run_dir) == spec
    except (OSError, ValueError, KeyError, DataError):
        return False


def _headlined(method: Any, ledger: Any, request: Request) -> Any:
    """The ledger released under `--headline`; under "sound", a sound ε above the target is refused (a ledger
    without a sound accounting, e.g. not DP, is unbounded)."""
    from dpvae.privacy.summary import num

    target = num(request.epsilon)
    claim = f"(paper's accounting: {num(ledger.paper.epsilon)}); "
    paper = "pass --headline paper to release it under the paper's claim"
    if request.headline == "sound" and ledger.sound is None:
        why = ledger.not_dp or "no sound accounting"
        raise ConfigError(f"--method {method.name}: its sound ε at target {target} is unbounded ({why}) {claim}{paper}")
    if request.headline == "sound" and ledger.sound.epsilon > request.epsilon:
        raise ConfigError(
            f"--method {method.name}: its sound ε at target {target} is {num(ledger.sound.epsilon)} > {target} "
            f"{claim}lower --epsilon, or {paper}"
        )
    return dataclasses.replace(ledger, headline=request.headline)


def _publish(run_dir: Path, samples: Any, meta: dict, ledger: Any, request: Request) -> Release:
    """Stage the ledger, the audit and the samples in the workspace, then move them beside `--out` (the samples
    last); a stale audit of an earlier release to this `--out` is removed."""

    ledger_path, audit_path = beside(request.out)
    staged = run_dir.parent / "release"
    staged.mkdir(exist_ok=True)
    if ledger is not None:
        ledger.write(staged / ledger_path.name)
    else:  # a non-private run's record, as it is
        shutil.copyfile(ledger_file(run_dir), staged / ledger_path.name)
    audited = request.audit is not None and audit_file(run_dir).is_file()
    if audited:
        shutil.copyfile(audit_file(run_dir), staged / audit_path.name)
    _write_samples(samples, meta, staged / request.out.name)
    request.out.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staged / ledger_path.name, ledger_path)
    if audited:
        os.replace(staged / audit_path.name, audit_path)
    else:
        audit_path.unlink(missing_ok=True)
    os.replace(staged / request.out.name, request.out)
    staged.rmdir()
    return Release(request.out, ledger_path, audit_path if audited else None, "")


def _report(method: Any, ledger: Any, release: Release, request: Request, quality: Any = None) -> str:
    """A few lines: what was written where, both ε at δ, the mechanisms, what is public, the audit, the workspace,
    the quality report (naming its flags)."""
    import json

    from dpvae.privacy.summary import num

    noise = "secret noise" if request.seed is None else f"--seed {request.seed}: repeatable, not a release"
    lines = [f"wrote {request.n} synthetic records to {release.samples} (method {method.name}, {noise})"]
    if ledger is None:
        lines.append(f"not private: method '{method.name}' gives no differential-privacy guarantee")
    else:
        sound = "unbounded" if ledger.sound is None else num(ledger.sound.epsilon)
        under = "the sound bound" if ledger.headline == "sound" else "the paper's claim, not a proven bound"
        lines += [
            f"privacy: sound ε = {sound}, paper's ε = {num(ledger.paper.epsilon)} at δ = {num(ledger.delta)} "
            f"(target ε {num(request.epsilon)}); released under {under}"
            + (f"; not DP: {ledger.not_dp}" if ledger.not_dp else ""),
            f"mechanisms: {'; '.join(m.name for m in ledger.headline_accounting.mechanisms)}",
            f"public: {ledger.public}",
        ]
    if release.audit is not None:
        record = json.loads(release.audit.read_text())
        scope = record["engine"]["kind"] + " engine's steps" if "engine" in record else record["release"]["name"]
        lines.append(
            f"audit: {record['canaries']} canaries in this one run, on the {scope} only: ε >= {num(record['lower'])} "
            f"measured (a test of the implementation, not a bound): {release.audit}"
        )
    elif method.private:
        lines.append("audit: not run (--audit [CANARIES] tests the implementation with canaries in one run)")
    from dpvae.release import RELEASED

    lines.append(f"ledger: {release.ledger} (python -m dpvae ledger {release.ledger})")
    lines.append(f"the release is {', '.join(RELEASED)} (x = {release.samples.stem}); nothing else is public")
    work = workspace(request)
    lines.append(
        f"workspace (private, not part of the release): {work}/ kept (--keep-work)"
        if request.keep_work
        else f"workspace (private): {work}/ deleted" + (f", but for {report_file(work).name}" if quality else "")
    )
    if quality is not None:
        from dpvae.quality_report import terminal_line

        lines.append(terminal_line(quality, report_file(work)))
    return "\n".join(lines)


def _public(method: Any, ledger: Any, n_train: int, meta: dict, request: Request) -> str:
    """The release's `Ledger.public`: N (named only where it is public, `n_is_public`) and the declared domain."""
    from dpvae.privacy.summary import domain_of, public_text

    size = n_train if n_is_public(method, ledger) else None
    return public_text(ledger, method.releases_n, size, domain_of(meta, _domain_source(request)))


def _domain_source(request: Request) -> str:
    """Where the release's public domain is stated: the declaration, or the built-in dataset's code."""
    if Path(request.data).is_file():
        return f"--declare {request.declare}" if request.declare is not None else "read from --data"
    return f"dataset '{request.data}' (dpvae.data)"


def _n_train(prepared: Path) -> int:
    import json

    return int(json.loads((prepared / PREPARED_META).read_text())["shapes"]["train"][0])


def _write_samples(samples: Any, meta: dict, out: Path) -> None:
    """`.npz`: the arrays as sampled; `.csv`: the table's columns in their own units, the label where the user's
    file has it (last for a built-in dataset)."""
    x, y = samples["x"], samples["y"] if "y" in samples else None
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".npz":
        from dpvae.data.store import save_npz

        x, y = _as_stored(x, y, meta.get("stored_as"))
        arrays = {"x": x, **({"y": y} if y is not None else {})}
        atomic_write(out, lambda tmp: save_npz(Path(tmp), arrays))
        return
    import pandas as pd

    columns = meta.get("columns") or [{"name": f"x{i}", "kind": "continuous"} for i in range(x.shape[1])]
    frame = pd.DataFrame({c["name"]: _unscale(x[:, i], c) for i, c in enumerate(columns)})
    if y is not None:
        names = meta.get("label_names")
        label = meta.get("label_column", "label")
        position = meta.get("label_position", len(frame.columns))  # the user's file's place; else last
        frame.insert(position, label, [names[int(v)] for v in y] if names else y)
    atomic_write(out, lambda tmp: frame.to_csv(tmp, index=False))


def _as_stored(x: np.ndarray, y: Any, stored: dict | None) -> tuple[np.ndarray, Any]:
    """Images back in the layout and dtypes of the user's file (`declared.image_format`): NHWC or [N, H, W] from
    [N, C, H, W], uint8 as round(255 x); a built-in dataset's as prepared (float32 [N, C, H, W])."""
    if stored is None:
        return x, y
    if stored["layout"] == "NHWC":
        x = x.transpose(0, 2, 3, 1)
    elif stored["layout"] == "NHW":
        x = x[:, 0]
    if np.dtype(stored["x_dtype"]) == np.uint8:
        x = np.clip(np.rint(x * 255), 0, 255).astype(np.uint8)
    else:
        x = x.astype(stored["x_dtype"])
    return np.ascontiguousarray(x), (None if y is None else y.astype(stored["y_dtype"]))


def _unscale(values: np.ndarray, column: dict) -> Any:
    """A column back in its own units (min-max undone; a categorical column's codes back to its categories)."""
    if "min" not in column:
        return values
    raw = column["min"] + np.clip(values, 0, 1) * (column["max"] - column["min"])
    if column.get("integer"):  # declared whole numbers come back as whole numbers
        return np.rint(raw).astype(np.int64)
    if column.get("kind") == "categorical":
        categories = column["categories"]
        return [categories[int(i)] for i in np.clip(np.rint(raw), 0, len(categories) - 1)]
    return raw
