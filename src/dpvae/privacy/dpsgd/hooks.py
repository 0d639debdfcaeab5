"""Forward hooks that record each trainable layer's inputs and output during a forward pass."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from opacus.validators import ModuleValidator
from torch import Tensor, nn
from torch.nn.modules.batchnorm import _BatchNorm


@dataclass(frozen=True)
class Call:
    """One call of a layer: its inputs, its output (kept in the autograd graph) and their versions (None: a call
    traced by torch.compile, refused by `check_unmodified`)."""

    inputs: tuple[Tensor, ...]
    output: Tensor
    version: int | None
    input_versions: tuple[int, ...] | None = ()

    def check_unmodified(self, name: str) -> None:
        if self.version is None:  # a compiled forward hands back its layers' outputs beside the loss, not on its path
            raise ValueError(
                f"layer '{name}' ran inside torch.compile: its recorded output is not on the loss's autograd path "
                "(every per-example gradient would be zero); run the forward pass eagerly "
                "(torch.compiler.disable) and compile the rest of the step"
            )
        if self.output._version != self.version:
            raise ValueError(
                f"the output of layer '{name}' was modified in place after the layer ran "
                "(e.g. ReLU(inplace=True)); per-example gradients need it intact"
            )
        if tuple(_version(i) for i in self.inputs) != self.input_versions:
            raise ValueError(
                f"an input of layer '{name}' was modified in place after the layer ran; "
                "per-example gradients need it intact"
            )


def _version(value: object) -> int:
    return value._version if isinstance(value, Tensor) else 0


class CallRecorder:
    """Records the calls of the given layers made with gradients enabled, until `take()` hands them over."""

    def __init__(self, layers: dict[str, nn.Module]) -> None:
        self.names = {layer: name for name, layer in layers.items()}
        self._calls: dict[nn.Module, list[Call]] = {}
        self._paused = False
        self._handles = [layer.register_forward_hook(self._record) for layer in layers.values()]

    def _record(self, layer: nn.Module, inputs: tuple, output: object) -> None:
        if self._paused or not torch.is_grad_enabled():
            return
        if not isinstance(output, Tensor):
            raise ValueError(
                f"layer '{self.names[layer]}' returns {type(output).__name__}; only "
                "layers returning one tensor are supported"
            )
        if output.requires_grad:
            traced = torch.compiler.is_compiling()
            versions = None if traced else tuple(_version(i) for i in inputs)
            self._calls.setdefault(layer, []).append(
                Call(tuple(inputs), output, None if traced else output._version, versions)
            )

    def add(self, name: str, layer: nn.Module) -> None:
        """Record this layer's calls too (an audited run's canary layer, added at the first step)."""
        self.names[layer] = name
        self._handles.append(layer.register_forward_hook(self._record))

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Layer calls made inside this context are not recorded (the engine's own re-evaluations)."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def take(self) -> dict[nn.Module, list[Call]]:
        """The calls recorded since the last `take()`; the recorder starts afresh."""
        calls, self._calls = self._calls, {}
        return calls

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._calls = {}


def _training_batchnorms(model: nn.Module) -> list[str]:
    """Names of BatchNorm layers in training mode: they mix the examples of a batch."""
    return [name for name, m in model.named_modules() if isinstance(m, _BatchNorm) and m.training]


def reject_batch_mixing(model: nn.Module, private_layers: list[nn.Module]) -> None:
    """Raise ValueError for layers that break per-example sensitivity.

    A private layer must pass opacus' `ModuleValidator` (no BatchNorm etc.); a BatchNorm anywhere in
    training mode mixes the examples of a batch, so one record would move every example's gradient
    (docs/papers.md A-P1, A-D3). Use GroupNorm, or keep a public BatchNorm in eval mode.
    """
    errors = [str(e) for layer in private_layers for e in ModuleValidator.validate(layer, strict=False)]
    if mixing := _training_batchnorms(model):
        errors.append(
            f"BatchNorm in training mode mixes examples across the batch: {mixing}; use GroupNorm "
            "(docs/papers.md A-P1) or put a public BatchNorm in eval mode"
        )
    if errors:
        raise ValueError("model is not compatible with per-example clipping: " + "; ".join(errors))
