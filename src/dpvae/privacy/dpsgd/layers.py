"""Per-unit gradient norms of one layer from its recorded inputs and output gradients.

A layer call records its inputs and its output z; the engine supplies the output gradient Δ = ∂loss/∂z.
The leading dimension of the layer's input is `k·B` for B examples, example-major (rows
`i·k .. i·k+k-1` belong to example i, e.g. `z.repeat_interleave(L, 0)` for L Monte-Carlo samples).
Norms are computed here; the engine forms the clipped sum with one weight-gradient pass per layer, or
from the per-unit gradients when computing the norms instantiated them anyway (`unit_norms_and_grads`).

Two representations of the per-example gradients:

* `RowsForm` (Linear, Conv2d and ConvTranspose2d with groups = 1): the weight gradient of example b is
  Σ_r d_r a_rᵀ, an [O, P] matrix, where r runs over the example's rows (sequence positions,
  Monte-Carlo samples, convolution positions: unfolded input patches for Conv2d, unfolded output
  gradients for ConvTranspose2d, whose unfold has exactly one patch per input position). For a unit
  with R rows (all rows of its examples) the squared norm comes from the cheaper of
  **Gram form** ‖G_u‖² = Σ_{r,r'} (a_r·a_r')(d_r·d_r'), ≈ R²·(P+O) multiply-adds per unit, and
  **instantiation** ‖Σ_r d_r a_rᵀ‖², ≈ R·P·O multiply-adds but P·O entries written per unit by a
  GEMM with inner dimension R, which on this CPU runs far below peak. Cost model: Gram iff
  R²(P+O) < GRAM_ADVANTAGE·P·O with GRAM_ADVANTAGE = 100 (measured: for the conv VAE's 8×8 layers,
  R = 64, both take the same time at a ratio of ~72). R = 1 is the ghost norm ‖a‖²‖d‖².
  Convolutions refine both: the Gram of the unfolded patches of one example comes from the Gram of its
  stride phases (`_phase_gram`: a kernel of m·stride reads each input pixel m² times, the phase Gram
  once; ~2x faster for the conv VAE's 4×4 stride-2 layers), and units of several examples (term-wise
  sub-groups) are instantiated by the convolution's own weight-gradient kernel, one call per unit
  (`_conv_unit_grads`; 3-4x faster than the batched matrix products on gathered, padded rows).
  Units of several examples need their sizes for that layout; where the unit index is in host memory they
  are read there, else (an accelerator: reading them would wait for the device) the shapes do not depend on
  them: one Gram over all rows of the batch masked to pairs in the same unit, or the per-example gradients
  summed into their units, by the same cost model (`RowsForm._grouped_weight`).
  On the CPU rows are produced a chunk of units at a time (`CHUNK_FLOATS`, ~8 MB), so unfolded patches stay
  in cache and large temporaries (whose page faults dominated on this machine) are never allocated; on an
  accelerator, where each chunk costs kernel launches, in one chunk (`DEVICE_CHUNK_FLOATS`).
  Bias gradients are instantiated ([U, O]).
* `Instantiated` (GroupNorm, LayerNorm, Embedding, grouped convolutions, anything else): per-example
  gradients from this module's rules (`GRAD_SAMPLERS`: GroupNorm, a chunk at a time), opacus'
  per-layer grad samplers (`opacus.grad_sample` registry), or opacus' functorch fallback.

`per_example_dots` gives ⟨g_i, G⟩ for a fixed direction G without per-example gradients (micro
aggregation's ‖g_i + ∇ψ‖²); `weight_grads` a Linear's or convolution's parameter gradient by its own
formula (the engine's weight-gradient pass; `dense_conv_grads`: a convolution that is a dense layer in
disguise, by one matrix product).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from opacus.grad_sample import GradSampleModule
from opacus.grad_sample.functorch import ft_compute_per_sample_gradient, prepare_layer
from torch import Tensor, nn

from dpvae.privacy.dpsgd.units import Units

Grads = dict[nn.Parameter, Tensor]
GRAM_ADVANTAGE = 100  # see the module docstring's cost model
CHUNK_FLOATS = 1 << 21  # rows are produced in chunks of about 8 MB on the CPU
DEVICE_CHUNK_FLOATS = 1 << 27  # and of at most 512 MB on an accelerator


def _rows_supported(module: nn.Module) -> bool:
    if isinstance(module, nn.Linear):
        return True
    if type(module) in (nn.Conv2d, nn.ConvTranspose2d):
        return module.groups == 1 and module.padding_mode == "zeros"
    return False


def check_supported(module: nn.Module) -> None:
    """Raise ValueError if per-example gradients of `module` cannot be computed."""
    if _rows_supported(module) or type(module) in GRAD_SAMPLERS.keys() | GradSampleModule.GRAD_SAMPLERS.keys():
        return
    if isinstance(module, nn.ConvTranspose2d):
        raise ValueError(f"{module}: ConvTranspose2d needs groups=1 and padding_mode='zeros'")
    if any(True for _ in module.buffers(recurse=False)):
        raise ValueError(f"{type(module).__name__} has buffers and no per-example gradient rule")
    try:
        prepare_layer(module)
    except NotImplementedError as error:
        raise ValueError(f"{type(module).__name__}: {error}") from error


def trainable_params(module: nn.Module) -> list[nn.Parameter]:
    """The module's own (non-recursive) parameters that require gradients."""
    return [p for p in module.parameters(recurse=False) if p.requires_grad]


def _gram_cheaper(p: int, o: int, rows: int, units: int = 1) -> bool:
    """The cost model of the module docstring: Gram form for `units` units of `rows` rows each, else
    instantiation (`units` > 1: one Gram over the rows of several units, which instantiation writes once)."""
    return units * rows * rows * (p + o) < GRAM_ADVANTAGE * p * o


def chunk_floats(device: torch.device) -> int:
    """Floats per chunk of rows: cache-sized on the CPU (`CHUNK_FLOATS`); on an accelerator, where every chunk
    costs kernel launches and memory is no bottleneck, `DEVICE_CHUNK_FLOATS` (one chunk for usual batches)."""
    return CHUNK_FLOATS if device.type == "cpu" else DEVICE_CHUNK_FLOATS


def _sq_norm(t: Tensor) -> Tensor:
    """Squared l2 norm of each row t[u] over all remaining dimensions, shape [U]."""
    return t * t if t.dim() == 1 else (t * t).sum(tuple(range(1, t.dim())))


def _total(tensors: Iterable[Tensor]) -> Tensor:
    """Sum of one or more tensors (the first is not modified)."""
    first, *rest = tensors
    if not rest:
        return first
    total = first + rest[0]
    for t in rest[1:]:
        total.add_(t)
    return total


RowSelector = slice | Tensor  # consecutive examples, or example indices


@dataclass
class RowsForm:
    """Per-example gradients of a layer as sums of rank-one row products (see module docstring).

    `rows(examples)` gives the selected examples' rows feature-first, `[n, P, R]` activations and
    `[n, O, R]` output gradients (unfolded on demand, a chunk at a time); `bias_grads [B, O]`.
    """

    rows: Callable[[RowSelector], tuple[Tensor, Tensor]]
    num_examples: int
    per_example_size: tuple[int, int, int]  # (P, O, R)
    bias_grads: Tensor | None
    weight: nn.Parameter | None
    bias: nn.Parameter | None
    transposed: bool  # weight stored as [P, O, ...] (ConvTranspose2d) instead of [O, P, ...]
    kernel_unit_grads: Callable[[Units, list[int]], Tensor] | None = None  # see _conv_unit_grads
    phase_sq_norms: Callable[[], Tensor] | None = None  # per-example weight ‖g_i‖² by phase Grams

    def _instantiate(self, acts: Tensor, outs: Tensor) -> Tensor:
        """Σ_r d_r a_rᵀ per unit from [U, P, R] and [U, O, R], as [U, *weight.shape] (no transposed copy)."""
        if self.transposed:
            matrices = torch.bmm(acts, outs.transpose(1, 2))
        else:
            matrices = torch.bmm(outs, acts.transpose(1, 2))
        return matrices.reshape(len(matrices), *self.weight.shape)

    def _weight_sq_norms(self, acts: Tensor, outs: Tensor) -> tuple[Tensor, Tensor | None]:
        """‖Σ_r d_r a_rᵀ‖² per example by the cheaper of ghost/Gram and instantiation (module docstring), and
        the instantiated matrices where that was the cheaper."""
        p, o, rows = acts.shape[1], outs.shape[1], acts.shape[2]
        if rows == 1:
            return _sq_norm(acts) * _sq_norm(outs), None
        if _gram_cheaper(p, o, rows):
            return (torch.bmm(acts.transpose(1, 2), acts) * torch.bmm(outs.transpose(1, 2), outs)).sum((1, 2)), None
        matrices = self._instantiate(acts, outs)
        return _sq_norm(matrices), matrices

    def _chunk(self, rows_per_unit: int, extra: int = 0) -> int:
        """Units per chunk so that a chunk's rows and products stay cache-sized (`extra` floats per unit more)."""
        p, o, _ = self.per_example_size
        per_unit = (p + o) * rows_per_unit + min(p * o, 2 * rows_per_unit**2) + extra
        return max(1, chunk_floats(self.weight.device) // per_unit)

    def _chunks(self, rows_per_example: int, extra: int = 0) -> Iterator[slice]:
        """Consecutive examples, a chunk at a time (`_chunk`)."""
        step = self._chunk(rows_per_example, extra)
        return (slice(i, i + step) for i in range(0, self.num_examples, step))

    def _per_example_weight(self, keep: bool) -> tuple[Tensor, Tensor | None]:
        """‖g_i‖² of the weight per example, and the per-example gradients if instantiated and `keep`."""
        if self.phase_sq_norms is not None and _gram_cheaper(*self.per_example_size):
            return self.phase_sq_norms(), None
        parts = [self._weight_sq_norms(*self.rows(examples)) for examples in self._chunks(self.per_example_size[2])]
        sq_norms = parts[0][0] if len(parts) == 1 else torch.cat([norms for norms, _ in parts])
        if keep and all(m is not None for _, m in parts):
            return sq_norms, parts[0][1] if len(parts) == 1 else torch.cat([m for _, m in parts])
        return sq_norms, None

    def _grouped_weight(self, units: Units, keep: bool) -> tuple[Tensor, Tensor | None]:
        """‖g_u‖² of the weight for units of several examples, and the per-unit gradients if instantiated
        and `keep`. Where the unit sizes are in host memory (`Units.host_sizes`), the units' rows side by
        side (`_padded_rows`), or the layer's own kernel once per unit; else with shapes that do not depend on
        the unit sizes: one Gram over all rows, masked to pairs in the same unit, where cheaper, or the
        per-example gradients summed into their units."""
        p, o, rows = self.per_example_size
        if (sizes := units.host_sizes()) is not None:
            width = max(sizes, default=0)
            if self.kernel_unit_grads is not None and not _gram_cheaper(p, o, rows * width):
                grads = self.kernel_unit_grads(units, sizes)
                return _sq_norm(grads), grads if keep else None
            parts = [self._weight_sq_norms(acts, outs) for acts, outs in self._padded_rows(units, sizes)]
            sq_norms = torch.cat([norms for norms, _ in parts])
            if keep and parts and all(m is not None for _, m in parts):
                return sq_norms, torch.cat([m for _, m in parts])
            return sq_norms, None
        if _gram_cheaper(p, o, rows, self.num_examples):
            acts, outs = self.rows(slice(0, self.num_examples))
            a, d = acts.transpose(1, 2).reshape(-1, p), outs.transpose(1, 2).reshape(-1, o)
            member = units.membership(a.dtype)[:, :, None].expand(-1, -1, rows).flatten(1)  # [U, B·R] by row
            step = max(1, chunk_floats(a.device) // (2 * len(a)))
            parts = [
                ((a[i : i + step] @ a.T) * (d[i : i + step] @ d.T) @ member.T * member.T[i : i + step]).sum(0)
                for i in range(0, len(a), step)
            ]
            return parts[0] if len(parts) == 1 else torch.stack(parts).sum(0), None
        grads = self.weight.new_zeros(units.count, *self.weight.shape)
        for examples in self._chunks(rows, self.weight.numel()):
            grads.index_add_(0, units.index[examples], self._instantiate(*self.rows(examples)))
        return _sq_norm(grads), grads if keep else None

    def _padded_rows(self, units: Units, sizes: list[int]) -> Iterator[tuple[Tensor, Tensor]]:
        """Chunks of per-unit rows, [u, P, R·m] and [u, O, R·m] with m the largest of the unit `sizes` (padding
        rows have zero output gradient)."""
        members, mask = units.padded()
        width = members.shape[1]
        step = self._chunk(self.per_example_size[2] * width)
        for i in range(0, units.count, step):
            acts, outs = self.rows(members[i : i + step].flatten())
            if min(sizes[i : i + step]) < width:
                outs = outs * mask[i : i + step].reshape(-1, 1, 1).to(outs.dtype)
            yield tuple(t.reshape(-1, width, *t.shape[1:]).transpose(1, 2).flatten(2) for t in (acts, outs))

    def unit_norms(self, units: Units) -> Tensor:
        """‖g_u‖² over the layer's trainable parameters for every unit u, shape [U]."""
        return self.unit_norms_and_grads(units, keep_floats=0)[0]

    def unit_norms_and_grads(self, units: Units, keep_floats: int) -> tuple[Tensor, Grads | None]:
        """‖g_u‖² for every unit u, and the per-unit gradients `{param: [U, *param.shape]}` where computing
        the norms instantiated them and they hold at most `keep_floats` numbers (else None)."""
        keep = self.weight is None or units.count * self.weight.numel() <= keep_floats
        grads: Grads | None = {}
        if self.weight is None:
            sq_norms = None
        else:
            sq_norms, matrices = (
                self._per_example_weight(keep) if units.is_per_example else self._grouped_weight(units, keep)
            )
            grads = None if matrices is None else {self.weight: matrices}
        if self.bias is not None:
            bias_grads = self.bias_grads if units.is_per_example else units.sum_by_unit(self.bias_grads)
            bias_sq_norms = _sq_norm(bias_grads)
            sq_norms = bias_sq_norms if sq_norms is None else sq_norms + bias_sq_norms
            if grads is not None:
                grads[self.bias] = bias_grads
        return sq_norms, grads

    def per_example(self) -> Grads:
        """Instantiated per-example gradients `{param: [B, *param.shape]}`."""
        out: Grads = {}
        if self.weight is not None:
            out[self.weight] = self._instantiate(*self.rows(slice(0, self.num_examples)))
        if self.bias is not None:
            out[self.bias] = self.bias_grads
        return out


@dataclass
class Instantiated:
    """Per-example gradients held explicitly, `{param: [B, *param.shape]}`."""

    grads: Grads

    def unit_norms(self, units: Units) -> Tensor:
        """‖g_u‖² over the layer's trainable parameters for every unit u, shape [U]."""
        return self.unit_norms_and_grads(units, keep_floats=0)[0]

    def unit_norms_and_grads(self, units: Units, keep_floats: int) -> tuple[Tensor, Grads | None]:
        """‖g_u‖² for every unit u, and the per-unit gradients where they hold at most `keep_floats` numbers."""
        per_unit = self.grads if units.is_per_example else {p: units.sum_by_unit(g) for p, g in self.grads.items()}
        sq_norms = torch.stack([_sq_norm(g) for g in per_unit.values()]).sum(0)
        return sq_norms, per_unit if sum(g.numel() for g in per_unit.values()) <= keep_floats else None


def _rows_per_example(t: Tensor, num_examples: int, what: str) -> int:
    """k for a leading dimension k·B (example-major); raises if it is not a multiple of B."""
    if num_examples == 0 or t.shape[0] % num_examples:
        raise ValueError(
            f"{what}: leading dimension {t.shape[0]} is not a multiple of the number of "
            f"examples {num_examples} (examples must come first, example-major)"
        )
    return t.shape[0] // num_examples


def _select(t: Tensor, examples: RowSelector, k: int) -> Tensor:
    """The leading-dimension entries of the selected examples (k entries per example)."""
    if isinstance(examples, slice):
        return t[examples.start * k : examples.stop * k]
    return t[(examples[:, None] * k + torch.arange(k, device=examples.device)).flatten()]


def _examples_first(t: Tensor, k: int) -> Tensor:
    """[n·k, F, L] (example-major) as [n, F, k·L]."""
    return t if k == 1 else t.reshape(-1, k, *t.shape[1:]).transpose(1, 2).flatten(2)


def _unfold(t: Tensor, module: nn.Conv2d | nn.ConvTranspose2d) -> Tensor:
    """Patches [N, C·kh·kw, positions] of `t` for the module's kernel, stride, padding and dilation.

    Computed as a convolution of every channel with the kh·kw one-hot kernels (exact, and several
    times faster on CPU than im2col or a strided-view copy); a kernel covering the whole unpadded
    input is a plain reshape.
    """
    kh, kw = module.kernel_size
    if tuple(t.shape[2:]) == (kh, kw) and module.padding in ((0, 0), "valid") and tuple(module.dilation) == (1, 1):
        return t.flatten(1)[..., None]
    one_hot = torch.eye(kh * kw, dtype=t.dtype, device=t.device).reshape(kh * kw, 1, kh, kw)
    patches = F.conv2d(
        t.reshape(-1, 1, *t.shape[2:]), one_hot, stride=module.stride, padding=module.padding, dilation=module.dilation
    )
    return patches.reshape(t.shape[0], -1, patches.shape[2] * patches.shape[3])


def _conv_unit_grads(
    module: nn.Conv2d | nn.ConvTranspose2d, x: Tensor, grad: Tensor, k: int, units: Units, sizes: list[int]
) -> Tensor:
    """Weight gradients [U, *weight.shape] of units whose `sizes` (examples per unit) are known on the host:
    one call of the convolution's own weight-gradient kernel per unit on the unit's rows (gathered a unit at
    a time, so no batch-sized temporary is allocated). A transposed convolution's weight gradient is that of
    the plain convolution mapping its output gradient to its input, so both take the same kernel."""
    x, grad = x.detach(), grad.detach()
    if isinstance(module, nn.ConvTranspose2d):
        x, grad = grad, x
    weight = module.weight.detach()
    padding = (0, 0) if module.padding == "valid" else module.padding
    order = torch.argsort(units.index, stable=True)
    rows = (order[:, None] * k + torch.arange(k, device=order.device)).flatten()

    def unit_grad(unit_rows: Tensor) -> Tensor:
        if len(unit_rows) == 0:
            return torch.zeros_like(weight)
        return torch.ops.aten.convolution_backward(
            grad.index_select(0, unit_rows),
            x.index_select(0, unit_rows),
            weight,
            None,
            module.stride,
            padding,
            module.dilation,
            False,
            (0, 0),
            module.groups,
            (False, True, False),
        )[1]

    return torch.stack([unit_grad(r) for r in rows.split([size * k for size in sizes])])


def _phase_maps(t: Tensor, module: nn.Conv2d | nn.ConvTranspose2d, positions: tuple[int, int], k: int) -> Tensor:
    """The stride phases of the padded `t` ([n·k, C, H, W], k rows per example) that `_phase_gram` takes:
    [n, stride_h·stride_w·C, k·hp·wp] (hp, wp: output positions + kernel/stride − 1)."""
    (kh, kw), (sh, sw), (ph, pw) = module.kernel_size, module.stride, module.padding
    hp, wp = positions[0] + kh // sh - 1, positions[1] + kw // sw - 1
    rows, channels, h, w = t.shape
    padded = F.pad(t, (pw, sw * wp - w - pw, ph, sh * hp - h - ph))  # negative: crop what no patch reads
    phases = padded.reshape(rows // k, k, channels, hp, sh, wp, sw).permute(0, 4, 6, 2, 1, 3, 5)
    return phases.reshape(rows // k, sh * sw * channels, k * hp * wp)


def _phase_gram(phases: Tensor, module: nn.Conv2d | nn.ConvTranspose2d, positions: tuple[int, int], k: int) -> Tensor:
    """Gram matrices [n, R, R] of the patches `_unfold(t, module)` per example (R = k·positions) from the phase
    maps of t (`_phase_maps`), computed without unfolding.

    With kernel = m·stride in each dimension, tap s·a + p of output position o reads phase p of the padded
    input at o + a, so the patch Gram is G(o, o') = Σ_{a,b} M(o + (a, b), o' + (a, b)) with M the Gram of
    the phase maps' (o + m − 1)² positions over (phase, channel): every input pixel enters M once instead
    of m² times, ~m² fewer multiply-adds than the Gram of the unfolded patches.
    """
    (ho, wo), (mh, mw) = (
        positions,
        (module.kernel_size[0] // module.stride[0], module.kernel_size[1] // module.stride[1]),
    )
    hp, wp = ho + mh - 1, wo + mw - 1
    gram = torch.bmm(phases.transpose(1, 2), phases).reshape(-1, k, hp, wp, k, hp, wp)
    rows_shifted = _total(gram[:, :, a : a + ho, :, :, a : a + ho] for a in range(mh))
    total = _total(rows_shifted[..., b : b + wo, :, :, b : b + wo] for b in range(mw))
    return total.reshape(len(gram), k * ho * wo, k * ho * wo)


def _phase_gram_applies(module: nn.Conv2d | nn.ConvTranspose2d, t: Tensor, positions: tuple[int, int]) -> bool:
    """Whether `_phase_gram` computes the patch Grams of `t` for `positions`, with fewer multiply-adds."""
    if tuple(module.dilation) != (1, 1) or isinstance(module.padding, str):
        return False
    (kh, kw), (sh, sw), (ph, pw) = module.kernel_size, module.stride, module.padding
    if kh % sh or kw % sw or (kh // sh, kw // sw) == (1, 1):
        return False
    unfolded = ((t.shape[2] + 2 * ph - kh) // sh + 1, (t.shape[3] + 2 * pw - kw) // sw + 1)
    phase_positions = (positions[0] + kh // sh - 1) * (positions[1] + kw // sw - 1)
    patch_positions = positions[0] * positions[1]
    return unfolded == tuple(positions) and phase_positions**2 * sh * sw < patch_positions**2 * kh * kw


def _phase_sq_norms(
    module: nn.Conv2d | nn.ConvTranspose2d, x: Tensor, grad: Tensor, k: int, num_examples: int
) -> Callable[[], Tensor] | None:
    """Per-example ‖weight gradient‖² = ⟨patch Gram, Gram of the other side's rows⟩ with the patch Gram
    from `_phase_gram`, a chunk of examples at a time; None where `_phase_gram` does not apply."""
    transposed = isinstance(module, nn.ConvTranspose2d)
    unfolded, other = (grad, x) if transposed else (x, grad)
    positions = tuple(other.shape[2:])
    if not _phase_gram_applies(module, unfolded, positions):
        return None
    (kh, kw), (sh, sw) = module.kernel_size, module.stride
    phase_positions = k * (positions[0] + kh // sh - 1) * (positions[1] + kw // sw - 1)
    rows = k * positions[0] * positions[1]
    per_example = (
        sh * sw * unfolded.shape[1] * phase_positions + 2 * phase_positions**2 + 3 * rows**2 + other.shape[1] * rows
    )
    step = max(1, chunk_floats(x.device) // per_example)

    def sq_norms() -> Tensor:
        phases = _phase_maps(unfolded.detach(), module, positions, k)
        other_rows = _examples_first(other.detach().flatten(2), k)
        parts = []
        for i in range(0, num_examples, step):
            patch_gram = _phase_gram(phases[i : i + step], module, positions, k)
            rows = other_rows[i : i + step]
            parts.append((patch_gram * torch.bmm(rows.transpose(1, 2), rows)).sum((1, 2)))
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    return sq_norms


def _rows_form(module: nn.Module, x: Tensor, grad: Tensor, num_examples: int) -> RowsForm:
    name = type(module).__name__
    k = _rows_per_example(x, num_examples, name)
    weight = module.weight if module.weight.requires_grad else None
    bias = module.bias if module.bias is not None and module.bias.requires_grad else None
    if isinstance(module, nn.Linear):
        acts = x.reshape(x.shape[0], -1, x.shape[-1]).transpose(1, 2)
        grads = grad.reshape(grad.shape[0], -1, grad.shape[-1]).transpose(1, 2)

        def rows(examples: RowSelector) -> tuple[Tensor, Tensor]:
            return _examples_first(_select(acts, examples, k), k), _examples_first(_select(grads, examples, k), k)
    elif isinstance(module, nn.ConvTranspose2d):

        def rows(examples: RowSelector) -> tuple[Tensor, Tensor]:
            patches = _unfold(_select(grad, examples, k), module)
            if patches.shape[-1] != x.shape[2] * x.shape[3]:
                raise ValueError(f"{module}: unsupported output_padding/output_size for per-example gradients")
            return _examples_first(_select(x, examples, k).flatten(2), k), _examples_first(patches, k)
    else:

        def rows(examples: RowSelector) -> tuple[Tensor, Tensor]:
            patches = _unfold(_select(x, examples, k), module)
            return _examples_first(patches, k), _examples_first(_select(grad, examples, k).flatten(2), k)

    if isinstance(module, nn.Linear):
        size = (x.shape[-1], grad.shape[-1], k * acts.shape[2])
    elif isinstance(module, nn.ConvTranspose2d):
        size = (x.shape[1], module.weight.numel() // x.shape[1], k * x[0, 0].numel())
    else:
        size = (module.weight.numel() // grad.shape[1], grad.shape[1], k * grad[0, 0].numel())
    bias_grads = None
    if bias is not None:
        per_row = (
            grad.reshape(grad.shape[0], -1, grad.shape[-1]).sum(1)
            if isinstance(module, nn.Linear)
            else grad.flatten(2).sum(2)
        )
        bias_grads = per_row.reshape(num_examples, k, -1).sum(1)
    kernel_unit_grads, phase_sq_norms = None, None
    if weight is not None and not isinstance(module, nn.Linear) and module.padding != "same":

        def kernel_unit_grads(units: Units, sizes: list[int]) -> Tensor:
            return _conv_unit_grads(module, x, grad, k, units, sizes)

        phase_sq_norms = _phase_sq_norms(module, x, grad, k, num_examples)
    return RowsForm(
        rows,
        num_examples,
        size,
        bias_grads,
        weight,
        bias,
        isinstance(module, nn.ConvTranspose2d),
        kernel_unit_grads,
        phase_sq_norms,
    )


def _group_norm_grads(module: nn.GroupNorm, inputs: list[Tensor], grad: Tensor) -> Grads:
    """Per-row GroupNorm gradients, as opacus' grad sampler computes them (normalised input times the output
    gradient, summed per channel) but a cache-sized chunk of rows at a time: no batch-sized temporaries."""
    x, grad = inputs[0].detach(), grad.flatten(2)
    out: Grads = {}
    if module.weight is not None and module.weight.requires_grad:
        step = max(1, chunk_floats(x.device) // x[0].numel())
        out[module.weight] = torch.cat(
            [
                torch.linalg.vecdot(
                    F.group_norm(x[i : i + step], module.num_groups, eps=module.eps).flatten(2), grad[i : i + step]
                )
                for i in range(0, len(x), step)
            ]
        )
    if module.bias is not None and module.bias.requires_grad:
        out[module.bias] = grad.sum(2)
    return out


GRAD_SAMPLERS: dict[type[nn.Module], Callable[[nn.Module, list[Tensor], Tensor], Grads]] = {
    nn.GroupNorm: _group_norm_grads
}  # own rules, before opacus' registry


def _instantiated(module: nn.Module, inputs: tuple[Tensor, ...], grad: Tensor, num_examples: int) -> Grads:
    if num_examples == 0 or grad.shape[0] % num_examples:
        raise ValueError(
            f"{type(module).__name__}: leading dimension {grad.shape[0]} is not a multiple of "
            f"the number of examples {num_examples} (examples must come first, example-major)"
        )
    rows = grad.shape[0] // num_examples
    sampler = GRAD_SAMPLERS.get(type(module)) or GradSampleModule.GRAD_SAMPLERS.get(type(module))
    if sampler is not None:
        per_row = sampler(module, list(inputs), grad)
    else:
        if not hasattr(module, "ft_compute_sample_grad"):
            prepare_layer(module)
        per_row = ft_compute_per_sample_gradient(module, list(inputs), grad)
    return {p: g.reshape(num_examples, rows, *p.shape).sum(1) for p, g in per_row.items() if p.requires_grad}


def per_example_view(
    module: nn.Module, calls: Sequence[tuple[tuple[Tensor, ...], Tensor]], num_examples: int
) -> RowsForm | Instantiated:
    """Per-example gradient representation of `module` over one or more calls `(inputs, output_grad)`.

    Several calls of one module in a forward pass add their contributions (rows are concatenated).
    """
    if _rows_supported(module):
        forms = [_rows_form(module, inputs[0], grad, num_examples) for inputs, grad in calls]
        if len(forms) == 1:
            return forms[0]

        def rows(examples: RowSelector) -> tuple[Tensor, Tensor]:
            parts = [f.rows(examples) for f in forms]
            return torch.cat([a for a, _ in parts], 2), torch.cat([d for _, d in parts], 2)

        p, o, _ = forms[0].per_example_size
        first = forms[0]
        return RowsForm(
            rows,
            num_examples,
            (p, o, sum(f.per_example_size[2] for f in forms)),
            None if first.bias is None else _total(f.bias_grads for f in forms),
            first.weight,
            first.bias,
            first.transposed,
        )
    parts = [_instantiated(module, inputs, grad, num_examples) for inputs, grad in calls]
    return Instantiated({p: _total(part[p] for part in parts) for p in parts[0]})


def dense_conv_grads(module: nn.Module, x: Tensor, grad: Tensor) -> Grads | None:
    """Gradient of a convolution that is a dense layer in disguise, by one matrix product; else None.

    Covers a Conv2d whose kernel spans its whole unpadded input and a ConvTranspose2d on a 1×1 input
    (output = kernel), e.g. the conv VAE's heads and first decoder layer, for which the convolution's
    own weight-gradient kernel is several times slower than the equivalent matrix product.
    """
    if (
        type(module) not in (nn.Conv2d, nn.ConvTranspose2d)
        or module.groups != 1
        or x.dim() != 4
        or module.padding not in ((0, 0), "valid")
        or tuple(module.dilation) != (1, 1)
    ):
        return None
    if isinstance(module, nn.ConvTranspose2d):  # weight [C_in, C_out, kh, kw] = xᵀ·grad
        if tuple(x.shape[2:]) != (1, 1) or tuple(grad.shape[2:]) != tuple(module.kernel_size):
            return None
        left, right = x.detach().flatten(1), grad.flatten(1)
    else:  # weight [C_out, C_in, kh, kw] = gradᵀ·x
        if tuple(x.shape[2:]) != tuple(module.kernel_size):
            return None
        left, right = grad.flatten(1), x.detach().flatten(1)
    out: Grads = {}
    if module.weight.requires_grad:
        out[module.weight] = (left.T @ right).reshape(module.weight.shape)
    if module.bias is not None and module.bias.requires_grad:
        out[module.bias] = grad.sum((0, 2, 3))
    return out


def _call_weight_grads(module: nn.Module, x: Tensor, grad: Tensor) -> Grads | None:
    """One call's parameter gradients of a Linear or convolution (see `weight_grads`); None if unsupported."""
    if (dense := dense_conv_grads(module, x, grad)) is not None:
        return dense
    weight = module.weight if module.weight.requires_grad else None
    bias = module.bias if module.bias is not None and module.bias.requires_grad else None
    out: Grads = {}
    if isinstance(module, nn.Linear):
        rows = grad.reshape(-1, grad.shape[-1])
        if weight is not None:
            out[weight] = rows.T @ x.reshape(-1, x.shape[-1])
        if bias is not None:
            out[bias] = rows.sum(0)
        return out
    if isinstance(module.padding, str) and module.padding != "valid":
        return None
    padding = (0, 0) if module.padding == "valid" else module.padding
    transposed = isinstance(module, nn.ConvTranspose2d)
    output_padding = (0, 0)
    if transposed:  # as realised (a call may pass output_size)
        output_padding = tuple(
            out_size - ((in_size - 1) * s - 2 * p + d * (k - 1) + 1)
            for out_size, in_size, s, p, d, k in zip(
                grad.shape[2:], x.shape[2:], module.stride, padding, module.dilation, module.kernel_size
            )
        )
    _, weight_grad, bias_grad = torch.ops.aten.convolution_backward(
        grad,
        x,
        module.weight.detach(),
        None if bias is None else [bias.shape[0]],
        module.stride,
        padding,
        module.dilation,
        transposed,
        output_padding,
        module.groups,
        (False, weight is not None, bias is not None),
    )
    if weight is not None:
        out[weight] = weight_grad
    if bias is not None:
        out[bias] = bias_grad
    return out


def weight_grads(module: nn.Module, calls: Sequence[tuple[tuple[Tensor, ...], Tensor]]) -> Grads | None:
    """Σ over calls `(inputs, output_grad)` of the layer's parameter gradients through its own operation only,
    by its formula (Linear: one matrix product; Conv2d, ConvTranspose2d: their weight-gradient kernel, or one
    matrix product for a dense layer in disguise); None for other layers."""
    if (
        type(module) not in (nn.Linear, nn.Conv2d, nn.ConvTranspose2d)
        or not _rows_supported(module)
        or any(len(inputs) != 1 for inputs, _ in calls)
    ):  # a subclass may compute something else: autograd
        return None
    total: Grads = {}
    for (x,), grad in calls:
        part = _call_weight_grads(module, x.detach(), grad)
        if part is None:
            return None
        for p, g in part.items():
            total[p] = total[p].add_(g) if p in total else g
    return total


# layers whose output is linear in their parameters: output(x; direction) is the derivative along it
LINEAR_IN_PARAMETERS = (
    nn.Linear,
    nn.Conv1d,
    nn.Conv2d,
    nn.Conv3d,
    nn.ConvTranspose1d,
    nn.ConvTranspose2d,
    nn.ConvTranspose3d,
    nn.GroupNorm,
    nn.LayerNorm,
    nn.Embedding,
)


def per_example_dots(
    module: nn.Module, calls: Sequence[tuple[tuple[Tensor, ...], Tensor]], num_examples: int, direction: Grads
) -> Tensor:
    """⟨g_i, direction⟩ for every example i, shape [B]: the output gradient dotted with the derivative of
    the layer's output along `direction` (one forward pass of this layer alone with the direction as
    its parameters, or a forward-mode pass for layers not linear in their parameters)."""
    own = dict(module.named_parameters(recurse=False))
    linear = isinstance(module, LINEAR_IN_PARAMETERS)
    tangents = {name: direction[p] if p in direction else torch.zeros_like(p) for name, p in own.items()}
    total = 0
    for inputs, grad in calls:
        inputs = tuple(i.detach() for i in inputs)
        with torch.no_grad():
            if linear:
                change = torch.func.functional_call(module, tangents, inputs)
            else:
                primals = {name: p.detach() for name, p in own.items()}
                _, change = torch.func.jvp(
                    lambda params: torch.func.functional_call(module, params, inputs), (primals,), (tangents,)
                )
        _rows_per_example(grad, num_examples, type(module).__name__)
        total = total + (grad * change).reshape(num_examples, -1).sum(1)
    return total


def conv_transpose2d_grad_sample(layer: nn.ConvTranspose2d, x: Tensor, grad_output: Tensor) -> Grads:
    """Per-example gradients of a ConvTranspose2d (groups = 1) from its input and output gradient."""
    if not _rows_supported(layer):
        raise ValueError(f"layer must be a ConvTranspose2d with groups=1 and zero padding, got {layer}")
    return _rows_form(layer, x, grad_output, x.shape[0]).per_example()
