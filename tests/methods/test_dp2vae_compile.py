"""DP²-VAE's stage-2 step through torch.compile (`compile` parameter): the released decoder is the eager
step's to float rounding, the engine's records and the ledger are the eager run's, a compiled run resumes from
its checkpoint with the bytes of an uninterrupted one; an engine refuses a forward pass traced by dynamo."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dpvae import stages
from dpvae.files import json_text
from dpvae.methods.checkpoint import Checkpoint
from dpvae.runs import planned_release, recomputed_ledger
from dpvae.runspec import RunSpec
from support.compiled_runs import dp2vae_decoder, worst
from support.tiny_dp2vae import tiny_dp2vae_spec

#: decoder parameters: |compiled - eager| <= RTOL * max|eager|, tensor by tensor. Six private stage-2 steps (and a
#: stage 1) in float32, compiled kernels fusing and reordering sums: too long for a useful rounding bound, so
#: measured (benchmarks/compile_spread.py, this 2-core x86_64 CPU, torch 2.13,
#: benchmarks/measured/cpu-2026-12-01/compile-spread-dp2vae.log), run seed / threads: seed 0 7.7e-6 under 1 and
#: 2 threads, seed 1 1.02e-5 under both (the former 1e-5 failed seed 1): 1e-4 keeps a margin of ~10x over the
#: worst. The planted clip 0.5 lies 1.27e-2 away at seed 0 (the test's), 5.5e-3 at seed 1: 127x this tolerance.
RTOL = 1e-4
#: on CUDA: TF32 convolutions (cuDNN's default) on both paths, fused kernels rounding otherwise. Not measured
#: as a spread here (no CUDA device); the test passed on one H200 (benchmarks/measured/h200-2026-11-26/)
CUDA_RTOL = 1e-4


def _spec(config: dict, data: Path, tmp: Path, name: str, device: str = "cpu", **params) -> RunSpec:
    """A tiny run with sigma fixed (calibrating it takes seconds)."""
    return tiny_dp2vae_spec(config, data, tmp, name, device=device, **{"noise_multiplier": 1.0, "lr": 0.001, **params})


def _train_recording(spec: RunSpec, monkeypatch) -> list:
    """Train `spec`; the stage-2 engine's paper and sound mechanisms after its last step."""
    import dpvae.methods.dp2vae.train as impl

    engines = []

    def recording(*args, **kwargs):
        engines.append(impl_engine(*args, **kwargs))
        return engines[-1]

    impl_engine = impl.stage2_engine
    monkeypatch.setattr(impl, "stage2_engine", recording)
    stages.train(spec)
    monkeypatch.setattr(impl, "stage2_engine", impl_engine)
    (engine,) = engines
    return [engine.steps, engine.mechanisms(), engine.mechanisms(sound=True)]


def _same_run(
    eager: RunSpec, compiled: RunSpec, eager_records: list, compiled_records: list, rtol: float = RTOL
) -> None:
    """The decoders within `rtol`; the engine's records, the written ledgers, their recomputation from train.json
    and the ledgers planned before training all equal."""
    assert worst(dp2vae_decoder(eager), dp2vae_decoder(compiled)) <= rtol
    assert compiled_records == eager_records
    written = (Path(eager.run) / "privacy.json").read_text()
    assert (Path(compiled.run) / "privacy.json").read_text() == written
    assert recomputed_ledger(compiled.run) == (written, written)
    assert json_text(planned_release(compiled).to_dict()) == json_text(planned_release(eager).to_dict()) == written


def test_compiled_stage2_equals_eager(smoke_config, prepared_from_mirror, tmp_path, monkeypatch):
    """Same seeds: the compiled run's decoder within RTOL of the eager run's (a run with another clip is not,
    so the comparison can fail), equal engine records (steps, paper and sound mechanisms) and ledger."""
    data = prepared_from_mirror("mnist")
    eager = _spec(smoke_config, data, tmp_path, "eager")
    compiled = _spec(smoke_config, data, tmp_path, "compiled", compile="default")
    records = _train_recording(eager, monkeypatch)
    assert records[0] == 6
    _same_run(eager, compiled, records, _train_recording(compiled, monkeypatch))

    planted = _spec(smoke_config, data, tmp_path, "planted", clip=0.5)
    stages.train(planted)
    assert worst(dp2vae_decoder(eager), dp2vae_decoder(planted)) > 100 * RTOL


@pytest.mark.slow
def test_compiled_stage2_resumes_with_the_bytes_of_an_uninterrupted_run(
    smoke_config, prepared_from_mirror, tmp_path, monkeypatch
):
    """Killed after its second stage-2 step and resumed (the compiled step rebuilt), a compiled run ends with
    the bytes of the uninterrupted compiled run (each compiles: about a minute of CPU)."""
    data = prepared_from_mirror("mnist")
    whole = _spec(smoke_config, data, tmp_path, "whole", compile="default")
    stages.train(whole)
    killed = _spec(smoke_config, data, tmp_path, "killed", compile="default")
    monkeypatch.setattr(Checkpoint, "due", lambda self, step: True)
    save, saved = Checkpoint.save, []

    def save_then_kill(self, state):
        save(self, state)
        saved.append("stage2_step" in state)
        if saved.count(True) == 2:
            raise KeyboardInterrupt("killed")

    monkeypatch.setattr(Checkpoint, "save", save_then_kill)
    with pytest.raises(KeyboardInterrupt):
        stages.train(killed)
    monkeypatch.undo()
    assert (Path(killed.run) / "checkpoint.pt").is_file() and not (Path(killed.run) / "model").exists()
    stages.train(killed)
    uninterrupted, resumed = dp2vae_decoder(whole), dp2vae_decoder(killed)
    assert all(torch.equal(uninterrupted[k], resumed[k]) for k in uninterrupted)
    assert (Path(killed.run) / "privacy.json").read_bytes() == (Path(whole.run) / "privacy.json").read_bytes()


def test_an_engine_refuses_a_forward_pass_traced_by_dynamo():
    """Traced, the layers' outputs leave the compiled graph beside the loss, off its autograd path: every
    per-example gradient would be zero. The engine refuses instead."""
    from dpvae.privacy.dpsgd import DPSGD

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    engine = DPSGD(model, noise_multiplier=1.0, sample_rate=0.1, max_grad_norm=1.0, expected_batch_size=8)

    def step(x: torch.Tensor) -> None:
        engine.step(model(x).square().sum(1))

    x = torch.randn(8, 3)
    step(x)  # eager: accepted
    with pytest.raises(ValueError, match="ran inside torch.compile"):
        torch.compile(step, backend="eager")(x)
    torch._dynamo.reset()


@pytest.mark.gpu
def test_reduce_overhead_stage2_equals_eager_on_cuda(smoke_config, prepared_from_mirror, tmp_path, monkeypatch):
    """On CUDA, mode reduce-overhead (CUDA graphs) against the eager step, both on the device."""
    data = prepared_from_mirror("mnist")
    eager = _spec(smoke_config, data, tmp_path, "eager", device="cuda")
    compiled = _spec(smoke_config, data, tmp_path, "compiled", device="cuda", compile="reduce-overhead")
    records = _train_recording(eager, monkeypatch)
    _same_run(eager, compiled, records, _train_recording(compiled, monkeypatch), CUDA_RTOL)
