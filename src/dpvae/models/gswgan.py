"""GS-WGAN's networks (Chen et al. 2020; DingfanChen/GS-WGAN `source/models.py`), K copies at once.

    generator      [z (Bernoulli(0.5), z_dim) ⊕ onehot(y)] -> SN-Linear(-> 4·md·4·4) -> ReLU -> pixel-norm
                   -> 3 × GBlock(4md -> 4md, ×2 nearest upsample)  [4md, 32, 32]
                   -> SN-Conv(4md -> 1, k3, p0) -> sigmoid -> crop to 28×28
       GBlock(x)   h = conv2(act(pn(conv1(up(pn(x)))))) + conv_sc(up(x)), SN convs k3 p1 and k1 p0
    discriminator  SN-Conv(1 -> md -> 2md -> 4md, k5, s2, p2) with ReLU: 28 -> 14 -> 7 -> 4; h [4md·16]
                   out = SN-Linear(h -> 1) + Σ(SN-Embedding(y) ⊙ h)  (projection discriminator)
SN = spectral normalisation W / σ(W) with one power iteration per training forward (u state per model).
Parameters are stacked [K, *shape] (`dpvae.models.stacked`); activations are [K, B, ...]; convolutions run
as grouped convolutions. `K = 1` gives one network (GS-WGAN's main phase trains one discriminator at a time).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from dpvae.models.stacked import Stacked, Streams, from_groups, to_groups

IMAGE = (1, 28, 28)


def _conv_params(k: int, c_in: int, c_out: int, size: int) -> tuple[Tensor, Tensor]:
    """K independent default-initialised (PyTorch's Conv2d init) weights [K, out, in, s, s] and biases [K, out]."""
    layers = [nn.Conv2d(c_in, c_out, size) for _ in range(k)]
    return torch.stack([m.weight.detach() for m in layers]), torch.stack([m.bias.detach() for m in layers])


def _linear_params(k: int, c_in: int, c_out: int) -> tuple[Tensor, Tensor]:
    layers = [nn.Linear(c_in, c_out) for _ in range(k)]
    return torch.stack([m.weight.detach() for m in layers]), torch.stack([m.bias.detach() for m in layers])


def _sn_names(params: Stacked) -> list[str]:
    return [n[: -len(".weight")] for n in params if n.endswith(".weight")]


def init_generator(k: int, z_dim: int, model_dim: int, classes: int = 10) -> tuple[Stacked, Stacked]:
    """(parameters, spectral-norm u vectors) of K generators."""
    c = 4 * model_dim
    params: Stacked = {}
    params["fc.weight"], params["fc.bias"] = _linear_params(k, z_dim + classes, c * 16)
    for block in range(3):
        for name, size in (("conv1", 3), ("conv2", 3), ("conv_sc", 1)):
            params[f"block{block}.{name}.weight"], params[f"block{block}.{name}.bias"] = _conv_params(k, c, c, size)
    params["out.weight"], params["out.bias"] = _conv_params(k, c, IMAGE[0], 3)
    return _with_u(params)


def init_discriminator(k: int, model_dim: int, classes: int = 10) -> tuple[Stacked, Stacked]:
    """(parameters, spectral-norm u vectors) of K discriminators."""
    params: Stacked = {}
    channels = [IMAGE[0], model_dim, 2 * model_dim, 4 * model_dim]
    for i, (c_in, c_out) in enumerate(zip(channels[:-1], channels[1:])):
        params[f"conv{i}.weight"], params[f"conv{i}.bias"] = _conv_params(k, c_in, c_out, 5)
    flat = 4 * model_dim * 16
    params["linear.weight"], params["linear.bias"] = _linear_params(k, flat, 1)
    params["embed.weight"] = torch.stack([nn.Embedding(classes, flat).weight.detach() for _ in range(k)])
    return _with_u(params)


def _with_u(params: Stacked) -> tuple[Stacked, Stacked]:
    u = {}
    for name in _sn_names(params):
        w = params[f"{name}.weight"]
        u[name] = F.normalize(torch.randn(w.shape[0], w.shape[1]), dim=1)
    return {n: t.requires_grad_(True) for n, t in params.items()}, u


def spectral(params: Stacked, u: Stacked, name: str, update: bool) -> Tensor:
    """W / σ(W) for K weights [K, out, ...]; one power iteration on u [K, out] first when `update`."""
    w = params[f"{name}.weight"]
    matrix = w.reshape(w.shape[0], w.shape[1], -1)
    with torch.no_grad():
        vec = u[name]
        v = F.normalize(torch.bmm(matrix.transpose(1, 2), vec[:, :, None])[..., 0], dim=1, eps=1e-10)
        new_u = F.normalize(torch.bmm(matrix, v[:, :, None])[..., 0], dim=1, eps=1e-10)
        if update:
            u[name] = new_u
        else:
            new_u = vec
            v = F.normalize(torch.bmm(matrix.transpose(1, 2), new_u[:, :, None])[..., 0], dim=1, eps=1e-10)
    sigma = (new_u[:, :, None] * torch.bmm(matrix, v[:, :, None])).sum((1, 2))  # [K]
    return w / sigma.view(-1, *([1] * (w.dim() - 1)))


def _conv(params: Stacked, u: Stacked, name: str, x: Tensor, update: bool, **kw) -> Tensor:
    """SN-convolution of K models on [K, B, C, H, W]."""
    k = x.shape[0]
    w = spectral(params, u, name, update)
    out = F.conv2d(to_groups(x), w.reshape(-1, *w.shape[2:]), params[f"{name}.bias"].reshape(-1), groups=k, **kw)
    return from_groups(out, k)


def _pixel_norm(x: Tensor) -> Tensor:
    return x * torch.rsqrt(x.square().mean(2, keepdim=True) + 1e-10)


def _upsample(x: Tensor) -> Tensor:
    k = x.shape[0]
    return F.interpolate(x.flatten(0, 1), scale_factor=2).reshape(
        k, x.shape[1], x.shape[2], *[2 * s for s in x.shape[3:]]
    )


def generator(params: Stacked, u: Stacked, z: Tensor, y: Tensor, update: bool = True) -> Tensor:
    """K generators: z [K, B, z_dim], y [K, B] -> images [K, B, 1, 28, 28] in (0, 1)."""
    k, b = y.shape
    classes = params["fc.weight"].shape[2] - z.shape[2]
    w = spectral(params, u, "fc", update)
    h = torch.baddbmm(
        params["fc.bias"].unsqueeze(1), torch.cat([z, F.one_hot(y, classes).float()], 2), w.transpose(1, 2)
    )
    c = params["block0.conv1.weight"].shape[1]
    h = _pixel_norm(h.reshape(k, b, c, 4, 4).relu())
    for block in range(3):
        name = f"block{block}"
        x_up = _upsample(h)
        r = _conv(params, u, f"{name}.conv1", _upsample(_pixel_norm(h)), update, padding=1)
        r = _conv(params, u, f"{name}.conv2", _pixel_norm(r).relu(), update, padding=1)
        h = r + _conv(params, u, f"{name}.conv_sc", x_up, update)
    out = torch.sigmoid(_conv(params, u, "out", h, update))  # [K, B, 1, 30, 30]
    return out[..., :-2, :-2]


def discriminator(params: Stacked, u: Stacked, x: Tensor, y: Tensor, update: bool = True) -> Tensor:
    """K projection discriminators: x [K, B, 1, 28, 28], y [K, B] -> scores [K, B]."""
    h = x
    for i in range(3):
        h = _conv(params, u, f"conv{i}", h, update, stride=2, padding=2).relu()
    h = h.flatten(2)  # [K, B, 4md·16]
    w = spectral(params, u, "linear", update)
    out = torch.baddbmm(params["linear.bias"].unsqueeze(1), h, w.transpose(1, 2))[..., 0]
    embed = spectral(params, u, "embed", update)  # [K, classes, F]
    projection = torch.gather(embed, 1, y[..., None].expand(-1, -1, embed.shape[2]))
    return out + (projection * h).sum(2)


def bernoulli_latent(streams: Streams, shape: tuple[int, ...]) -> Tensor:
    """Bernoulli(0.5) codes [K, *shape], model k's from stream k."""
    return (streams.rand(shape) < 0.5).float()


def gradient_penalty(
    params: Stacked, u: Stacked, real: Tensor, fake: Tensor, y: Tensor, weight: float, streams: Streams
) -> Tensor:
    """WGAN-GP per model [K]: weight · mean_b (‖∇_x D(x̂_b)‖ − 1)², x̂ on the real-fake segment."""
    alpha = streams.rand((real.shape[1], 1, 1, 1))
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = discriminator(params, u, mixed, y, update=False)
    (grad,) = torch.autograd.grad(scores.sum(), mixed, create_graph=True)
    return weight * (grad.flatten(2).norm(dim=2) - 1).square().mean(1)


def param_count(params: Stacked) -> int:
    return sum(math.prod(t.shape[1:]) for t in params.values())
