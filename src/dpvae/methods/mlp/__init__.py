"""Shared machinery of the MLP-VAE methods (P3GM, PGM, P3GM(AE), VAE, DP-VAE): record vectors, the
(DP-)SGD training loop and the model files. Imports torch; the method modules import it inside
`train`/`sample` only."""
