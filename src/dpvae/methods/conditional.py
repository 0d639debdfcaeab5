"""What the label-conditional image generators share (DP²-VAE, DP-MERF, GS-WGAN): labels, class-balanced
sampling, disjoint subsets, batches."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from dpvae.errors import ConfigError
from dpvae.methods.base import RunContext
from dpvae.params import CompileMode
from dpvae.progress import Progress


def num_classes(ctx: RunContext) -> int:
    """Label count of the prepared data (max label + 1 over both splits)."""
    return int(max(ctx.data.train.y.max(), ctx.data.test.y.max())) + 1


def onehot(y: Tensor, classes: int) -> Tensor:
    return torch.nn.functional.one_hot(y, classes).to(torch.float32)


def balanced_labels(n: int, classes: int) -> np.ndarray:
    """0, 1, ..., classes-1, 0, 1, ...: every prefix is as class-balanced as it can be (FID uses a prefix)."""
    return (np.arange(n) % classes).astype(np.int64)


def disjoint_subsets(ctx: RunContext, count: int, param: str = "subsets") -> np.ndarray:
    """[count, N // count] training-row indices: a seeded shuffle cut into `count` equal disjoint subsets
    (the remainder, fewer than `count` records, is unused, as in GS-WGAN's code)."""
    n = len(ctx.data.train.y)
    size = n // count
    if size < 1:
        raise ConfigError(
            f"config key 'variants.{ctx.spec.variant}.params.{param}': {count} subsets of "
            f"{n} training records leave them empty"
        )
    order = ctx.rng("partition").permutation(n)
    return order[: count * size].reshape(count, size)


def device_of(ctx: RunContext) -> torch.device:
    return torch.device(ctx.device)


def compiled(step: Callable[..., None], mode: CompileMode) -> Callable[..., None]:
    """`step`, or (a `compile` mode) it through a fresh torch.compile with fixed shapes (reduce-overhead: CUDA
    graphs on CUDA); compiled code of an earlier run in the process is dropped first."""
    if mode is False:
        return step
    torch._dynamo.reset()
    return torch.compile(step, mode=mode, dynamic=False)


def batches(n: int, size: int) -> list[slice]:
    return [slice(start, min(n, start + size)) for start in range(0, n, size)]


def whole(value: float) -> int:
    return int(math.ceil(value))


@torch.no_grad()
def sample_labelled(
    ctx: RunContext,
    n: int | None,
    generate: Callable[[Tensor, Tensor], Tensor],
    code_dim: int,
    classes: int,
    shape: tuple[int, ...],
) -> dict[str, np.ndarray]:
    """n records (None: the training-set size) of a label-conditional generator: class-balanced labels, codes
    z ~ N(0, I) from the run's "sample" stream, `generate(z, one-hot labels)` in batches of 1000."""
    device = device_of(ctx)
    n = len(ctx.data.train.y) if n is None else n
    y = balanced_labels(n, classes)
    stream = ctx.torch_generator("sample", str(device))
    out, progress = np.empty((n, *shape), dtype=np.float32), Progress("sampling", n, "records")
    for part in batches(n, 1000):
        labels = torch.as_tensor(y[part], device=device)
        z = torch.randn(len(labels), code_dim, generator=stream, device=device)
        out[part] = generate(z, onehot(labels, classes)).cpu().numpy()
        progress.advance(len(labels))
    return {"x": out, "y": y}
