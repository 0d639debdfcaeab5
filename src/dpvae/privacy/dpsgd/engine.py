"""Vectorised DP-SGD engines: per-unit clipping with one forward pass and one weight-gradient pass per layer.

How a step works (ghost / mixed ghost clipping, Bu et al. 2022-23):

1. forward hooks record every trainable layer's inputs a_l and output z_l (z_l stays in the graph);
2. for each term t (a vector of unit losses), Δ^t_l = ∂(Σ_u loss_u)/∂z_l for all layers at once with
   `torch.autograd.grad` -- no weight gradients are formed;
3. per-unit gradient norms layer by layer from (a_l, Δ^t_l) (`layers.py`: ghost/Gram or instantiation;
   micro aggregation adds 2⟨g_u, ∇ψ⟩ + ‖∇ψ‖² with ⟨g_u, ∇ψ⟩ from a forward pass of the layer along ∇ψ,
   on the layers ψ reaches; a whole-batch unit's gradient is simply the layer's gradient, and small
   per-unit gradients instantiated for the norms are kept too, `KEEP_FLOATS`);
4. clip factors c^t_u = min(1, C_t/‖g^t_u‖) = 1/√max(1, ‖g^t_u‖²/C_t²), the squared norms summed over
   layers by one reduction;
5. one local backward per layer through its own op only (`layers.weight_grads`: the layer's own weight-
   gradient formula, else autograd), with the combined output gradient Σ_t w_t c^t_{u(r)} Δ^t_r, gives
   Σ_t w_t Σ_u c^t_u g^t_u -- the weight gradient is formed once (for a layer whose unit gradients every
   term kept, Σ_u c^t_u g^t_u directly, without that pass);
6. Gaussian noise with the mechanism's std, one draw from the engine's generator over a flat buffer of
   all private parameters, is added and written to `.grad`; any optimizer steps.

A step never reads tensor data on the host, so on an accelerator it never waits for the device: shapes
depend only on the batch size (known on the host), units are flagged per-example rather than compared,
checks of values run on the device (`units.require`), and sub-group norms take fixed shapes (`layers.py`).
A step may run inside torch.compile with the model's forward pass kept eager (`torch.compiler.disable`): a
traced forward hands the hooks outputs that are off the loss's autograd path, and is refused; the release's
bookkeeping (budget, canaries, the step counter) is never traced, so it neither recompiles per step nor differs.

A unit's loss may depend only on the examples of that unit (no BatchNorm in training mode; checked).
Parameters outside `private_params` ("public", e.g. DP²-VAE's encoder, docs/papers.md §4.1/A-D2) would get
the same aggregate without noise, unclipped or clipped per unit at `public_max_grad_norm`: a
non-private update from private data, after which every later per-example gradient depends on records
it was not computed from. The engines refuse trainable public parameters unless the caller declares
this (`public_uses_private_data=True`, with `max_batch_size` for per-example terms); the sound ledger
then charges it (every unit of a step may move, no subsampling amplification). Frozen parameters are
not touched. The public parameters themselves must not be released.

Audited runs (`dpvae.privacy.canaries`): while a canary session is active, the first engine to release
a step appends a private layer of Dirac canaries that join each step's batch as records; outside a session
nothing changes.

Privacy records (`mechanisms`): `sound=False` gives the paper's accounting (its claim), `sound=True`
the released gradient as one Gaussian mechanism with a sensitivity that holds for every realised
batch (`dpvae.privacy.release`). `step()` overwrites `.grad`; call it once per forward pass. With a
`budget` (`dpvae.privacy.budget.StepBudget`) a step that would exceed the target epsilon is refused.
The clipped sums before noise are reachable only through `dpvae.privacy.dpsgd.analysis` (tests and
sensitivity analyses), never through an engine method a training loop calls.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Required, TypedDict, Unpack

import torch
from torch import Tensor, nn
from torch.nn.modules.batchnorm import _BatchNorm

from dpvae.privacy import canaries
from dpvae.privacy.budget import StepBudget
from dpvae.privacy.dpsgd.hooks import Call, CallRecorder, reject_batch_mixing
from dpvae.privacy.dpsgd.layers import (
    Grads,
    check_supported,
    per_example_dots,
    per_example_view,
    trainable_params,
    weight_grads,
)
from dpvae.privacy.dpsgd.units import Units, require
from dpvae.privacy.ledger import Mechanism
from dpvae.privacy.release import ReleasePart, combined_mechanism


@dataclass(frozen=True)
class Term:
    """One clipped sum Σ_u clip(∇loss_u [+ ∇shared]) with its noise std, weighted by `scale` in the gradient.

    `shared` is a scalar loss whose gradient is added to every unit's gradient before clipping
    (micro aggregation: each example's loss is φ(x_i) + ψ(batch)).
    """

    name: str
    losses: Tensor
    units: Units
    clip: float
    noise_std: float
    scale: float
    shared: Tensor | None = None


@dataclass(frozen=True)
class Kept:
    """A layer's per-unit gradients `{param: [U, *param.shape]}` of one term, kept from its norm computation,
    and the term's shared gradient G (every unit's gradient is g_u + G; `{}` where there is none)."""

    unit_grads: Grads
    common: Grads


@dataclass(frozen=True)
class NoiseProfile:
    """Sensitivity of the pre-noise sum and noise on the final gradient (PriVAE Table 1, docs/papers.md §1.3).

    `sensitivity` is the paper's l2-sensitivity; `sound_sensitivity` the add/remove-one bound that
    holds for every realised Poisson batch (they differ where a removed record modifies clipped units
    instead of removing one), both in the units of the sum (the averaged gradient times B); `noise_std`
    the exact per-coordinate noise std on the final (averaged) gradient; `table_noise_scale` Table 1's
    "noise scale" expression (for term-wise the sum (C1/B + C2/b)σ', an upper bound of `noise_std`).
    """

    sensitivity: float
    sound_sensitivity: float
    noise_std: float
    table_noise_scale: float


class TermBound(NamedTuple):
    """How one term enters the released gradient: weight w, noise std s on its sum, and the most one
    record moves the sum, when it adds/removes its own unit or joins/leaves one (`one_record`) and when
    every unit of the step may move (`every_unit`: public parameters updated from private data)."""

    name: str
    weight: float
    noise_std: float
    one_record: float
    every_unit: float


KEEP_FLOATS = 1 << 18  # instantiated per-unit gradients up to this size are kept for the release


class Scale(NamedTuple):
    """How a term enters a weighted sum of clipped gradients: s_u = w·c_u per unit (`unit`, [U]), each
    example's unit's s (`example`, [B]) and Σ_u s_u (`total`, the weight of the shared gradient); plain
    numbers w, w and w·U where the term is not clipped (c = 1)."""

    unit: Tensor | float
    example: Tensor | float
    total: Tensor | float

    @classmethod
    def of(cls, term: Term, weight: float, factors: Tensor | None) -> Scale | None:
        """None where the term does not enter (weight 0 or no examples)."""
        if weight == 0 or term.units.num_examples == 0:
            return None
        if factors is None:
            return cls(weight, weight, weight * term.units.count)
        unit = factors * weight
        example = unit if term.units.is_per_example else unit[term.units.index]
        return cls(unit, example, unit.sum() if term.shared is not None else 0.0)


def _accumulate(total: Tensor | None, d: Tensor, scale: Tensor | float, num_examples: int = 0) -> Tensor:
    """total + scale·d (in place once `total` exists: no further batch-sized temporaries); a 1-d tensor
    `scale [B]` scales the rows of each of the `num_examples` examples (k·B rows, example-major)."""
    if isinstance(scale, Tensor) and scale.dim() == 1:
        rows, scale = d.reshape(num_examples, -1), scale[:, None]
        if total is None:
            return (rows * scale).reshape(d.shape)
        total.view(num_examples, -1).addcmul_(rows, scale)
        return total
    if total is None:
        return d * scale
    if isinstance(scale, Tensor):
        return total.addcmul_(d, scale)
    return total.add_(d, alpha=scale)


def add_gaussian_noise(tensors: Sequence[Tensor], std: float, generator: torch.Generator | None) -> None:
    """Add independent N(0, std²) noise to every entry of `tensors`, in place: one draw from `generator` over
    a flat buffer per (device, dtype), viewed back into the tensors' shapes and added by one `_foreach_add_`."""
    groups: dict[tuple[torch.device, torch.dtype], list[Tensor]] = {}
    for t in tensors:
        groups.setdefault((t.device, t.dtype), []).append(t)
    for (device, dtype), group in groups.items():
        sizes = [t.numel() for t in group]
        noise = torch.empty(sum(sizes), device=device, dtype=dtype).normal_(0.0, std, generator=generator)
        torch._foreach_add_(group, [n.view_as(t) for n, t in zip(noise.split(sizes), group)])


def _positive(name: str, value: float, allow_zero: bool = False) -> float:
    if not (value >= 0 if allow_zero else value > 0) or not math.isfinite(value):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'} and finite, got {value}")
    return float(value)


def _per_example_losses(name: str, losses: Tensor) -> Tensor:
    if not isinstance(losses, Tensor) or losses.dim() != 1:
        raise ValueError(
            f"{name} must be a 1-d tensor of per-example losses, got {getattr(losses, 'shape', type(losses))}"
        )
    return losses


class EngineOptions(TypedDict, total=False):
    """Constructor keywords common to all engines (see `_Engine`); the first two are required."""

    noise_multiplier: Required[float]
    sample_rate: Required[float]
    private_params: Iterable[nn.Parameter] | None
    public_max_grad_norm: float | None
    public_uses_private_data: bool
    max_batch_size: int | None
    generator: torch.Generator | None
    budget: StepBudget | None


class _Engine:
    """Hooks, validation and the clipped-sum machinery shared by all engines.

    `noise_multiplier` σ, `sample_rate` q (Poisson), `private_params` (default: all trainable
    parameters), `public_max_grad_norm` (None: public parameters unclipped), `public_uses_private_data`
    (the declaration that trainable public parameters may be updated from the private batch, required
    when there are any), `max_batch_size` (with that declaration: the largest batch a step accepts, so
    that "every unit moves" stays bounded; use data-independent fixed-size batches), `generator` for
    the noise, `budget` to refuse steps past a target epsilon.
    """

    kind = "dpsgd"

    def __init__(
        self,
        model: nn.Module,
        *,
        noise_multiplier: float,
        sample_rate: float,
        private_params: Iterable[nn.Parameter] | None = None,
        public_max_grad_norm: float | None = None,
        public_uses_private_data: bool = False,
        max_batch_size: int | None = None,
        generator: torch.Generator | None = None,
        budget: StepBudget | None = None,
    ) -> None:
        self.budget = budget
        self.noise_multiplier = _positive("noise_multiplier", noise_multiplier, allow_zero=True)
        if not 0 < sample_rate <= 1:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
        self.sample_rate = float(sample_rate)
        if public_max_grad_norm is not None:
            _positive("public_max_grad_norm", public_max_grad_norm)
        self.public_max_grad_norm = public_max_grad_norm
        self.generator = generator
        self.steps = 0
        layers = {name: m for name, m in model.named_modules() if trainable_params(m)}
        owners = [p for m in layers.values() for p in trainable_params(m)]
        if len({id(p) for p in owners}) != len(owners):
            raise ValueError("model shares a trainable parameter between layers; not supported")
        trainable = {id(p) for p in owners}
        private = owners if private_params is None else list(private_params)
        if not private or any(id(p) not in trainable for p in private):
            raise ValueError("private_params must be a non-empty subset of the model's trainable parameters")
        private_ids = {id(p) for p in private}
        self._private_layers, self._public_layers = [], []
        for name, layer in layers.items():
            kinds = {id(p) in private_ids for p in trainable_params(layer)}
            if len(kinds) > 1:
                raise ValueError(f"layer '{name}' mixes private and public parameters; split them by layer")
            (self._private_layers if kinds == {True} else self._public_layers).append(layer)
            if kinds == {True} or public_max_grad_norm is not None:
                check_supported(layer)
        self._declare_public(bool(public_uses_private_data), max_batch_size)
        self._model = model
        reject_batch_mixing(model, self._private_layers)
        self._has_batchnorm = any(isinstance(m, _BatchNorm) for m in model.modules())
        self._canaries: canaries.CanarySlot | None = None  # an audited run only: set at the first release
        self._canary_place = (owners[0].device, owners[0].dtype)
        self._recorder = CallRecorder(layers)

    def _declare_public(self, declared: bool, max_batch_size: int | None) -> None:
        """Refuse undeclared non-private updates of public parameters from the private batch."""
        if self._public_layers and not declared:
            names = sorted({type(layer).__name__ for layer in self._public_layers})
            raise ValueError(
                f"trainable parameters outside private_params ({', '.join(names)} layers) would be updated from "
                "the private batch without noise, and every later per-example gradient would then depend on "
                "records it was not computed from: freeze them (requires_grad=False), list them in "
                "private_params, or declare public_uses_private_data=True (with max_batch_size) so that the "
                "sound ledger charges it"
            )
        if declared and not self._public_layers:
            raise ValueError("public_uses_private_data=True, but every trainable parameter is private")
        if max_batch_size is not None and (
            isinstance(max_batch_size, bool) or int(max_batch_size) != max_batch_size or max_batch_size < 1
        ):
            raise ValueError(f"max_batch_size must be an integer >= 1, got {max_batch_size}")
        self.public_uses_private_data = declared
        self.max_batch_size = None if max_batch_size is None else int(max_batch_size)

    def _check_batch(self, num_examples: int) -> None:
        """With public parameters updated from private data, refuse a batch above `max_batch_size`."""
        if self.public_uses_private_data and self.max_batch_size is not None and num_examples > self.max_batch_size:
            raise ValueError(
                f"batch of {num_examples} examples exceeds max_batch_size={self.max_batch_size}, "
                "which bounds the sound ledger's sensitivity"
            )

    def _every_unit_bound(self, clip: float) -> float:
        """2·C·max_batch_size: every per-example unit of a step moves by up to 2C."""
        if self.max_batch_size is None:
            raise ValueError("public_uses_private_data=True needs max_batch_size for per-example terms")
        return 2 * clip * self.max_batch_size

    # -- privacy records --------------------------------------------------------------------------

    def _term_bounds(self) -> list[TermBound]:
        raise NotImplementedError

    def _paper_mechanisms(self) -> list[Mechanism]:
        raise NotImplementedError

    def mechanisms(self, sound: bool = False) -> list[Mechanism]:
        """The paper's accounting of the steps so far, or (`sound`) the released gradient as one Gaussian
        mechanism whose sensitivity holds for every realised batch (`dpvae.privacy.release`): with public
        parameters updated from private data every unit of every step may move and nothing is amplified
        by subsampling (sample rate 1)."""
        if not sound:
            return self._paper_mechanisms()
        bounds = self._term_bounds()
        if self.public_uses_private_data:
            parts = [ReleasePart(b.name, b.weight * b.noise_std, b.weight * b.every_unit) for b in bounds]
            name = f"{self.kind}: released gradient, public parameters trained on private data (sound)"
            return [combined_mechanism(name, parts, 1.0, self.steps)]
        parts = [ReleasePart(b.name, b.weight * b.noise_std, b.weight * b.one_record) for b in bounds]
        return [combined_mechanism(f"{self.kind}: released gradient (sound)", parts, self.sample_rate, self.steps)]

    # -- the clipped-sum machinery --------------------------------------------------------------

    def _output_grads(
        self, calls: dict[nn.Module, list[Call]], loss: Tensor | None
    ) -> dict[nn.Module, list[Tensor | None]]:
        """∂loss/∂z for every recorded call output (None where the loss does not depend on it)."""
        outputs = [c.output for layer_calls in calls.values() for c in layer_calls]
        if loss is None or not loss.requires_grad or not outputs:
            flat: Sequence[Tensor | None] = [None] * len(outputs)
        else:
            flat = torch.autograd.grad(loss, outputs, retain_graph=True, allow_unused=True)
        result, start = {}, 0
        for layer, layer_calls in calls.items():
            result[layer] = list(flat[start : start + len(layer_calls)])
            start += len(layer_calls)
        return result

    def _local_grads(
        self, layer: nn.Module, calls: list[Call], grad_outputs: list[Tensor | None]
    ) -> dict[nn.Parameter, Tensor]:
        """Σ over calls of the layer's own parameter gradient for the given output gradients: by the layer's
        formula where it has one (`layers.weight_grads`), else by backpropagating through its own op only.

        A layer called several times may feed its own later calls, so then each call is re-run on
        detached inputs to keep the gradient to the layer's own operation.
        """
        params = trainable_params(layer)
        pairs = [(c, g) for c, g in zip(calls, grad_outputs) if g is not None]
        if not pairs:
            return {p: torch.zeros_like(p) for p in params}
        if (direct := weight_grads(layer, [(c.inputs, g) for c, g in pairs])) is not None:
            return direct
        if len(calls) == 1:
            outputs = [pairs[0][0].output]
        else:
            with self._recorder.paused(), torch.enable_grad():
                outputs = [layer(*[i.detach() for i in c.inputs]) for c, _ in pairs]
        grads = torch.autograd.grad(outputs, params, [g for _, g in pairs], retain_graph=True, allow_unused=True)
        return {p: torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)}

    def _clip_factors(
        self,
        layers: list[nn.Module],
        calls: dict[nn.Module, list[Call]],
        term: Term,
        deltas: dict,
        shared: dict | None,
        clip: float,
    ) -> tuple[Tensor, dict[nn.Module, Kept]]:
        """min(1, clip/‖g_u‖) per unit, norms taken over the given layers' parameters, and the layers whose
        per-unit gradients g_u came out of the norm computation anyway: kept for the release, with the shared
        gradient G (unit u's gradient is g_u + G). A whole-batch unit's gradient is the layer's plain
        gradient; small instantiated ones (`KEEP_FLOATS`) are kept too. The squared norms are summed over
        layers once, by one reduction.
        """
        units = term.units
        unit_parts: list[Tensor] = []  # per-unit squared norms [U], by layer
        shared_parts: list[Tensor] = []  # tensors whose squared norm every unit's adds
        kept: dict[nn.Module, Kept] = {}
        for layer in layers:
            layer_calls = calls.get(layer, [])
            shared_deltas = [] if shared is None else shared.get(layer, [])
            reached = any(d is not None for d in shared_deltas)  # else ∇ψ is zero on this layer
            common = self._local_grads(layer, layer_calls, shared_deltas) if reached else {}
            unit_grads: Grads | None = {}  # zero where the term does not reach the layer
            if units.count == 1:
                grads = self._local_grads(layer, layer_calls, deltas.get(layer, []))
                shared_parts.extend(g + common[p] if common else g for p, g in grads.items())
                kept[layer] = Kept({p: g[None] for p, g in grads.items()}, common)
                continue
            used = [(c.inputs, d) for c, d in zip(layer_calls, deltas.get(layer, [])) if d is not None]
            if used:
                view = per_example_view(layer, used, units.num_examples)
                unit_sq_norms, unit_grads = view.unit_norms_and_grads(units, KEEP_FLOATS)
                unit_parts.append(unit_sq_norms)
                if common:  # ‖g_u + G‖² = ‖g_u‖² + 2⟨g_u, G⟩ + ‖G‖²
                    with self._recorder.paused():
                        dots = per_example_dots(layer, used, units.num_examples, common)
                    unit_parts.append(2 * (dots if units.is_per_example else units.sum_by_unit(dots)))
            shared_parts.extend(common.values())
            if unit_grads is not None:
                kept[layer] = Kept(unit_grads, common)
        sq_norms = torch.stack(unit_parts).sum(0) if unit_parts else term.losses.new_zeros(units.count)
        if shared_parts:
            sq_norms = sq_norms + torch.stack(torch._foreach_norm(shared_parts)).square().sum()
        return (sq_norms / (clip * clip)).clamp_min(1.0).rsqrt(), kept

    @staticmethod
    def _from_kept(
        layer: nn.Module, scales: Sequence[Scale | None], kept: Sequence[Kept]
    ) -> dict[nn.Parameter, Tensor]:
        """Σ_t Σ_u s^t_u (g^t_u + G^t) from kept per-unit gradients: no weight-gradient pass."""
        result = {}
        for p in trainable_params(layer):
            total = None
            for scale, k in zip(scales, kept):
                if scale is not None and p in k.unit_grads:
                    grads = k.unit_grads[p]
                    part = (
                        grads[0] * scale.unit[0]
                        if len(grads) == 1
                        else torch.mv(grads.reshape(len(grads), -1).t(), scale.unit).view(p.shape)
                    )
                    total = part if total is None else total.add_(part)
                if scale is not None and p in k.common:
                    total = _accumulate(total, k.common[p], scale.total)
            result[p] = torch.zeros_like(p) if total is None else total
        return result

    @staticmethod
    def _combined(
        call_index: int,
        layer: nn.Module,
        terms: Sequence[Term],
        scales: Sequence[Scale | None],
        deltas: Sequence[dict],
        shared: Sequence[dict | None],
    ) -> Tensor | None:
        """Σ_t (s^t_{u(r)} Δ^t_r + (Σ_u s^t_u) Δ^{t,shared}_r) for one call of a layer."""
        total = None
        for term, scale, delta, common in zip(terms, scales, deltas, shared):
            if scale is None:
                continue
            if (d := delta[layer][call_index]) is not None:
                total = _accumulate(total, d, scale.example, term.units.num_examples)
            if common is not None and (d := common[layer][call_index]) is not None:
                total = _accumulate(total, d, scale.total)
        return total

    def _aggregate(
        self, terms: Sequence[Term], weight_sets: Sequence[Sequence[float]], include_public: bool
    ) -> list[dict[nn.Parameter, Tensor]]:
        """Clipped (private) and plain-or-clipped (public) sums, one result per weight set over the terms."""
        calls = self._recorder.take()
        canary_layer = None if self._canaries is None else self._canaries.layer
        if not any(c for layer, c in calls.items() if layer is not canary_layer) and any(
            t.losses.requires_grad and t.units.num_examples for t in terms if not t.name.startswith(canaries.TERM_NAME)
        ):
            raise ValueError(
                "no forward pass of the model was recorded since the last engine call: run the "
                "model, then call the engine once per forward pass"
            )
        if self._has_batchnorm:  # a BatchNorm may have been switched to training mode since construction
            reject_batch_mixing(self._model, [])
        for layer, layer_calls in calls.items():
            for call in layer_calls:
                call.check_unmodified(self._recorder.names[layer])
        deltas = [self._output_grads(calls, t.losses.sum()) for t in terms]
        shared = [None if t.shared is None else self._output_grads(calls, t.shared) for t in terms]
        groups = [(self._private_layers, [t.clip for t in terms])]
        if include_public:
            groups.append((self._public_layers, [self.public_max_grad_norm] * len(terms)))
        results: list[dict[nn.Parameter, Tensor]] = [{} for _ in weight_sets]
        with torch.no_grad():  # nothing below is differentiated: no autograd graph is recorded
            for layers, clips in groups:
                clipped = [
                    None
                    if clip is None or t.units.num_examples == 0
                    else self._clip_factors(layers, calls, t, d, s, clip)
                    for t, d, s, clip in zip(terms, deltas, shared, clips)
                ]
                scales = [
                    [Scale.of(t, w, None if c is None else c[0]) for t, w, c in zip(terms, weights, clipped)]
                    for weights in weight_sets
                ]
                for layer in layers:
                    kept = [None if c is None else c[1].get(layer) for c in clipped]
                    layer_calls = calls.get(layer, [])
                    for result, term_scales in zip(results, scales):
                        if kept and all(k is not None for k in kept):  # every term's unit gradients are at hand
                            result.update(self._from_kept(layer, term_scales, kept))
                            continue
                        grad_outputs = [
                            self._combined(i, layer, terms, term_scales, deltas, shared)
                            for i in range(len(layer_calls))
                        ]
                        result.update(self._local_grads(layer, layer_calls, grad_outputs))
        return results

    def _release(self, terms: Sequence[Term]) -> None:
        """Write the noisy clipped gradient to private `.grad`s and the noiseless one to public `.grad`s;
        refuse (PrivacyBudgetExceeded, nothing released) a step past the budget."""
        terms = self._admit(terms)
        (grads,) = self._aggregate(terms, [[t.scale for t in terms]], include_public=True)
        std = math.sqrt(sum((t.scale * t.noise_std) ** 2 for t in terms))
        private = {id(p) for layer in self._private_layers for p in trainable_params(layer)}
        if std > 0:
            add_gaussian_noise([g for p, g in grads.items() if id(p) in private], std, self.generator)
        for p, g in grads.items():
            p.grad = g.detach() if g.requires_grad else g
        self._count_release()

    # The host-side bookkeeping of a release (budget, canaries, the step counter) is never traced by
    # torch.compile: a compiled step would otherwise specialise on `steps` and recompile at every step.
    @torch.compiler.disable
    def _admit(self, terms: Sequence[Term]) -> list[Term]:
        """The step's terms, an audited run's canary terms added; PrivacyBudgetExceeded past the budget."""
        if self.budget is not None:
            self.budget.check(self.steps + 1)
        if self.steps == 0 and self._canaries is None:  # the first engine to release in a session carries them
            self._canaries = canaries.attach(self, *self._canary_place)
            if self._canaries is not None:
                self._private_layers.append(self._canaries.layer)
                self._recorder.add(canaries.LAYER_NAME, self._canaries.layer)
        if self._canaries is None:
            return list(terms)
        losses, parts = self._canaries.losses(self)  # audited run: the canaries join the batch as records
        units = Units.per_example(len(losses), losses.device)
        return [
            *terms,
            *(
                Term(f"{canaries.TERM_NAME}.{i}", losses, units, clip, 0.0, weight)
                for i, (clip, weight) in enumerate(parts)
            ),
        ]

    @torch.compiler.disable
    def _count_release(self) -> None:
        self.steps += 1
        if self._canaries is not None:
            self._canaries.observe()

    def _mechanism(self, name: str, noise_multiplier: float, sensitivity: float) -> Mechanism:
        return Mechanism(
            name=name,
            noise_multiplier=noise_multiplier,
            sample_rate=self.sample_rate,
            steps=self.steps,
            sensitivity=sensitivity,
        )

    def close(self) -> None:
        """Remove the forward hooks from the model."""
        self._recorder.close()


class _PerExampleEngine(_Engine):
    """An engine clipping every example's gradient at `max_grad_norm`, averaged over `expected_batch_size`."""

    def __init__(
        self, model: nn.Module, *, max_grad_norm: float, expected_batch_size: float, **options: Unpack[EngineOptions]
    ) -> None:
        super().__init__(model, **options)
        self.max_grad_norm = _positive("max_grad_norm", max_grad_norm)
        self.expected_batch_size = _positive("expected_batch_size", expected_batch_size)


class DPSGD(_PerExampleEngine):
    """Standard DP-SGD: per-example clip C, noise N(0, σ²C²) on the sum, divided by the expected batch size.

    With `private_params`, only those parameters are private (partial-model DP; see the module docstring
    for public parameters). Paper and sound accounting agree: one record moves the sum by at most C.
    """

    def _terms(self, losses: Tensor) -> list[Term]:
        losses = _per_example_losses("losses", losses)
        self._check_batch(len(losses))
        c = self.max_grad_norm
        return [
            Term(
                "dpsgd",
                losses,
                Units.per_example(len(losses), losses.device),
                c,
                self.noise_multiplier * c,
                1 / self.expected_batch_size,
            )
        ]

    def step(self, losses: Tensor) -> None:
        """Write the private gradient of the per-example `losses [B]` to `.grad`."""
        self._release(self._terms(losses))

    def _paper_mechanisms(self) -> list[Mechanism]:
        return [self._mechanism("dpsgd", self.noise_multiplier, self.max_grad_norm)]

    def _term_bounds(self) -> list[TermBound]:
        c = self.max_grad_norm
        every = self._every_unit_bound(c) if self.public_uses_private_data else 2 * c
        return [TermBound("dpsgd", 1 / self.expected_batch_size, self.noise_multiplier * c, c, every)]

    def noise_profile(self) -> NoiseProfile:
        c, std = self.max_grad_norm, self.noise_multiplier * self.max_grad_norm / self.expected_batch_size
        return NoiseProfile(c, c, std, std)


class TermwiseDPSGD(_Engine):
    """PriVAE's term-wise DP-SGD (Algorithm 1, docs/papers.md §1.1).

    g̃ = (Σ_i clip_C1(∇φ(x_i)) + N(0, (σ'C1)²))/B + (Σ_j clip_C2(∇ψ(s_j)) + N(0, (σ'C2)²))/b with B the
    expected batch size, b sub-groups s_j (`random_groups`: independent labels) and σ' the given noise multiplier
    (κσ, computed elsewhere). `batch_clip` = 0 ignores ψ (ordinary DP-SGD on φ). Only g̃ is released, so
    the step is one Gaussian mechanism: one record moves Σ_i clip/B by ≤ C1/B and, joining or leaving one
    existing sub-group (independent labels move no other record), Σ_j clip/b by ≤ 2·C2/b; the noise std is
    σ'·√((C1/B)² + (C2/b)²).
    """

    kind = "termwise"

    def __init__(
        self,
        model: nn.Module,
        *,
        sample_clip: float,
        batch_clip: float,
        expected_batch_size: float,
        num_groups: int,
        **options: Unpack[EngineOptions],
    ) -> None:
        super().__init__(model, **options)
        self.sample_clip = _positive("sample_clip", sample_clip)
        self.batch_clip = _positive("batch_clip", batch_clip, allow_zero=True)
        self.expected_batch_size = _positive("expected_batch_size", expected_batch_size)
        if int(num_groups) != num_groups or num_groups < 1:
            raise ValueError(f"num_groups must be a positive integer, got {num_groups}")
        self.num_groups = int(num_groups)

    def _terms(self, sample_losses: Tensor, group_losses: Tensor, groups: Tensor) -> list[Term]:
        sample_losses = _per_example_losses("sample_losses", sample_losses)
        self._check_batch(len(sample_losses))
        sigma, b = self.noise_multiplier, self.num_groups
        terms = [
            Term(
                "sample",
                sample_losses,
                Units.per_example(len(sample_losses), sample_losses.device),
                self.sample_clip,
                sigma * self.sample_clip,
                1 / self.expected_batch_size,
            )
        ]
        if self.batch_clip == 0:
            return terms
        if groups.shape != sample_losses.shape:
            raise ValueError(
                f"groups must have one entry per example, got {tuple(groups.shape)} for {len(sample_losses)} examples"
            )
        if group_losses.shape != (b,):
            raise ValueError(f"group_losses must have shape ({b},), got {tuple(group_losses.shape)}")
        terms.append(Term("batch", group_losses, Units(groups, b), self.batch_clip, sigma * self.batch_clip, 1 / b))
        return terms

    def step(self, sample_losses: Tensor, group_losses: Tensor, groups: Tensor) -> None:
        """Write the private gradient to `.grad`: `sample_losses [B]` = φ(x_i), `group_losses [b]` = ψ(s_j),
        `groups [B]` the sub-group of each example."""
        self._release(self._terms(sample_losses, group_losses, groups))

    def _paper_mechanisms(self) -> list[Mechanism]:
        """The two halves, each a Gaussian mechanism with multiplier σ' (Theorem 2, Lemma 2)."""
        sigma = self.noise_multiplier
        if self.batch_clip == 0:
            return [self._mechanism("termwise.sample", sigma, self.sample_clip)]
        return [
            self._mechanism("termwise.sample", sigma, self.sample_clip),
            self._mechanism("termwise.batch", sigma, self.batch_clip),
        ]

    def _term_bounds(self) -> list[TermBound]:
        sigma, c1, c2 = self.noise_multiplier, self.sample_clip, self.batch_clip
        every = self._every_unit_bound(c1) if self.public_uses_private_data else 2 * c1
        bounds = [TermBound("sample", 1 / self.expected_batch_size, sigma * c1, c1, every)]
        if c2 > 0:  # every one of the b sub-groups may move by 2·C2 when all units move
            bounds.append(TermBound("batch", 1 / self.num_groups, sigma * c2, 2 * c2, 2 * c2 * self.num_groups))
        return bounds

    def noise_profile(self) -> NoiseProfile:
        c1, c2, sigma = self.sample_clip, self.batch_clip, self.noise_multiplier
        per_sample, per_batch = c1 / self.expected_batch_size, c2 / self.num_groups
        return NoiseProfile(
            c1 + c2, c1 + 2 * c2, sigma * math.hypot(per_sample, per_batch), sigma * (per_sample + per_batch)
        )


class MicroAggregation(_PerExampleEngine):
    """PriVAE's "micro agg." baseline: unit i's loss is φ(x_i) + ψ(batch); clip C; noise N(0, (σBC)²); /B.

    ψ is shared by every unit, so one record moves all clipped gradients of the batch (PriVAE
    Proposition 3 takes B·C for the sum). A Poisson batch can be larger than the expected size B, so the
    sum is divided by max(n, B) for a batch of n (the paper's /B for every batch up to B): the released
    average then has norm ≤ C for every realised batch, and one record moves it by at most 2C (sound),
    with noise std σC on it.
    """

    kind = "micro"

    def _normaliser(self, num_examples: int) -> float:
        """max(n, B): what the sum is divided by (B alone would let a large batch exceed the bound)."""
        return max(float(num_examples), self.expected_batch_size)

    def _terms(self, sample_losses: Tensor, batch_loss: Tensor) -> list[Term]:
        sample_losses = _per_example_losses("sample_losses", sample_losses)
        self._check_batch(len(sample_losses))
        if batch_loss.dim() != 0:
            raise ValueError(f"batch_loss must be a scalar, got shape {tuple(batch_loss.shape)}")
        n, c = self._normaliser(len(sample_losses)), self.max_grad_norm
        return [
            Term(
                "micro",
                sample_losses,
                Units.per_example(len(sample_losses), sample_losses.device),
                c,
                self.noise_multiplier * n * c,
                1 / n,
                shared=batch_loss,
            )
        ]

    def step(self, sample_losses: Tensor, batch_loss: Tensor) -> None:
        """Write the private gradient to `.grad`: `sample_losses [B]` = φ(x_i), `batch_loss` = ψ(batch)."""
        self._release(self._terms(sample_losses, batch_loss))

    def _paper_mechanisms(self) -> list[Mechanism]:
        """Sensitivity B·C of the sum (B the expected batch size), multiplier σ."""
        b, c = self.expected_batch_size, self.max_grad_norm
        return [self._mechanism("micro", self.noise_multiplier, b * c)]

    def _term_bounds(self) -> list[TermBound]:
        b, c = self.expected_batch_size, self.max_grad_norm  # in units of the sum at weight 1/B: 2BC ⇒ 2C
        return [TermBound("micro", 1 / b, self.noise_multiplier * b * c, 2 * b * c, 2 * b * c)]

    def noise_profile(self) -> NoiseProfile:
        b, c, sigma = self.expected_batch_size, self.max_grad_norm, self.noise_multiplier
        return NoiseProfile(b * c, 2 * b * c, sigma * c, sigma * c)


class BatchAggregation(_Engine):
    """PriVAE's "batch agg." baseline: the whole-batch loss gradient clipped at C plus N(0, (σC)²), no division.

    The one clipped gradient can move anywhere in the C-ball: sound sensitivity 2C (paper: C).
    """

    kind = "batch"

    def __init__(self, model: nn.Module, *, max_grad_norm: float, **options: Unpack[EngineOptions]) -> None:
        super().__init__(model, **options)
        self.max_grad_norm = _positive("max_grad_norm", max_grad_norm)

    def _terms(self, batch_loss: Tensor) -> list[Term]:
        if batch_loss.dim() != 0:
            raise ValueError(f"batch_loss must be a finite scalar, got shape {tuple(batch_loss.shape)}")
        require(torch.isfinite(batch_loss), "batch_loss must be a finite scalar")
        c = self.max_grad_norm
        return [
            Term(
                "batch",
                batch_loss.reshape(1),
                Units.whole_batch(1, batch_loss.device),
                c,
                self.noise_multiplier * c,
                1.0,
            )
        ]

    def step(self, batch_loss: Tensor) -> None:
        """Write the private gradient of the whole-batch loss (mean φ + ψ(batch)) to `.grad`."""
        self._release(self._terms(batch_loss))

    def _paper_mechanisms(self) -> list[Mechanism]:
        return [self._mechanism("batch", self.noise_multiplier, self.max_grad_norm)]

    def _term_bounds(self) -> list[TermBound]:
        c = self.max_grad_norm
        return [TermBound("batch", 1.0, self.noise_multiplier * c, 2 * c, 2 * c)]

    def noise_profile(self) -> NoiseProfile:
        c = self.max_grad_norm
        return NoiseProfile(c, 2 * c, self.noise_multiplier * c, self.noise_multiplier * c)
