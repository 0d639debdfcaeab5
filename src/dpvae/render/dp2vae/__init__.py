"""DP2-VAE's renderers (Jiang et al. 2022; docs/papers.md §4), one module per group of items.

`tables` Tables 1 and 2 (our runs beside the paper's numbers, rows it copied from other papers marked "cited",
DP-MERF and GS-WGAN also beside DPImageBench's re-runs), `samples` Figs 1-3, 7 and 8 (sample grids; panels of
baselines the paper only cites are labelled placeholders), `ablations` Figs 4 and 5, `learning_rate` Fig. 9,
`two_stages` Fig. 6 (the schematic); `shared` holds what they share. `render.base.load_renderers` imports every
module here.
"""
