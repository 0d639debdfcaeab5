"""dpvae: a reproducible replication workflow for four differentially private VAE papers."""

__version__ = "0.1.0"
