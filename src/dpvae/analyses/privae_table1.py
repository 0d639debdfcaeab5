"""PriVAE Table 1: sensitivity and noise scale of micro aggregation, batch aggregation and term-wise DP-SGD,
analytic (the paper's formulas and the sound add/remove bounds) and measured by the engines on a real batch,
with the ε each accounting gives at the table's setting (paper and sound, and term-wise under every κ).

The measured column removes, or replaces with another real record, one record of a real batch at a time
(every other record keeps its reparameterisation noise, prior sample and sub-group label) and reports the
largest change of the pre-noise aggregate (through the analysis interface `dpvae.privacy.dpsgd.analysis`):
the paper's bounds are claims a planted bug would break.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from dpvae.config_types import Experiment
from dpvae.methods.privae.accounting import KAPPAS, PRIVAE_ORDERS, SOUND, privae_kappa, privae_ledger
from dpvae.models.conv_vae import ConvVAE
from dpvae.models.losses import sample_sparse_prior
from dpvae.paths import prepared_dir
from dpvae.privacy.accounting import Adjacency, calibrate_noise
from dpvae.privacy.dpsgd import BatchAggregation, MicroAggregation, NoiseProfile, TermwiseDPSGD
from dpvae.privacy.dpsgd.analysis import clipped_sums, measured_sensitivity
from dpvae.privacy.ledger import Accounting, Mechanism
from dpvae.specs import AnalysisContext


@dataclass(frozen=True)
class Table1Setting:
    batch_size: int  # B
    groups: int  # b
    clip_sample: float  # C1
    clip_batch: float  # C2
    clip: float  # C of the aggregation baselines
    epsilon: float
    delta: float
    n_train: int
    epochs: float
    probes: int  # records removed / replaced when measuring

    @property
    def sample_rate(self) -> float:
        return self.batch_size / self.n_train

    @property
    def steps(self) -> int:
        return math.ceil(self.epochs * self.n_train / self.batch_size)


FORMULAS = {  # method -> (loss L, l2-sensitivity, noise scale on the averaged gradient), PriVAE Table 1
    "micro agg.": ("(1/B) Σ_i (φ(x_i) + ψ(batch))", "B·C", "C·σ"),
    "batch agg.": ("ψ(batch) (whole-batch loss)", "C", "C·σ"),
    "term-wise": ("(1/B) Σ_i φ(x_i) + (1/b) Σ_j ψ(s_j)", "C1 + C2", "(C1/B + C2/b)·κ·σ"),
}


def _epsilon(noise_multiplier: float, setting: Table1Setting, adjacency: Adjacency = "add/remove-one") -> float:
    """ε of T q-subsampled Gaussians with this multiplier (classic conversion, integer orders, as the paper) under
    `adjacency` (the sound accountings': replace-one, `privae.accounting.SOUND`)."""
    mechanism = Mechanism("dp-sgd", noise_multiplier, setting.sample_rate, setting.steps)
    return Accounting(
        (mechanism,), setting.delta, adjacency=adjacency, conversion="classic", orders=PRIVAE_ORDERS
    ).epsilon


def epsilon_rows(setting: Table1Setting, sigma: float, profiles: dict[str, NoiseProfile]) -> dict[str, dict]:
    """The ε each accounting gives at the table's setting, per method (metric -> value).

    Aggregation baselines: paper = σ's own target (sensitivity as in Table 1), sound = the same noise over
    the sound sensitivity of the released average, under replace-one. Term-wise, for every κ option: κ, the paper's ε
    (Theorem 2) and the sound ε of the released gradient at σ' = κσ.
    """
    rows: dict[str, dict] = {}
    for method in ("micro agg.", "batch agg."):
        profile = profiles[method]
        rows[method] = {
            "epsilon_paper": _epsilon(sigma, setting),
            "epsilon_sound": _epsilon(sigma * profile.sensitivity / profile.sound_sensitivity, setting, SOUND),
        }
    termwise: dict[str, float] = {}
    shape = (setting.clip_sample, setting.clip_batch, setting.batch_size, setting.groups)
    for option in KAPPAS:
        kappa = privae_kappa(setting.delta, *shape, option)  # type: ignore[arg-type]
        ledger = privae_ledger(kappa * sigma, setting.sample_rate, setting.steps, setting.delta, *shape, option)
        assert ledger.sound is not None
        termwise |= {
            f"kappa_{option}": kappa,
            f"epsilon_paper_kappa_{option}": ledger.paper.epsilon,
            f"epsilon_sound_kappa_{option}": ledger.sound.epsilon,
        }
    rows["term-wise"] = termwise
    return rows


def privae_table1_rows(setting: Table1Setting, images: np.ndarray, seed: int = 0) -> list[dict]:
    """Tidy rows (method, metric, value) of Table 1 for `setting`; `images` = B + probes real records."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    sigma = calibrate_noise(
        setting.epsilon, setting.delta, setting.sample_rate, setting.steps, "classic", PRIVAE_ORDERS
    )
    kappa = privae_kappa(
        setting.delta, setting.clip_sample, setting.clip_batch, setting.batch_size, setting.groups, "paper"
    )
    big_b, b = setting.batch_size, setting.groups
    common = {"sample_rate": setting.sample_rate, "noise_multiplier": sigma}
    base = ConvVAE(norm="group").double()
    models = {method: copy.deepcopy(base) for method in FORMULAS}  # one copy per engine: hooks stay separate
    engines = {
        "micro agg.": MicroAggregation(
            models["micro agg."], max_grad_norm=setting.clip, expected_batch_size=big_b, **common
        ),
        "batch agg.": BatchAggregation(models["batch agg."], max_grad_norm=setting.clip, **common),
        "term-wise": TermwiseDPSGD(
            models["term-wise"],
            sample_clip=setting.clip_sample,
            batch_clip=setting.clip_batch,
            expected_batch_size=big_b,
            num_groups=b,
            **{**common, "noise_multiplier": kappa * sigma},
        ),
    }
    x = torch.as_tensor(images[:big_b], dtype=torch.float64)
    spare = torch.as_tensor(images[big_b : big_b + setting.probes], dtype=torch.float64)
    latent = base.mu_head.out_channels
    noise = torch.randn(big_b, 1, latent, generator=generator, dtype=torch.float64)
    prior = sample_sparse_prior((big_b, latent), 0.8, generator=generator).double()
    labels = torch.randint(b, (big_b,), generator=generator)

    def terms(method, x, noise, prior, labels, num_groups):
        return models[method].loss_terms(x, noise, prior, labels, num_groups, beta=1.0, alpha=100.0)

    def micro(x, noise, prior, labels):  # unit i: φ(x_i) + ψ(whole batch)
        phi, psi = terms("micro agg.", x, noise, prior, torch.zeros_like(labels), 1)
        return clipped_sums(engines["micro agg."], phi, psi[0])

    def whole_batch(x, noise, prior, labels):  # one unit: mean φ + ψ(whole batch)
        phi, psi = terms("batch agg.", x, noise, prior, torch.zeros_like(labels), 1)
        return clipped_sums(engines["batch agg."], phi.mean() + psi[0])

    def termwise(x, noise, prior, labels):  # φ per example, ψ per sub-group
        return clipped_sums(engines["term-wise"], *terms("term-wise", x, noise, prior, labels, b), labels)

    pre_noise = {"micro agg.": micro, "batch agg.": whole_batch, "term-wise": termwise}
    analytic = {
        "micro agg.": big_b * setting.clip,
        "batch agg.": setting.clip,
        "term-wise": setting.clip_sample + setting.clip_batch,
    }
    profiles = {method: engine.noise_profile() for method, engine in engines.items()}
    epsilons = epsilon_rows(setting, sigma, profiles)
    rows = []
    for method, engine in engines.items():
        profile = profiles[method]
        batch = (x, noise, prior, labels)
        records = range(setting.probes)
        removed = measured_sensitivity(pre_noise[method], batch, records=records)
        replaced = max(
            measured_sensitivity(
                pre_noise[method], batch, records=[k], replacement=(spare[k], noise[k], prior[k], labels[k])
            )
            for k in records
        )
        values = {
            "sensitivity": analytic[method],
            "sensitivity_engine": profile.sensitivity,
            "sensitivity_sound": profile.sound_sensitivity,
            "sensitivity_measured_remove": removed,
            "sensitivity_measured_replace": replaced,
            "noise_scale": profile.table_noise_scale,
            "noise_std": profile.noise_std,
            "sigma": sigma,
            "kappa": kappa if method == "term-wise" else 1.0,
            **epsilons[method],
        }
        rows += [{"method": method, "metric": k, "value": float(v)} for k, v in values.items()]
        engine.close()
    return rows


def privae_table1(name: str, experiment: Experiment, context: AnalysisContext) -> pd.DataFrame:
    """The analysis behind `privae/table1` (parameters: experiments.privae_table1.params)."""
    from pathlib import Path

    from dpvae.analyses.tidy import tidy
    from dpvae.data.store import load_prepared

    params = experiment.params
    (dataset,) = experiment.datasets
    prepared = load_prepared(prepared_dir(Path(context.data_root), dataset))
    setting = Table1Setting(
        batch_size=params["batch_size"],
        groups=params["groups"],
        clip_sample=params["clip_sample"],
        clip_batch=params["clip_batch"],
        clip=params["clip"],
        epsilon=params["epsilon"],
        delta=context.delta,
        n_train=len(prepared.train),
        epochs=params["epochs"],
        probes=params["probes"],
    )
    images = prepared.train.x[: setting.batch_size + setting.probes]
    rows = privae_table1_rows(setting, images)
    return tidy([{"experiment": name, "dataset": dataset, "epsilon": setting.epsilon, **row} for row in rows])
