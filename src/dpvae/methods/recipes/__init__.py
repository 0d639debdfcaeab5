"""Each paper's privacy accounting, the paper's own way ("paper": its claim) and a sound way ("sound").

`dpvae.privacy` holds the paper-independent machinery (accountants, mechanisms, DP-SGD engines, the
ledger); the per-paper recipes live here and only assemble `Mechanism`s for it. Every ε is computed.
"""

from dpvae.methods.recipes.dp2vae import (
    DP2VAE_DELTA, DP2VAE_NOTES, dp2vae_epsilon, dp2vae_ledger, dp2vae_noise, dp2vae_sound_epsilon)
from dpvae.methods.recipes.p3gm import (
    CENTRINGS, NOT_DP_NONPRIVATE_MEAN, P3GM_DELTA, P3GM_NOTES, P3GM_TEST_FRACTION, Centring, CompositionComparison,
    P3GMSetting, p3gm_accounting, p3gm_composition_comparison, p3gm_fit_sgd_sigma, p3gm_ledger, p3gm_mechanisms,
    p3gm_train_size)
from dpvae.methods.recipes.privae import (
    KAPPAS, PRIVAE_NOTES, PRIVAE_ORDERS, SQRT5, Kappa, privae_kappa, privae_ledger, privae_noise, release_parts,
    tight_kappa)

__all__ = [
    "CENTRINGS", "Centring", "CompositionComparison", "DP2VAE_DELTA", "DP2VAE_NOTES", "KAPPAS", "Kappa",
    "NOT_DP_NONPRIVATE_MEAN", "P3GMSetting", "P3GM_DELTA", "P3GM_NOTES", "P3GM_TEST_FRACTION", "PRIVAE_NOTES",
    "PRIVAE_ORDERS", "SQRT5", "dp2vae_epsilon", "dp2vae_ledger", "dp2vae_noise", "dp2vae_sound_epsilon",
    "p3gm_accounting", "p3gm_composition_comparison", "p3gm_fit_sgd_sigma", "p3gm_ledger", "p3gm_mechanisms",
    "p3gm_train_size", "privae_kappa", "privae_ledger", "privae_noise", "release_parts", "tight_kappa",
]
