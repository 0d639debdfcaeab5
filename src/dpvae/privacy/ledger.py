"""Privacy ledger: the records that fully determine a release's (epsilon, delta).

A `Mechanism` is one (possibly subsampled, possibly repeated) Gaussian mechanism, normalised so that
`noise_multiplier` = noise standard deviation / l2-sensitivity under the ledger's adjacency (for a
Poisson-subsampled mechanism under replace-one: / one record's contribution bound, see
`dpvae.privacy.accounting`). An `Accounting` composes mechanisms with a named accountant and always
*computes* its (ε, order). A `Ledger` (the run's `privacy.json`) holds the paper's own accounting
("paper": what the paper claims, not necessarily a bound) and a sound one ("sound": an upper bound on
what the code can release, each backed by a property test of its sensitivities), and names which of
the two is the run's headline ε (the one its target is checked against). A release that is not
differentially private at all (e.g. P3GM's non-private centring mean) says why in `not_dp` and has no
sound accounting.

An accounting may also carry `preprocessing`: pure ε-DP mechanisms run on the private data before the
method (a declared dataset's domain estimate, `dpvae.data.domain`), composed sequentially: their ε adds to
the accountant's at the same δ (`with_preprocessing`).

JSON layout of a ledger (`Ledger.to_dict`)::

    {epsilon, order, delta, accountant, conversion, adjacency, orders,
     mechanisms: [{name, noise_multiplier, sample_rate, steps, sensitivity, sampling, [sampler]}, ...],  # the headline
     [preprocessing: [{name, noise_multiplier, ...}, ...]],             # only when there is some
     headline: "paper" | "sound",
     paper: {...same keys...}, sound: {...same keys...},                 # only with a sound accounting
     not_dp: null | "why the release is not DP", target_epsilon, notes}
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from dpvae.errors import PrivacyBudgetExceeded
from dpvae.files import write_json
from dpvae.privacy.accounting import (
    ADJACENCIES,
    CONVERSIONS,
    DEFAULT_ORDERS,
    PYVACY_ORDER_BOUNDS,
    SAMPLINGS,
    Adjacency,
    Conversion,
    Sampling,
    account,
    mechanism_rdp,
    pure_epsilon,
)
from dpvae.privacy.accounting import epsilon as composed_epsilon
from dpvae.samplers import Sampler


@dataclass(frozen=True)
class Mechanism:
    """One Gaussian mechanism applied `steps` times, each time to a subsample of rate `sample_rate`.

    `sampling` "poisson": each record is in the subsample independently with probability q;
    "fixed-partition": each step draws one of 1/q fixed disjoint subsets (see
    `accounting.fixed_partition_rdp`). `sensitivity` is the l2-sensitivity in the released statistic's
    own units (e.g. the clipping norm C); it is informational: `noise_multiplier` is already the ratio
    noise std / sensitivity and alone enters the accountant. `sampler`: in a release, the exact discrete sampler
    that drew the noise, its grid and the sensitivity and scale on the integer scale (`dpvae.samplers`;
    absent from a seeded run's record, whose noise is floating point).
    """

    name: str
    noise_multiplier: float
    sample_rate: float = 1.0
    steps: int = 1
    sensitivity: float = 1.0
    sampling: Sampling = "poisson"
    sampler: Sampler | None = None

    def __post_init__(self) -> None:
        if not self.noise_multiplier >= 0:
            raise ValueError(f"{self.name}: noise_multiplier must be >= 0, got {self.noise_multiplier}")
        if not 0 < self.sample_rate <= 1:
            raise ValueError(f"{self.name}: sample_rate must be in (0, 1], got {self.sample_rate}")
        if int(self.steps) != self.steps or self.steps < 0:
            raise ValueError(f"{self.name}: steps must be a non-negative integer, got {self.steps}")
        if not self.sensitivity > 0:
            raise ValueError(f"{self.name}: sensitivity must be > 0, got {self.sensitivity}")
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"{self.name}: sampling must be one of {SAMPLINGS}, got {self.sampling!r}")

    def to_dict(self) -> dict:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "sampler"}
        if self.sampler is not None:
            data["sampler"] = self.sampler.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> Mechanism:
        """Inverse of `to_dict`; unknown or missing keys raise ValueError ("sampling" defaults to Poisson, "sampler"
        to none)."""
        names = {f.name for f in fields(cls)}
        if not names - {"sampling", "sampler"} <= set(data) <= names:
            raise ValueError(f"mechanism keys must be {sorted(names)}, got {sorted(data)}")
        return cls(
            name=str(data["name"]),
            noise_multiplier=float(data["noise_multiplier"]),
            sample_rate=float(data["sample_rate"]),
            steps=int(data["steps"]),
            sensitivity=float(data["sensitivity"]),
            sampling=data.get("sampling", "poisson"),
            sampler=Sampler.from_dict(data["sampler"]) if "sampler" in data else None,
        )

    def rdp(self, orders: Sequence[float], adjacency: Adjacency = "add/remove-one") -> np.ndarray:
        """RDP curve at `orders` (q = 1 ⇒ steps·α/(2σ²); σ = 0 ⇒ inf; 0 steps ⇒ 0)."""
        return mechanism_rdp(self, orders, adjacency)


_ACCOUNTING_KEYS = ("epsilon", "order", "delta", "accountant", "conversion", "adjacency", "orders", "mechanisms")
_OPTIONAL_ACCOUNTING_KEYS = ("preprocessing",)
_LEDGER_KEYS = (
    *_ACCOUNTING_KEYS, *_OPTIONAL_ACCOUNTING_KEYS, "headline", "paper", "sound", "not_dp", "target_epsilon", "notes",
    "randomness", "public",
)  # fmt: skip
Headline = Literal["paper", "sound"]
HEADLINES: tuple[str, ...] = get_args(Headline)


@dataclass(frozen=True)
class Accounting:
    """Mechanisms composed by one accountant; `epsilon` and `order` are computed, never given.

    `accountant` is "rdp" (RDP sum over `orders`), "rdp-order-search" (continuous order search in
    [min(orders), max(orders)], pyvacy) or "<part>+… (sequential)" (one of rdp/moments/zcdp/gaussian
    per mechanism, δ split equally, ε summed); see `dpvae.privacy.accounting.parse_accountant`.
    `order` is the optimal RDP order (None for sequential accountants). `preprocessing`: pure ε-DP
    mechanisms (multiplier = 1/ε per step, `accounting.pure_epsilon`) that ran before, composed sequentially:
    `epsilon` is the accountant's ε at `delta` plus theirs.
    """

    mechanisms: tuple[Mechanism, ...]
    delta: float
    adjacency: Adjacency = "add/remove-one"
    accountant: str = "rdp"
    conversion: Conversion = "improved"
    orders: tuple[float, ...] = DEFAULT_ORDERS
    preprocessing: tuple[Mechanism, ...] = ()
    epsilon: float = field(init=False)
    order: float | None = field(init=False)

    def __post_init__(self) -> None:
        mechanisms = tuple(self.mechanisms)
        if not mechanisms or not all(isinstance(m, Mechanism) for m in mechanisms):
            raise ValueError(f"mechanisms must be a non-empty sequence of Mechanism, got {self.mechanisms!r}")
        if self.adjacency not in ADJACENCIES:
            raise ValueError(f"adjacency must be one of {ADJACENCIES}, got {self.adjacency!r}")
        if self.conversion not in CONVERSIONS:
            raise ValueError(f"conversion must be one of {CONVERSIONS}, got {self.conversion!r}")
        object.__setattr__(self, "mechanisms", mechanisms)
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "orders", tuple(float(a) for a in self.orders))
        object.__setattr__(self, "preprocessing", tuple(self.preprocessing))
        eps, order = account(mechanisms, self.delta, self.accountant, self.conversion, self.orders, self.adjacency)
        if self.preprocessing:
            eps += pure_epsilon(self.preprocessing)
        object.__setattr__(self, "epsilon", float(eps))
        object.__setattr__(self, "order", None if order is None else float(order))

    def to_dict(self) -> dict:
        data = {
            "epsilon": self.epsilon,
            "order": self.order,
            "delta": self.delta,
            "accountant": self.accountant,
            "conversion": self.conversion,
            "adjacency": self.adjacency,
            "orders": list(self.orders),
            "mechanisms": [m.to_dict() for m in self.mechanisms],
        }
        if self.preprocessing:
            data["preprocessing"] = [m.to_dict() for m in self.preprocessing]
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> Accounting:
        """Rebuild from `to_dict` output, recomputing ε; a stored ε that disagrees raises ValueError."""
        missing = [k for k in _ACCOUNTING_KEYS if k not in data]
        if missing:
            raise ValueError(f"accounting is missing keys {missing}")
        accounting = cls(
            mechanisms=tuple(Mechanism.from_dict(m) for m in data["mechanisms"]),
            delta=float(data["delta"]),
            adjacency=data["adjacency"],
            accountant=data["accountant"],
            conversion=data["conversion"],
            orders=tuple(data["orders"]),
            preprocessing=tuple(Mechanism.from_dict(m) for m in data.get("preprocessing", ())),
        )
        stored = float(data["epsilon"])
        if not (stored == accounting.epsilon or math.isclose(stored, accounting.epsilon, rel_tol=1e-9)):
            raise ValueError(f"stored epsilon {stored} does not match the recomputed {accounting.epsilon}")
        return accounting


@dataclass(frozen=True)
class Ledger:
    """A release's privacy record: the paper's own accounting, an optional sound one, and which is the headline.

    `paper` is what the paper's analysis claims for this run (a claim: docs/papers.md §5 lists where it is not
    an upper bound); `sound` an upper bound on what the code can release (never set unless a property
    test shows its sensitivities hold); `headline` names the one whose ε is the run's ε (checked against
    `target_epsilon`). `not_dp` says why the release is not differentially private at all; such a ledger
    has no sound accounting and its headline is the paper's claim.
    """

    paper: Accounting
    sound: Accounting | None = None
    target_epsilon: float | None = None
    notes: str = ""
    headline: Headline = "paper"
    not_dp: str | None = None
    randomness: str | None = None  # where the noise came from (`dpvae.randomness`): a release's is secret
    public: str | None = None  # what a release treats as public (N, the domain): `privacy.summary.public_text`

    def __post_init__(self) -> None:
        if self.target_epsilon is not None and not self.target_epsilon > 0:
            raise ValueError(f"target_epsilon must be > 0 or None, got {self.target_epsilon}")
        if self.headline not in HEADLINES:
            raise ValueError(f"headline must be one of {HEADLINES}, got {self.headline!r}")
        if self.headline == "sound" and self.sound is None:
            raise ValueError("headline 'sound' needs a sound accounting")
        if self.not_dp is not None and (self.sound is not None or not self.not_dp):
            raise ValueError("a ledger marked not_dp (a non-empty reason) cannot have a sound accounting")

    @property
    def headline_accounting(self) -> Accounting:
        """The accounting whose ε is the run's ε."""
        return self.sound if self.headline == "sound" and self.sound is not None else self.paper

    @property
    def epsilon(self) -> float:
        """The headline ε."""
        return self.headline_accounting.epsilon

    @property
    def delta(self) -> float:
        return self.headline_accounting.delta

    def to_dict(self) -> dict:
        data = self.headline_accounting.to_dict()
        data["headline"] = self.headline
        if self.sound is not None:
            data["paper"] = self.paper.to_dict()
            data["sound"] = self.sound.to_dict()
        data["not_dp"] = self.not_dp
        data["target_epsilon"] = self.target_epsilon
        data["notes"] = self.notes
        if self.randomness is not None:
            data["randomness"] = self.randomness
        if self.public is not None:
            data["public"] = self.public
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> Ledger:
        """Rebuild from `to_dict` output (every ε is recomputed and checked)."""
        unknown = sorted(set(data) - set(_LEDGER_KEYS))
        if unknown:
            raise ValueError(f"unknown ledger keys {unknown}")
        headline = data.get("headline", "paper")
        top = Accounting.from_dict(data)
        if "sound" in data:
            paper, sound = Accounting.from_dict(data["paper"]), Accounting.from_dict(data["sound"])
        elif "paper" in data:
            raise ValueError("a ledger with a 'paper' sub-object must have a 'sound' one")
        else:
            paper, sound = top, None
        target = data.get("target_epsilon")
        ledger = cls(
            paper,
            sound,
            None if target is None else float(target),
            str(data.get("notes", "")),
            headline,
            data.get("not_dp"),
            data.get("randomness"),
            data.get("public"),
        )
        if top != ledger.headline_accounting:
            raise ValueError(f"the top-level (headline) accounting differs from the '{headline}' sub-object")
        return ledger

    def write(self, path: str | os.PathLike) -> Path:
        """Write the JSON atomically (`dpvae.files.write_json`: never half a ledger); returns the path."""
        return write_json(path, self.to_dict())

    @classmethod
    def read(cls, path: str | os.PathLike) -> Ledger:
        with open(path) as stream:
            return cls.from_dict(json.load(stream))


def pyvacy_accounting(mechanism: Mechanism, delta: float, adjacency: Adjacency = "add/remove-one") -> Accounting:
    """One mechanism accounted as pyvacy does (DP²-VAE's and GS-WGAN's reference code): RDP with the order
    searched continuously over `PYVACY_ORDER_BOUNDS`, classic conversion."""
    return Accounting(
        (mechanism,),
        delta,
        adjacency=adjacency,
        accountant="rdp-order-search",
        conversion="classic",
        orders=PYVACY_ORDER_BOUNDS,
    )


def recorded_mechanisms(ledger: Mapping, accounting: Headline = "paper") -> tuple[Mechanism, ...]:
    """The mechanisms a written ledger (`Ledger.to_dict`, a run's privacy.json) records for its paper or sound
    accounting, without recomputing any ε (what a method's `recompute_ledger` reads back)."""
    data = ledger[accounting] if accounting in ledger else ledger
    if accounting == "sound" and "sound" not in ledger:
        raise ValueError("the ledger has no sound accounting")
    return tuple(Mechanism.from_dict(m) for m in data["mechanisms"])


def replace_one_record(record: Mechanism, fixed_batches: bool = False) -> Mechanism:
    """A DP-SGD record under replace-one adjacency. Poisson batches: as it is (the accountant's replace-one
    curve, Mironov 2017 Prop. 11). Fixed batches drawn with replacement (P3GM's code): each step draws one of
    1/q fixed subsets (`accounting.fixed_partition_rdp`) and replacing a record moves the clipped sum by 2C."""
    if not fixed_batches:
        return record
    return Mechanism(
        record.name,
        record.noise_multiplier / 2,
        record.sample_rate,
        record.steps,
        2 * record.sensitivity,
        sampling="fixed-partition",
    )


def dpsgd_ledger(
    record: Mechanism, delta: float, target: float | None, notes: str, fixed_batches: bool = False
) -> Ledger:
    """A DP-SGD engine's record under add/remove-one RDP with the improved conversion (paper, the headline) and
    under replace-one (sound: a replaced record moves the clipped sum by up to 2C)."""
    paper = Accounting((record,), delta, adjacency="add/remove-one", accountant="rdp", conversion="improved")
    sound = Accounting(
        (replace_one_record(record, fixed_batches),),
        delta,
        adjacency="replace-one",
        accountant="rdp",
        conversion="improved",
    )
    return Ledger(paper, sound, target, notes)


def check_budget(
    spent: Ledger | Accounting | Sequence[Mechanism],
    target_epsilon: float,
    delta: float | None = None,
    conversion: Conversion | None = None,
) -> float:
    """Return the achieved ε, or raise `PrivacyBudgetExceeded` (naming both numbers) if it exceeds the target.

    No tolerance: calibrate σ with `accounting.calibrate_noise` / `solve_noise_multiplier`, which round
    up. A `Ledger` is judged by its headline ε and an `Accounting` by its own ε (`delta`/`conversion`, if
    given, must agree with theirs); bare mechanisms are accounted here by RDP over DEFAULT_ORDERS with
    `delta` (required) and `conversion` (default "improved").
    """
    if not target_epsilon > 0:
        raise ValueError(f"target_epsilon must be > 0, got {target_epsilon}")
    accounting = spent.headline_accounting if isinstance(spent, Ledger) else spent
    if isinstance(accounting, Accounting):
        if delta is not None and delta != accounting.delta:
            raise ValueError(f"delta={delta} differs from the accounting's delta={accounting.delta}")
        if conversion is not None and conversion != accounting.conversion:
            raise ValueError(f"conversion={conversion!r} differs from the accounting's {accounting.conversion!r}")
        achieved = accounting.epsilon
    else:
        if delta is None:
            raise ValueError("delta is required when checking bare mechanisms")
        achieved = composed_epsilon(list(accounting), delta, conversion or "improved")[0]
    if achieved > target_epsilon:
        raise PrivacyBudgetExceeded(target_epsilon, achieved)
    return achieved


def with_preprocessing(ledger: Ledger, paper: Mechanism, sound: Mechanism, target: float | None) -> Ledger:
    """`ledger` composed sequentially after a pure ε-DP mechanism on the same data (`paper`: its record under
    the paper accounting's adjacency, `sound`: under the sound one's), judged against `target`."""
    from dataclasses import replace

    def composed(accounting: Accounting, record: Mechanism) -> Accounting:
        return replace(accounting, preprocessing=(*accounting.preprocessing, record))

    return replace(
        ledger,
        paper=composed(ledger.paper, paper),
        sound=None if ledger.sound is None else composed(ledger.sound, sound),
        target_epsilon=target,
    )


def marked_not_dp(ledger: Ledger, reason: str) -> Ledger:
    """`ledger` for a release that is not DP for `reason` (its sound accounting dropped: there is no bound)."""
    why = reason if ledger.not_dp is None else f"{ledger.not_dp}; {reason}"
    return dataclasses.replace(ledger, sound=None, headline="paper", not_dp=why)
