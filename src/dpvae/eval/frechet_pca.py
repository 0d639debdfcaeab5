"""Sample quality without Inception: the Fréchet distance between real and generated images in PCA space.

The `components` leading principal components of the real test images (fitted on them) give each image a
low-dimensional feature vector; the metric is ‖μ_r − μ_g‖² + tr(Σ_r + Σ_g − 2(Σ_r Σ_g)^{1/2}) between the
Gaussian fits of real test and generated features — the FID formula (Heusel et al. 2017) with PCA features
in place of Inception's, so that it runs in seconds on a CPU. Lower is better; it rewards samples with the
real data's mean and spread (blurry or collapsed samples score badly), it is not comparable with FID.
`frechet_pca_real` is the same distance between two halves of the test set (the floor for these features).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpvae.eval.base import EvalContext, Rows
from dpvae.eval.registry import register_metric
from dpvae.params import MetricOptions, param


@dataclass(frozen=True)
class FrechetPCAOptions(MetricOptions):
    components: int = param(
        50,
        "principal components of the real test images used as features ([choice] sample quality for LVAE's \"better "
        'samples than VAE-DPSGD"; the paper: visual)',
        minimum=1,
    )


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Fréchet distance between Gaussian fits of feature sets a [N, k] and b [M, k]."""
    from scipy import linalg

    mu_a, mu_b = a.mean(0), b.mean(0)
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    root, _ = linalg.sqrtm(cov_a @ cov_b, disp=False)
    return float(((mu_a - mu_b) ** 2).sum() + np.trace(cov_a + cov_b - 2 * np.real(root)))


@register_metric(
    "frechet_pca",
    needs=("samples", "data"),
    options=FrechetPCAOptions,
    description="Frechet distance between real test and generated images in the real images' PCA space",
)
def frechet_pca(ctx: EvalContext) -> Rows:
    from sklearn.decomposition import PCA

    real = ctx.data.test.x.reshape(len(ctx.data.test.x), -1).astype(np.float64)
    fake = ctx.samples["x"].reshape(len(ctx.samples["x"]), -1).astype(np.float64)
    pca = PCA(n_components=min(ctx.options.components, *real.shape), random_state=0).fit(real)
    real_f, fake_f = pca.transform(real), pca.transform(fake)
    half = len(real_f) // 2
    return [
        {"metric": "frechet_pca", "value": frechet_distance(real_f, fake_f)},
        {"metric": "frechet_pca_real", "value": frechet_distance(real_f[:half], real_f[half:])},
    ]
