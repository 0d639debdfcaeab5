"""The generative methods: one package per method family (`privae/`, `p3gm/`, `lvae/`, `dp2vae/`, `dp_merf/`,
`gs_wgan/`, `marginals/`, `real/`), each registering its methods (`registry.py`) against the contract in
`base.py`; `checkpoint.py` and `conditional.py` are what the families share (docs/developing.md, "Adding a method")."""
