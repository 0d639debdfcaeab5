"""LVAE's renderers (Groß & Wunder; docs/papers.md §2): Figs 1-3 share one layout, drawn by `membership`.

`render.base.load_renderers` imports every module here.
"""
