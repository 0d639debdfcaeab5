"""Training implementations of methods (heavy imports; loaded inside `Method.train`/`sample` only)."""
