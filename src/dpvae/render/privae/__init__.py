"""PriVAE's renderers (Takahashi et al. 2020; docs/papers.md §1), one module per item.

`table1` Table 1 (sensitivity and noise scale), `sparsity` Fig. 1, `clustering` Fig. 2.
`render.base.load_renderers` imports every module here.
"""
