"""Heavy implementations of the methods (torch, ...), imported inside `Method.train` / `Method.sample` only.

This sub-package is not discovered by the method registry, so validating a configuration never imports it.
"""
