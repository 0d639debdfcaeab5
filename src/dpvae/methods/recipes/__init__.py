"""Each paper's privacy accounting, the paper's own way ("paper") and a sound way ("sound").

`dpvae.privacy` holds the paper-independent machinery (accountants, mechanisms, DP-SGD engines, the
ledger); the per-paper recipes live here and only assemble `Mechanism`s for it. Every ε is computed.
"""

from dpvae.methods.recipes.dp2vae import DP2VAE_DELTA, DP2VAE_NOTES, dp2vae_epsilon, dp2vae_ledger, dp2vae_noise
from dpvae.methods.recipes.p3gm import (
    P3GM_DELTA, P3GM_NOTES, P3GM_TEST_FRACTION, CompositionComparison, P3GMSetting, p3gm_accounting,
    p3gm_composition_comparison, p3gm_ledger, p3gm_mechanisms, p3gm_train_size)
from dpvae.methods.recipes.privae import (
    PRIVAE_NOTES, PRIVAE_ORDERS, STRICT_TERMWISE_SENSITIVITY, Kappa, privae_kappa, privae_ledger, privae_noise)

__all__ = [
    "CompositionComparison", "DP2VAE_DELTA", "DP2VAE_NOTES", "Kappa", "P3GMSetting", "P3GM_DELTA", "P3GM_NOTES",
    "P3GM_TEST_FRACTION", "PRIVAE_NOTES", "PRIVAE_ORDERS", "STRICT_TERMWISE_SENSITIVITY", "dp2vae_epsilon",
    "dp2vae_ledger", "dp2vae_noise", "p3gm_accounting", "p3gm_composition_comparison", "p3gm_ledger",
    "p3gm_mechanisms", "p3gm_train_size", "privae_kappa", "privae_ledger", "privae_noise",
]
