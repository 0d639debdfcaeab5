"""Many small models trained at once: stacked parameters, grouped layers, per-model clipping and Adam.

DP²-VAE's stage 1 (K encoders, each with its own decoder) and GS-WGAN's warm start (K discriminators, each
with its own generator) train K independent models on K disjoint subsets. Instead of a Python loop over
models, the parameters of K' models are stacked along a new first axis ([K', *shape]) and one forward pass
runs all of them: convolutions as grouped convolutions (groups = K'), linear layers as batched matrix
products, GroupNorm as one GroupNorm with K'·g groups. Activations are laid out [B, K'·C, H, W] (model-major
channels) or [B, K', F]. The models are independent, so the gradient of the summed loss is every model's
own gradient; Adam is elementwise, so `StackedAdam` is exactly K' independent `torch.optim.Adam`s (tests
check both against single models). `Streams` gives each model its own random stream, so that what a model
draws does not depend on which models share its stack.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import Tensor, nn
from torch.nn import functional as F

Stacked = dict[str, Tensor]  # parameter name -> [K, *shape]


def stack(models: Sequence[nn.Module]) -> Stacked:
    """The parameters of `models` (same architecture), each stacked to [K, *shape], as leaf tensors."""
    names = [n for n, _ in models[0].named_parameters()]
    return {
        n: torch.stack([dict(m.named_parameters())[n].detach() for m in models]).requires_grad_(True) for n in names
    }


def unstack(params: Stacked, index: int, prefix: str = "") -> dict[str, Tensor]:
    """Model `index`'s parameters (names starting with `prefix`, which is removed) as a state dict."""
    return {k[len(prefix) :]: v[index].detach().clone() for k, v in params.items() if k.startswith(prefix)}


def to_groups(x: Tensor) -> Tensor:
    """[K, B, C, H, W] -> [B, K·C, H, W] (the grouped layout)."""
    k, b = x.shape[:2]
    return x.transpose(0, 1).reshape(b, k * x.shape[2], *x.shape[3:])


def from_groups(x: Tensor, k: int) -> Tensor:
    """[B, K·C, ...] -> [K, B, C, ...]."""
    return x.reshape(x.shape[0], k, -1, *x.shape[2:]).transpose(0, 1)


def linear(params: Stacked, name: str, x: Tensor) -> Tensor:
    """K Linear layers: x [K, B, in] -> [K, B, out]."""
    out = torch.baddbmm(params[f"{name}.bias"].unsqueeze(1), x, params[f"{name}.weight"].transpose(1, 2))
    return out


def grouped(module: nn.Module, params: Stacked, name: str, x: Tensor, k: int) -> Tensor:
    """One layer of K models on the grouped layout [B, K·C, H, W]; `module` is a template with its settings."""
    w, b = params.get(f"{name}.weight"), params.get(f"{name}.bias")
    flat_b = None if b is None else b.reshape(-1)
    if isinstance(module, nn.Conv2d):
        return F.conv2d(
            x,
            w.reshape(-1, *w.shape[2:]),
            flat_b,
            module.stride,
            module.padding,
            module.dilation,
            groups=k * module.groups,
        )
    if isinstance(module, nn.ConvTranspose2d):
        return F.conv_transpose2d(
            x,
            w.reshape(-1, *w.shape[2:]),
            flat_b,
            module.stride,
            module.padding,
            module.output_padding,
            groups=k * module.groups,
            dilation=module.dilation,
        )
    if isinstance(module, nn.GroupNorm):
        return F.group_norm(x, k * module.num_groups, None if w is None else w.reshape(-1), flat_b, module.eps)
    if isinstance(module, (nn.LeakyReLU, nn.ReLU, nn.Identity, nn.Sigmoid, nn.Tanh)):
        return module(x)
    raise TypeError(f"no grouped form of {type(module).__name__}")


def grouped_sequential(module: nn.Sequential, params: Stacked, name: str, x: Tensor, k: int) -> Tensor:
    for index, layer in enumerate(module):
        x = grouped(layer, params, f"{name}.{index}", x, k)
    return x


def clip_per_model(grads: Stacked, groups: Iterable[Iterable[str]], max_norm: float) -> Tensor:
    """Scale each model's gradient so that its norm over each group of names is at most `max_norm` (in place,
    `torch.nn.utils.clip_grad_norm_`'s rule: factor min(1, C/(‖g‖ + 1e-6))); returns the norms [K, groups]."""
    all_norms = []
    for names in groups:
        names = list(names)
        k = grads[names[0]].shape[0]
        norms = sum(grads[n].reshape(k, -1).square().sum(1) for n in names).sqrt()
        factor = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for n in names:
            grads[n].mul_(factor.view(-1, *([1] * (grads[n].dim() - 1))))
        all_norms.append(norms)
    return torch.stack(all_norms, 1)


class Streams:
    """One random stream per model of a stack: a draw of per-model shape S is [K', *S], row k from stream k.

    A model's numbers are then the same in a stack of any size (one draw per model and per call: K' small
    kernels, negligible beside a training step); with one stream, `rand(S)` is `torch.rand((1, *S))`.
    """

    def __init__(self, generators: Sequence[torch.Generator]) -> None:
        self.generators = tuple(generators)
        self.device = self.generators[0].device

    def rand(self, shape: tuple[int, ...]) -> Tensor:
        return torch.stack([torch.rand(shape, generator=g, device=self.device) for g in self.generators])

    def randint(self, high: int, shape: tuple[int, ...]) -> Tensor:
        return torch.stack([torch.randint(high, shape, generator=g, device=self.device) for g in self.generators])


class StackedAdam:
    """Adam (torch.optim.Adam's update, no weight decay) on stacked parameters, with a step count per model.

    `step(grads, rows)` updates only the models `rows` (default all), so one model of the stack can be
    trained at a time (DP²-VAE's stage 2 updates the drawn subset's encoder only).
    """

    def __init__(
        self, params: Stacked, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
    ) -> None:
        self.params, self.lr, self.betas, self.eps = params, lr, betas, eps
        count = next(iter(params.values())).shape[0]
        self.m = {k: torch.zeros_like(v, requires_grad=False) for k, v in params.items()}
        self.v = {k: torch.zeros_like(v, requires_grad=False) for k, v in params.items()}
        self.t = torch.zeros(count, dtype=torch.float64, device=next(iter(params.values())).device)

    @torch.no_grad()
    def step(self, grads: Stacked, rows: Tensor | None = None) -> None:
        b1, b2 = self.betas
        if rows is None:
            self.t += 1
            t, select = self.t, slice(None)
        else:
            self.t[rows] += 1
            t, select = self.t[rows], rows
        dtype = next(iter(self.params.values())).dtype
        step_size = (self.lr / (1 - b1**t)).to(dtype)
        root_bc2 = torch.sqrt(1 - b2**t).to(dtype)
        for name, p in self.params.items():
            shape = (-1, *([1] * (p.dim() - 1)))
            g = grads[name]
            m = self.m[name][select].mul_(b1).add_(g, alpha=1 - b1)
            v = self.v[name][select].mul_(b2).addcmul_(g, g, value=1 - b2)
            if rows is not None:
                self.m[name][rows], self.v[name][rows] = m, v
            denom = v.sqrt().div_(root_bc2.to(p.device).view(shape)).add_(self.eps)
            update = step_size.to(p.device).view(shape) * m / denom
            if rows is None:
                p.sub_(update)
            else:
                p[rows] -= update

    def state_dict(self) -> dict:
        return {"m": self.m, "v": self.v, "t": self.t}

    def load_state_dict(self, state: dict) -> None:
        self.m, self.v, self.t = state["m"], state["v"], state["t"]
