"""opacus' own DP-SGD behind the engines' interface: the reference implementation and benchmark baseline."""

from __future__ import annotations

import warnings
from typing import Literal

import torch
from opacus.grad_sample import GradSampleModule, GradSampleModuleFastGradientClipping
from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping
from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping
from torch import Tensor, nn


class OpacusDPSGD:
    """Standard DP-SGD computed by opacus: per-sample gradients from its hooks (`mode="hooks"`) or its
    ghost / fast gradient clipping (`mode="ghost"`). `step(losses)` writes the noisy averaged gradient
    (noise N(0, σ²C²) on the clipped sum, divided by `expected_batch_size`) to `.grad`.

    opacus attaches its hooks to `model` in place; do not wrap the same model with another engine.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        max_grad_norm: float,
        noise_multiplier: float,
        expected_batch_size: int,
        mode: Literal["hooks", "ghost"] = "hooks",
        generator: torch.Generator | None = None,
    ) -> None:
        if mode not in ("hooks", "ghost"):
            raise ValueError(f"mode must be 'hooks' or 'ghost', got {mode!r}")
        self.mode = mode
        params = [p for p in model.parameters() if p.requires_grad]
        holder = torch.optim.SGD(params, lr=0.0)  # opacus' noise and scaling live in an optimizer wrapper
        options = dict(
            noise_multiplier=noise_multiplier,
            max_grad_norm=max_grad_norm,
            expected_batch_size=expected_batch_size,
            loss_reduction="sum",
            generator=generator,
        )
        if mode == "hooks":
            self.module = GradSampleModule(model, loss_reduction="sum")
            self.optimizer = DPOptimizer(holder, **options)
        else:
            self.module = GradSampleModuleFastGradientClipping(
                model, loss_reduction="sum", max_grad_norm=max_grad_norm, use_ghost_clipping=True
            )
            self.optimizer = DPOptimizerFastGradientClipping(holder, **options)

    def _backward(self, losses: Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        with warnings.catch_warnings():  # opacus' module hooks warn when the input needs no gradient
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            if self.mode == "hooks":
                losses.sum().backward()
            else:
                DPTensorFastGradientClipping(self.module, self.optimizer, losses, "sum").backward()

    def step(self, losses: Tensor) -> None:
        """Write the noisy averaged gradient of the per-example `losses [B]` to `.grad`."""
        self._backward(losses)
        self.optimizer.pre_step()

    def _clipped_sum(self, losses: Tensor) -> dict[str, Tensor]:
        """opacus' clipped sum before noise, flattened over the trainable parameters (for
        `dpvae.privacy.dpsgd.analysis.clipped_sums` only)."""
        self._backward(losses)
        if self.mode == "hooks":
            self.optimizer.clip_and_accumulate()
        else:
            self.optimizer.accumulate()
        return {"dpsgd": torch.cat([p.summed_grad.flatten() for p in self.optimizer.params]).detach()}

    def close(self) -> None:
        """Remove opacus' hooks and per-sample attributes from the model."""
        self.module.cleanup()
