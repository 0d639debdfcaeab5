"""P3GM analyses: Table III (dataset statistics), Table IV (hyper-parameters), Fig. 9 (composition)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpvae.analyses import register_analysis
from dpvae.analyses.tidy import tidy
from dpvae.config_types import Experiment
from dpvae.paths import prepared_dir
from dpvae.specs import AnalysisContext


@register_analysis("dataset_statistics")
def dataset_statistics(name: str, experiment: Experiment, context: AnalysisContext) -> pd.DataFrame:
    """P3GM Table III from the prepared data: records, features, classes, % positive."""
    from dpvae.data.stats import dataset_statistics as statistics
    from dpvae.data.store import load_prepared

    names = {
        "N": "n_records",
        "n_train": "n_train",
        "n_test": "n_test",
        "n_features": "n_features",
        "n_classes": "n_classes",
        "pct_positive": "pct_positive",
    }  # -> the published metric names
    rows = []
    for dataset in experiment.datasets:
        stats = statistics(load_prepared(prepared_dir(Path(context.data_root), dataset)))
        rows += [
            {"experiment": name, "dataset": dataset, "variant": "real", "metric": names[k], "value": stats[k]}
            for k in names
        ]  # variant "real": the papers' "original" (the recorded key)
    return tidy(rows)


@register_analysis("p3gm_hyperparameters")
def p3gm_hyperparameters(name: str, experiment: Experiment, context: AnalysisContext) -> pd.DataFrame:
    """P3GM Table IV from this configuration: DP-SGD sigma_s, lr, epochs and batch size per dataset."""
    from dpvae.runs import resolve_params

    params = experiment.params
    columns = {"sigma_s": "sigma_sgd", "lr": "lr", "epochs": "epochs", "batch_size": "batch_size"}
    rows = []
    for dataset in params["datasets"]:
        resolved = resolve_params(context.config(), params["variant"], dataset, "1")
        rows += [
            {
                "experiment": name,
                "dataset": dataset,
                "variant": params["variant"],
                "epsilon": 1.0,
                "metric": metric,
                "value": resolved.get(key),
            }
            for metric, key in columns.items()
        ]  # Table IV: the (1, 1e-5) runs' settings
    return tidy(rows)


@register_analysis("p3gm_composition")
def p3gm_composition(name: str, experiment: Experiment, context: AnalysisContext) -> pd.DataFrame:
    """P3GM Fig. 9: total epsilon vs the DP-SGD noise sigma_s, for each number of mixture components K,
    under Theorem 4's RDP composition (classic conversion as the [computed] reference values, and the
    improved one the reference code uses) and under the baseline (Gaussian-bound PCA + zCDP EM +
    moments-accountant SGD, delta split in thirds, epsilons summed)."""
    from dpvae.methods.p3gm.accounting import P3GMSetting, p3gm_composition_comparison

    params = experiment.params
    rows = []
    for k in params["em_components"]:
        for sigma in params["sigma_sgd"]:
            setting = P3GMSetting(
                n_train=params["n_train"],
                batch_size=params["batch_size"],
                epochs=params["epochs"],
                sgd_sigma=sigma,
                pca_sigma=params["sigma_pca"],
                em_sigma=params["sigma_em"],
                em_iters=params["em_iters"],
                n_components=k,
                delta=context.delta,
            )
            classic = p3gm_composition_comparison(setting, conversion="classic")
            improved = p3gm_composition_comparison(setting, conversion="improved")
            base = {"experiment": name, "variant": f"K={k}", "sweep": "sigma_s", "point": sigma, "metric": "epsilon"}
            rows += [
                {**base, "method": "rdp-classic", "value": classic.proposed.epsilon},
                {**base, "method": "rdp-improved", "value": improved.proposed.epsilon},
                {**base, "method": "baseline", "value": classic.baseline.epsilon},
            ]
    return tidy(rows)
