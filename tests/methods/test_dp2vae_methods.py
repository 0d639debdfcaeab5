"""DP²-VAE and its baselines: checkpoint resume gives identical bytes, a cached stage 1 gives the bytes of
an in-run one, the accounting matches the authors' numbers, and DP-MERF's release has the sensitivity its
ledger assumes."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from dpvae import stages
from dpvae.errors import DataError
from dpvae.methods.checkpoint import Checkpoint
from dpvae.paths import checkpoint_file, ledger_file, model_path, stage1_record
from dpvae.runs import stage1_of
from dpvae.runspec import RunSpec
from support.tiny_dp2vae import tiny_dp2vae_spec


def _cached(spec: RunSpec, directory: Path) -> RunSpec:
    return replace(spec, stage1=str(directory))


@pytest.mark.parametrize("fail_at", ["stage1", "stage2"])
def test_dp2vae_resumes_from_its_checkpoint_with_identical_bytes(
    fail_at, smoke_config, prepared_from_mirror, tmp_path, monkeypatch
):
    import dpvae.methods.dp2vae.train as impl

    data = prepared_from_mirror("mnist")
    stages.train(tiny_dp2vae_spec(smoke_config, data, tmp_path, "whole"))
    spec = tiny_dp2vae_spec(smoke_config, data, tmp_path, "killed")
    monkeypatch.setattr(Checkpoint, "due", lambda self, step: True)
    calls = {"n": 0}

    def killer(original):
        def wrapped(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 2:
                raise KeyboardInterrupt("killed")
            return original(*args, **kwargs)

        return wrapped

    if fail_at == "stage1":  # after the first chunk of 2 encoders
        monkeypatch.setattr(impl, "stacked_loss", killer(impl.stacked_loss))
        calls["n"] = -1  # two iterations of chunk 1 pass, the first of chunk 2 is killed
    else:
        from dpvae.privacy.dpsgd import DPSGD

        monkeypatch.setattr(DPSGD, "step", killer(DPSGD.step))
    with pytest.raises(KeyboardInterrupt):
        stages.train(spec)
    assert checkpoint_file(Path(spec.run)).is_file() and not model_path(Path(spec.run)).exists()
    monkeypatch.undo()
    stages.train(spec)
    whole = torch.load(model_path(tmp_path / "whole") / "decoder.pt", weights_only=True)
    resumed = torch.load(model_path(Path(spec.run)) / "decoder.pt", weights_only=True)
    assert whole.keys() == resumed.keys()
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)
    assert not checkpoint_file(Path(spec.run)).exists()


def test_dp2vae_cached_stage1_gives_the_bytes_of_an_in_run_one(
    smoke_config, prepared_from_mirror, tmp_path, monkeypatch
):
    """Same seed: the stage-1 job's encoders (killed once and resumed from its checkpoint) are the in-run
    stage 1's, bit for bit, and so are the run's decoder, samples and ledger; a run at another epsilon and
    stage-2 learning rate loads the same stage 1; a stale or missing one is refused. (sigma fixed:
    calibrating it takes seconds and stage 1 does not read it.)"""
    import dpvae.methods.dp2vae.train as impl

    used: dict[str, dict[str, torch.Tensor]] = {}

    def recording(name, original):
        def wrapped(*args, **kwargs):
            result = original(*args, **kwargs)  # load_stage1 also returns the partition
            encoders = result[0] if isinstance(result, tuple) else result
            used[name] = {k: v.detach().clone() for k, v in encoders.items()}  # stage 2 updates them in place
            return result

        return wrapped

    pretrain, stacked_loss = impl.pretrain_encoders, impl.stacked_loss
    monkeypatch.setattr(impl, "pretrain_encoders", recording("in-run", pretrain))
    data = prepared_from_mirror("mnist")
    in_run = tiny_dp2vae_spec(smoke_config, data, tmp_path, "in-run", noise_multiplier=1.0)
    stages.train(in_run)
    monkeypatch.setattr(impl, "pretrain_encoders", pretrain)

    stage1 = stage1_of(_cached(in_run, tmp_path / "stage1"))
    calls = itertools.count()

    def killed_in_the_second_chunk(*args):  # of 2 encoders, 2 iterations each; then the job resumes
        if next(calls) == 2:
            raise KeyboardInterrupt("killed")
        return stacked_loss(*args)

    monkeypatch.setattr(impl, "stacked_loss", killed_in_the_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        stages.stage1(stage1)
    assert checkpoint_file(tmp_path / "stage1").is_file() and not model_path(tmp_path / "stage1").exists()
    monkeypatch.setattr(impl, "stacked_loss", stacked_loss)
    stages.stage1(stage1)
    assert not checkpoint_file(tmp_path / "stage1").exists()
    assert stage1_record(tmp_path / "stage1").is_file()
    saved = torch.load(model_path(tmp_path / "stage1") / impl.ENCODERS, weights_only=True)["encoders"]
    monkeypatch.setattr(impl, "pretrain_encoders", None)  # a run with a cached stage 1 never trains it
    monkeypatch.setattr(impl, "load_stage1", recording("cached", impl.load_stage1))
    cached = _cached(
        tiny_dp2vae_spec(smoke_config, data, tmp_path, "cached", noise_multiplier=1.0), tmp_path / "stage1"
    )
    stages.train(cached)

    encoders = used["in-run"]
    assert saved.keys() == encoders.keys() == used["cached"].keys()
    assert all(torch.equal(saved[k], encoders[k]) and torch.equal(used["cached"][k], encoders[k]) for k in encoders)
    runs = Path(in_run.run), Path(cached.run)
    decoders = [torch.load(model_path(r) / impl.DECODER, weights_only=True) for r in runs]
    assert all(torch.equal(decoders[0][k], decoders[1][k]) for k in decoders[0])
    assert ledger_file(runs[0]).read_bytes() == ledger_file(runs[1]).read_bytes()
    samples = [dict(np.load(stages.sample(r, 32))) for r in runs]
    assert all(np.array_equal(samples[0][k], samples[1][k]) for k in ("x", "y"))

    other = tiny_dp2vae_spec(smoke_config, data, tmp_path, "other", eps="1", lr=0.001, iters=60, noise_multiplier=2.0)
    assert stage1_of(_cached(other, tmp_path / "stage1")) == stage1

    stale = _cached(replace(in_run, params={**in_run.params, "pretrain_lr": 0.001}), tmp_path / "stage1")
    with pytest.raises(DataError, match="trained for stage-1 key"):
        stages.train(stale)
    with pytest.raises(DataError, match="stage 1 is not built"):
        stages.train(_cached(in_run, tmp_path / "missing"))


def test_dp_merf_release_has_sensitivity_two_over_n():
    from dpvae.methods.conditional import onehot
    from dpvae.models.merf import embedding, rff_weights

    generator = torch.Generator().manual_seed(0)
    x, y = torch.rand(50, 20, generator=generator), torch.randint(3, (50,), generator=generator)
    w = rff_weights(64, 20, 5.0, generator)
    base = embedding(x, onehot(y, 3), w)
    for _ in range(20):  # replace one record by an arbitrary one (other class, other pixels)
        i = int(torch.randint(50, (1,), generator=generator))
        x2, y2 = x.clone(), y.clone()
        x2[i], y2[i] = torch.rand(20, generator=generator) * 5, (y[i] + 1) % 3
        assert torch.linalg.norm(embedding(x2, onehot(y2, 3), w) - base) <= 2 / 50 + 1e-6


def test_dp_merf_accounting_matches_its_repository():
    from dpvae.methods.dp_merf.accounting import accounting

    # dp_analysis.py's comment: sigma 5 -> epsilon < 1, sigma 25 -> epsilon < 0.2 (autodp: 0.980, 0.193)
    assert accounting(5.0, 60000, 1e-5).epsilon == pytest.approx(0.9797, abs=2e-3)
    assert accounting(25.0, 60000, 1e-5).epsilon == pytest.approx(0.1927, abs=2e-3)


def test_gs_wgan_accounting_the_authors_way_and_ours():
    from dpvae.methods.gs_wgan.accounting import accounting, authors_epsilon, authors_iters

    # GS-WGAN's default configuration is its "epsilon = 10" (autodp); docs/papers.md A-D10: about 5.0 under a
    # Poisson add/remove-one accountant with the classic conversion
    assert authors_epsilon(1.07, 1000, 20000, 32, 1e-5) == pytest.approx(10.0, abs=0.05)
    assert accounting(1.07, 1000, 20000, 32, 1.0, 1e-5).epsilon == pytest.approx(5.0, abs=0.05)
    iters = authors_iters(1.0, 1.07, 1000, 32, 1e-5)
    assert authors_epsilon(1.07, 1000, iters, 32, 1e-5) <= 1.0 < authors_epsilon(1.07, 1000, iters + 1, 32, 1e-5)
    assert 100 < iters < 200 and math.isfinite(accounting(1.07, 1000, iters, 32, 1.0, 1e-5).epsilon)


def test_gs_wgan_sanitised_gradients_move_by_at_most_the_sound_sensitivity():
    """Any two discriminators (a record of D_k changed => discriminator k arbitrary) give pre-noise releases
    within 2C/sqrt(B) of each other: the sound ledger's sensitivity (multiplier sigma/sqrt(B))."""
    from dpvae.methods.gs_wgan.accounting import sound_accounting
    from dpvae.methods.gs_wgan.train import clip_images

    batch, clip = 8, 1.0
    generator = torch.Generator().manual_seed(0)
    for _ in range(20):
        a = torch.randn(1, batch, 1, 28, 28, generator=generator) * 10
        b = -a * torch.rand(1, batch, 1, 1, 1, generator=generator) * 5  # adversarial: opposite directions
        moved = torch.linalg.norm(clip_images(a, clip / batch) - clip_images(b, clip / batch))
        assert moved <= 2 * clip / math.sqrt(batch) + 1e-6
    mechanism = sound_accounting(1.07, 1000, 10, batch, clip, 1e-5).mechanisms[0]
    assert mechanism.noise_multiplier == pytest.approx(1.07 / math.sqrt(batch))
    assert mechanism.sampling == "fixed-partition"
