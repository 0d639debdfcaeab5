"""Per-unit gradient norms of one layer from its recorded inputs and output gradients.

A layer call records its inputs and its output z; the engine supplies the output gradient Δ = ∂loss/∂z.
The leading dimension of the layer's input is `k·B` for B examples, example-major (rows
`i·k .. i·k+k-1` belong to example i, e.g. `z.repeat_interleave(L, 0)` for L Monte-Carlo samples).
Only norms are computed here; the engine forms the clipped sum with one weight-gradient pass per layer.

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
  Rows are produced a chunk of units at a time (`CHUNK_FLOATS`, ~2 MB), so unfolded patches stay in
  cache and large temporaries (whose page faults dominated on this machine) are never allocated.
  Bias gradients are instantiated ([U, O]).
* `Instantiated` (GroupNorm, LayerNorm, Embedding, grouped convolutions, anything else): per-example
  gradients from opacus' per-layer grad samplers (`opacus.grad_sample` registry), or opacus' functorch
  fallback for layers without one.

`per_example_dots` gives ⟨g_i, G⟩ for a fixed direction G without per-example gradients (micro
aggregation's ‖g_i + ∇ψ‖²).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from opacus.grad_sample import GradSampleModule
from opacus.grad_sample.functorch import ft_compute_per_sample_gradient, prepare_layer
from torch import Tensor, nn

from dpvae.privacy.dpsgd.units import Units

Grads = dict[nn.Parameter, Tensor]
GRAM_ADVANTAGE = 100  # see the module docstring's cost model
CHUNK_FLOATS = 1 << 19  # rows are produced in chunks of about 2 MB


def _rows_supported(module: nn.Module) -> bool:
    if isinstance(module, nn.Linear):
        return True
    if type(module) in (nn.Conv2d, nn.ConvTranspose2d):
        return module.groups == 1 and module.padding_mode == "zeros"
    return False


def check_supported(module: nn.Module) -> None:
    """Raise ValueError if per-example gradients of `module` cannot be computed."""
    if _rows_supported(module) or type(module) in GradSampleModule.GRAD_SAMPLERS:
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


def _gram_cheaper(p: int, o: int, rows: int) -> bool:
    """The cost model of the module docstring: Gram form for a unit of `rows` rows, else instantiation."""
    return rows * rows * (p + o) < GRAM_ADVANTAGE * p * o


def _sq_norm(t: Tensor) -> Tensor:
    """Squared l2 norm of each row t[u] over all remaining dimensions, shape [U]."""
    return torch.linalg.vector_norm(t.flatten(1), dim=1).square()


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
    kernel_unit_sq_norms: Callable[[Units], Tensor] | None = None  # weight ‖g_u‖² by the layer's own kernel

    def _instantiate(self, acts: Tensor, outs: Tensor) -> Tensor:
        """Σ_r d_r a_rᵀ per unit from [U, P, R] and [U, O, R], as [U, *weight.shape] (no transposed copy)."""
        if self.transposed:
            matrices = torch.bmm(acts, outs.transpose(1, 2))
        else:
            matrices = torch.bmm(outs, acts.transpose(1, 2))
        return matrices.reshape(len(matrices), *self.weight.shape)

    def _weight_sq_norms(self, acts: Tensor, outs: Tensor) -> Tensor:
        """‖Σ_r d_r a_rᵀ‖² per unit by the cheaper of ghost/Gram and instantiation (module docstring)."""
        p, o, rows = acts.shape[1], outs.shape[1], acts.shape[2]
        if rows == 1:
            return _sq_norm(acts) * _sq_norm(outs)
        if _gram_cheaper(p, o, rows):
            return (torch.bmm(acts.transpose(1, 2), acts) * torch.bmm(outs.transpose(1, 2), outs)).sum((1, 2))
        return _sq_norm(self._instantiate(acts, outs))

    def _by_kernel(self, units: Units) -> bool:
        """Whether units of several examples, to be instantiated, are summed by the layer's own kernel."""
        if self.kernel_unit_sq_norms is None or units.is_per_example or units.count == 0:
            return False
        p, o, rows = self.per_example_size
        return not _gram_cheaper(p, o, rows * -(-self.num_examples // units.count))

    def _chunk(self, rows_per_unit: int) -> int:
        """Units per chunk so that a chunk's rows and products stay cache-sized."""
        p, o, _ = self.per_example_size
        per_unit = (p + o) * rows_per_unit + min(p * o, 2 * rows_per_unit ** 2)
        return max(1, CHUNK_FLOATS // per_unit)

    def _unit_rows(self, units: Units) -> Iterator[tuple[Tensor, Tensor]]:
        """Chunks of per-unit rows, [u, P, R_u] and [u, O, R_u] (padding rows have zero output gradient)."""
        rows = self.per_example_size[2]
        if units.is_per_example:
            step = self._chunk(rows)
            for i in range(0, self.num_examples, step):
                yield self.rows(slice(i, i + step))
            return
        members, mask = units.padded()
        width, padded = members.shape[1], not bool(mask.all())
        step = self._chunk(rows * width)
        for i in range(0, units.count, step):
            acts, outs = self.rows(members[i:i + step].flatten())
            if padded:
                outs = outs * mask[i:i + step].reshape(-1, 1, 1).to(outs.dtype)
            yield tuple(t.reshape(-1, width, *t.shape[1:]).transpose(1, 2).flatten(2) for t in (acts, outs))

    def unit_norms(self, units: Units) -> Tensor:
        """‖g_u‖² over the layer's trainable parameters for every unit u, shape [U]."""
        if self.weight is None:
            sq_norms = self.bias_grads.new_zeros(units.count)
        elif self._by_kernel(units):
            sq_norms = self.kernel_unit_sq_norms(units)
        else:
            sq_norms = torch.cat([self._weight_sq_norms(acts, outs) for acts, outs in self._unit_rows(units)])
        if self.bias is not None:
            sq_norms = sq_norms + _sq_norm(self.bias_grads if units.is_per_example
                                           else units.sum_by_unit(self.bias_grads))
        return sq_norms

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
        per_unit = self.grads.values() if units.is_per_example else map(units.sum_by_unit, self.grads.values())
        return sum(_sq_norm(g) for g in per_unit)


def _rows_per_example(t: Tensor, num_examples: int, what: str) -> int:
    """k for a leading dimension k·B (example-major); raises if it is not a multiple of B."""
    if num_examples == 0 or t.shape[0] % num_examples:
        raise ValueError(f"{what}: leading dimension {t.shape[0]} is not a multiple of the number of "
                         f"examples {num_examples} (examples must come first, example-major)")
    return t.shape[0] // num_examples


def _select(t: Tensor, examples: RowSelector, k: int) -> Tensor:
    """The leading-dimension entries of the selected examples (k entries per example)."""
    if isinstance(examples, slice):
        return t[examples.start * k:examples.stop * k]
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
    if (tuple(t.shape[2:]) == (kh, kw) and module.padding in ((0, 0), "valid")
            and tuple(module.dilation) == (1, 1)):
        return t.flatten(1)[..., None]
    one_hot = torch.eye(kh * kw, dtype=t.dtype, device=t.device).reshape(kh * kw, 1, kh, kw)
    patches = F.conv2d(t.reshape(-1, 1, *t.shape[2:]), one_hot, stride=module.stride, padding=module.padding,
                       dilation=module.dilation)
    return patches.reshape(t.shape[0], -1, patches.shape[2] * patches.shape[3])


def _conv_unit_sq_norms(module: nn.Conv2d | nn.ConvTranspose2d, x: Tensor, grad: Tensor, k: int, units: Units
                        ) -> Tensor:
    """‖weight gradient‖² of every unit, [U]: one call of the convolution's own weight-gradient kernel per
    unit on the unit's rows (gathered a unit at a time, so no batch-sized temporary is allocated). A
    transposed convolution's weight gradient is that of the plain convolution mapping its output
    gradient to its input, so both take the same kernel."""
    x, grad = x.detach(), grad.detach()
    if isinstance(module, nn.ConvTranspose2d):
        x, grad = grad, x
    weight = module.weight.detach()
    padding = (0, 0) if module.padding == "valid" else module.padding
    order = torch.argsort(units.index, stable=True)
    rows = (order[:, None] * k + torch.arange(k, device=order.device)).flatten()
    sizes = (torch.bincount(units.index, minlength=units.count) * k).tolist()
    sq_norms = []
    for unit_rows in rows.split(sizes):
        if len(unit_rows) == 0:
            sq_norms.append(weight.new_zeros(()))
            continue
        unit_grad = torch.ops.aten.convolution_backward(
            grad.index_select(0, unit_rows), x.index_select(0, unit_rows), weight, None, module.stride, padding,
            module.dilation, False, (0, 0), module.groups, (False, True, False))[1]
        sq_norms.append(torch.linalg.vector_norm(unit_grad).square())
    return torch.stack(sq_norms)


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
        per_row = grad.reshape(grad.shape[0], -1, grad.shape[-1]).sum(1) if isinstance(module, nn.Linear) \
            else grad.flatten(2).sum(2)
        bias_grads = per_row.reshape(num_examples, k, -1).sum(1)
    kernel_unit_sq_norms = None
    if weight is not None and not isinstance(module, nn.Linear) and module.padding != "same":
        def kernel_unit_sq_norms(units: Units) -> Tensor:
            return _conv_unit_sq_norms(module, x, grad, k, units)
    return RowsForm(rows, num_examples, size, bias_grads, weight, bias, isinstance(module, nn.ConvTranspose2d),
                    kernel_unit_sq_norms)


def _instantiated(module: nn.Module, inputs: tuple[Tensor, ...], grad: Tensor, num_examples: int) -> Grads:
    if num_examples == 0 or grad.shape[0] % num_examples:
        raise ValueError(f"{type(module).__name__}: leading dimension {grad.shape[0]} is not a multiple of "
                         f"the number of examples {num_examples} (examples must come first, example-major)")
    rows = grad.shape[0] // num_examples
    sampler = GradSampleModule.GRAD_SAMPLERS.get(type(module))
    if sampler is not None:
        per_row = sampler(module, list(inputs), grad)
    else:
        if not hasattr(module, "ft_compute_sample_grad"):
            prepare_layer(module)
        per_row = ft_compute_per_sample_gradient(module, list(inputs), grad)
    return {p: g.reshape(num_examples, rows, *p.shape).sum(1) for p, g in per_row.items() if p.requires_grad}


def per_example_view(module: nn.Module, calls: Sequence[tuple[tuple[Tensor, ...], Tensor]],
                     num_examples: int) -> RowsForm | Instantiated:
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
        return RowsForm(rows, num_examples, (p, o, sum(f.per_example_size[2] for f in forms)),
                        None if first.bias is None else sum(f.bias_grads for f in forms),
                        first.weight, first.bias, first.transposed)
    parts = [_instantiated(module, inputs, grad, num_examples) for inputs, grad in calls]
    return Instantiated({p: sum(part[p] for part in parts) for p in parts[0]})


# layers whose output is linear in their parameters: output(x; direction) is the derivative along it
LINEAR_IN_PARAMETERS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
                        nn.ConvTranspose3d, nn.GroupNorm, nn.LayerNorm, nn.Embedding)


def per_example_dots(module: nn.Module, calls: Sequence[tuple[tuple[Tensor, ...], Tensor]], num_examples: int,
                     direction: Grads) -> Tensor:
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
                _, change = torch.func.jvp(lambda params: torch.func.functional_call(module, params, inputs),
                                           (primals,), (tangents,))
        _rows_per_example(grad, num_examples, type(module).__name__)
        total = total + (grad * change).reshape(num_examples, -1).sum(1)
    return total


def conv_transpose2d_grad_sample(layer: nn.ConvTranspose2d, x: Tensor, grad_output: Tensor) -> Grads:
    """Per-example gradients of a ConvTranspose2d (groups = 1) from its input and output gradient."""
    if not _rows_supported(layer):
        raise ValueError(f"layer must be a ConvTranspose2d with groups=1 and zero padding, got {layer}")
    return _rows_form(layer, x, grad_output, x.shape[0]).per_example()
