"""At what precision torch computes: a run's model compute (config key `precision`), its privacy steps, evaluation.

* `fp32` (default): torch's defaults, untouched — today's behaviour (on CUDA, torch lets cuDNN convolutions
  use TF32 by default; plain matrix products do not).
* `tf32`: TF32 matrix products and cuDNN convolutions on CUDA for the whole training (`training`); no
  effect on a CPU.
* `bf16`: a method's forward (loss included) runs under `torch.autocast(<device>, bfloat16)` (`forward`);
  the method casts the losses to fp32 before any backward or engine step.

Privacy-relevant compute stays fp32 at every precision. A DP-SGD engine's step (per-example gradient norms,
clipped sums, noise) and a noisy release run under `private` (IEEE fp32: TF32 off, outside autocast, at
`fp32` too). A
forward that an engine differentiates per example is never autocast (`per_example=True`): the engine records
every layer's inputs and output and forms the per-example norms and the clipped sum from them, so a bf16
forward would make norms and sums bf16 (the engines refuse the mixed dtypes anyway). bf16 therefore speeds up
non-private training and the non-private parts of a method; a DP-SGD forward stays fp32 (tf32 applies to it).
Evaluation runs in IEEE fp32 on every device (`ieee_fp32`), so a metric on CUDA matches the CPU's to
float rounding whatever the run's precision.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "bf16")
DEFAULT = "fp32"


def check(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return precision


@contextmanager
def _tf32(enabled: bool) -> Iterator[None]:
    """TF32 for CUDA matrix products and cuDNN convolutions on or off inside the block (restored after)."""
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def training(precision: str) -> AbstractContextManager[None]:
    """Around a run's whole training: TF32 on CUDA for `tf32`, nothing otherwise."""
    return _tf32(True) if check(precision) == "tf32" else nullcontext()


def forward(precision: str, device: Any, *, per_example: bool = False) -> AbstractContextManager[Any]:
    """Around a model's forward and loss: bf16 autocast for `bf16`, unless a DP-SGD engine differentiates
    this forward per example (`per_example`, see the module docstring); nothing otherwise."""
    import torch

    if check(precision) == "bf16" and not per_example:
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
    return nullcontext()


def private(precision: str) -> AbstractContextManager[None]:
    """Around privacy-relevant compute (an engine step, a noisy release): IEEE fp32 at every precision.

    At `fp32` too: torch lets cuDNN convolutions use TF32 by default, and an engine that forms a per-example
    norm and the clipped sum by different kernels could then clip by a norm that is not its sum's."""
    check(precision)
    return ieee_fp32()


def ieee_fp32() -> AbstractContextManager[None]:
    """Plain IEEE fp32 on CUDA (no TF32 in matrix products or cuDNN convolutions); a CPU computes so anyway."""
    return _tf32(False)
