"""The run spec: everything a stage needs to train, sample or evaluate one run, as one frozen, typed value.

Built in two places only: `dpvae.runs.run_spec(config, run)` for a run of the configuration and
`RunSpec.standalone(...)` for a run outside it (`dpvae synth`, the method audit, a shared first stage,
benchmarks, tests); a variant of a spec is `dataclasses.replace(spec, ...)`. `tests/unit/test_runspec.py`
walks the source for specs built anywhere else. Its JSON (`to_json`: sorted keys, compact; the optional keys
only when set) is what the train rule passes on its command line and `train.json` records, so a changed text
reruns the run: keep it byte-identical.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpvae.errors import ConfigError

#: the `kind` of a shared first stage's spec (`dpvae.methods.base.stage1_spec`)
STAGE1_KIND = "stage1"
#: what a stage-1 spec has not: it trains no variant, without noise or target
NOT_IN_STAGE1 = ("variant", "private", "epsilon", "delta")
#: keys written only when set (a spec without them keeps its text and hash)
OPTIONAL = ("audit", "calibrate", "precision", "data_identity", "stage1", "kind", "key", "randomness")
#: the confidence of an audit's lower bound when the spec names none
DEFAULT_AUDIT_CONFIDENCE = 0.95


class FrozenDict(dict):
    """A dict that refuses changes (a spec's `params`, `data_identity`): read like a dict, serialised as one."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a run spec is frozen: derive another with dataclasses.replace(spec, params={...})")

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return FrozenDict, (dict(self),)


def frozen(value: Any) -> Any:
    """A deep copy of `value` with every mapping in it a `FrozenDict`."""
    if isinstance(value, Mapping):
        return FrozenDict({key: frozen(item) for key, item in value.items()})
    return copy.deepcopy(value)


@dataclass(frozen=True)
class Audit:
    """A one-run canary audit of the run (docs/audit.md): `canaries` Dirac canaries, each included with
    probability 1/2; `confidence` of the ε lower bound (None: not named, `DEFAULT_AUDIT_CONFIDENCE`)."""

    canaries: int
    confidence: float | None = None

    @property
    def level(self) -> float:
        """The confidence the audit bounds ε at."""
        return DEFAULT_AUDIT_CONFIDENCE if self.confidence is None else self.confidence

    def to_dict(self) -> dict[str, Any]:
        return {"canaries": self.canaries, **({} if self.confidence is None else {"confidence": self.confidence})}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], where: str = "audit") -> Audit:
        unknown = sorted(set(values) - {"canaries", "confidence"})
        if unknown:
            raise ConfigError(f"{where}: unknown key '{unknown[0]}' (known: canaries, confidence)")
        if "canaries" not in values:
            raise ConfigError(f"{where}: missing key 'canaries'")
        return cls(values["canaries"], values.get("confidence"))


@dataclass(frozen=True)
class RunSpec:
    """One run's spec (JSON-serialisable). The fields of a run of the configuration are every key of today's
    spec; `params` (the method's resolved hyper-parameters) and `data_identity` are read-only mappings.

    Optional (absent from the JSON when None): `audit` (an audited run), `calibrate` ('sound': the noise is
    calibrated to the sound bound), `precision` (a model precision other than fp32 that the method applies),
    `data_identity` (the keyed fingerprint of a dataset declared in the config), `stage1` (the directory of
    the shared first stage it loads), `kind`/`key` (a stage-1 spec: then `variant`, `private`, `epsilon`
    and `delta` are not part of it) and `randomness` ('secret': a release, whose streams come from a key never
    written, `dpvae.randomness`; absent: seeded, a replication run)."""

    run_id: str
    run: str
    dataset: str
    method: str
    params: Mapping[str, Any]
    data_root: str
    seed: int = 0
    scale: str = ""
    variant: str = ""
    private: bool = False
    epsilon: float | None = None
    delta: float | None = None
    device: str = "auto"
    audit: Audit | None = None
    calibrate: str | None = None
    precision: str | None = None
    data_identity: Mapping[str, str] | None = None
    stage1: str | None = None
    kind: str | None = None
    key: str | None = None
    randomness: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", frozen(self.params))
        if self.data_identity is not None:
            object.__setattr__(self, "data_identity", frozen(self.data_identity))

    @classmethod
    def standalone(
        cls,
        run_id: str,
        run: str | Path,
        *,
        dataset: str = "",
        method: str = "",
        params: Mapping[str, Any] | None = None,
        data_root: str = "",
        seed: int = 0,
        scale: str = "",
        variant: str | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        private: bool | None = None,
        device: str = "auto",
        audit: Audit | None = None,
        calibrate: str | None = None,
        precision: str | None = None,
        data_identity: Mapping[str, str] | None = None,
        stage1: str | None = None,
        kind: str | None = None,
        key: str | None = None,
        randomness: str | None = None,
    ) -> RunSpec:
        """The spec of a run outside the configuration (`dpvae synth`, the method audit, a shared first stage,
        benchmarks, tests): `variant` defaults to the method's name, `private` to whether it has a target ε, the
        parameters to the method's defaults (a test's context may name no dataset or method at all)."""
        return cls(
            run_id=run_id,
            run=str(run),
            dataset=dataset,
            method=method,
            params=params or {},
            data_root=str(data_root),
            seed=seed,
            scale=scale,
            variant=method if variant is None else variant,
            private=epsilon is not None if private is None else private,
            epsilon=epsilon,
            delta=delta,
            device=device,
            audit=audit,
            calibrate=calibrate,
            precision=precision,
            data_identity=data_identity,
            stage1=stage1,
            kind=kind,
            key=key,
            randomness=randomness,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return _from_fields, (self.to_dict(),)

    @property
    def is_stage1(self) -> bool:
        return self.kind == STAGE1_KIND

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON values, keys sorted (as `to_json` writes them and `train.json` records them)."""
        return json.loads(self.to_json())

    def to_json(self) -> str:
        """The compact JSON text the workflow passes on a command line (sorted keys: same spec, same bytes)."""
        values: dict[str, Any] = {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if (item.name in OPTIONAL and value is None) or (self.is_stage1 and item.name in NOT_IN_STAGE1):
                continue
            values[item.name] = value.to_dict() if isinstance(value, Audit) else value
        return json.dumps(values, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, where: str = "run spec") -> RunSpec:
        """The spec of a JSON text (`to_json`'s); an unknown or missing key is refused in one line naming it."""
        try:
            values = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{where}: not JSON ({error})") from None
        return cls.from_dict(values, where)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], where: str = "run spec") -> RunSpec:
        """The spec of a mapping of its keys (e.g. a train.json's `spec`); refused as `from_json`."""
        if not isinstance(values, Mapping):
            raise ConfigError(f"{where}: a run spec is a JSON object, got {type(values).__name__}")
        names = [item.name for item in dataclasses.fields(cls)]
        for name in values:
            if name not in names:
                raise ConfigError(f"{where}: unknown key '{name}' (a run spec has: {', '.join(names)})")
        stage1 = values.get("kind") == STAGE1_KIND
        for name in names:
            if name not in OPTIONAL and name not in values and not (stage1 and name in NOT_IN_STAGE1):
                raise ConfigError(f"{where}: missing key '{name}'")
        return _from_fields(values, where)


def _from_fields(values: Mapping[str, Any], where: str = "run spec") -> RunSpec:
    audit = values.get("audit")
    return RunSpec(**{**values, "audit": None if audit is None else Audit.from_dict(audit, f"{where}: audit")})
