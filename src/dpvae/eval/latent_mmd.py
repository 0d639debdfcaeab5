"""MMD(q(z), p(z)) on the test set (PriVAE Fig. 1c; protocol [choice], docs/papers.md §1.2 and A-P8).

One posterior sample per test record and as many fresh prior draws, in consecutive batches of
`batch_size` (PriVAE's B); the dimension-wise Cauchy-kernel MMD (Mathieu et al.'s MMD_DIM, the
regulariser PriVAE+MMD trains with) per batch, averaged over batches (a last partial batch is dropped
unless it is the only one). `latent_mmd_per_record` is that divided by the batch size: Mathieu et al.'s
`analyse.py` reports the regulariser as Σ_batches MMD / (number of test records), and PriVAE's Fig. 1c
axis (0-0.2) matches that scale. The model runs on the run's device; the posterior and prior draws come
from the seeded CPU stream in one fixed order and are moved there (CUDA = CPU up to float rounding).
"""

from __future__ import annotations

from dataclasses import dataclass

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.latent import load_model, model_device, test_images
from dpvae.eval.registry import register_metric
from dpvae.params import MetricOptions, param


@dataclass(frozen=True)
class LatentMMDOptions(MetricOptions):
    batch_size: int = param(256, "batch size of the MMD estimate (PriVAE's B)", minimum=2)
    max_test: int | None = param(None, "use the first n test records (null = all)", minimum=2)


@register_metric(
    "latent_mmd",
    needs=("model", "data"),
    options=LatentMMDOptions,
    description="dimension-wise Cauchy MMD between aggregate posterior and prior samples",
)
def latent_mmd(ctx: EvalContext) -> Rows:
    import torch

    from dpvae.models.losses import mmd_dim
    from dpvae.privacy.dpsgd.units import Units

    model = load_model(ctx)
    device = model_device(model)
    x, _ = test_images(ctx, ctx.options.max_test)
    records = torch.as_tensor(x).to(device)
    size = min(ctx.options.batch_size, len(x))
    generator = ctx.run.torch_generator("latent_mmd", "cpu")
    units = Units.whole_batch(size, device)
    values = []
    with torch.no_grad():
        for start in range(0, len(x) - size + 1, size):
            mu, std = model.encode(records[start : start + size])
            z = mu + std * torch.randn(mu.shape, generator=generator).to(device)
            prior = model.sample_prior(size, generator).to(device)
            values.append(float(mmd_dim(z, prior, units)[0]))
    mean = sum(values) / len(values)
    return [{"metric": "latent_mmd", "value": mean}, {"metric": "latent_mmd_per_record", "value": mean / size}]
