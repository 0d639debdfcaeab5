"""P3GM's renderers (Takagi et al.; docs/papers.md §3), one module per group of items.

`overview` Tables I-IV and the schematics, `images` Table VII and Figs 2 and 5, `tabular` Tables V, VI and
VIII, `utility_curves` Figs 4, 6 and 8, `learning_curves` Fig. 7, `composition` Fig. 9; `shared` holds what
they share. `render.base.load_renderers` imports every module here.
"""
