"""GS-WGAN's main phase through torch.compile (`compile` parameter): the released generator is the eager run's
to float rounding and the ledger is the eager run's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch

from dpvae import stages
from dpvae.runs import Run, run_spec
from dpvae.runspec import RunSpec

RTOL = 1e-5  # generator parameters (its EMA): |compiled - eager| <= RTOL * max|eager|, tensor by tensor


def _spec(config: dict, data: Path, tmp: Path, name: str, **params) -> RunSpec:
    spec = run_spec(config, Run("mnist", "gs-wgan", "10", 0))
    tiny = {
        **spec.params,
        "discriminators": 4,
        "batch_size": 4,
        "max_train": 64,
        "iters": 4,
        "pretrain_iters": 0,
        "model_dim": 2,
        "critic_iters": 2,
        "lr": 0.001,
        **params,
    }
    return replace(spec, params=tiny, run=str(tmp / name), data_root=str(Path(data).parents[1]), device="cpu")


def _generator(spec: RunSpec) -> dict[str, torch.Tensor]:
    return torch.load(Path(spec.run) / "model" / "generator.pt", weights_only=True)["params"]


def _worst(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max() / a[k].abs().max().clamp_min(1e-12)) for k in a)


def test_compiled_main_phase_equals_eager(smoke_config, prepared_from_mirror, tmp_path):
    """Same seeds: the compiled run's generator within RTOL of the eager run's (a run with another clip is not),
    the written ledgers equal."""
    data = prepared_from_mirror("mnist")
    eager, compiled, planted = (
        _spec(smoke_config, data, tmp_path, "eager"),
        _spec(smoke_config, data, tmp_path, "compiled", compile="default"),
        _spec(smoke_config, data, tmp_path, "planted", clip=0.5),
    )
    for spec in (eager, compiled, planted):
        stages.train(spec)
    assert _worst(_generator(eager), _generator(compiled)) <= RTOL
    assert _worst(_generator(eager), _generator(planted)) > 100 * RTOL
    written = (Path(eager.run) / "privacy.json").read_text()
    assert (Path(compiled.run) / "privacy.json").read_text() == written
