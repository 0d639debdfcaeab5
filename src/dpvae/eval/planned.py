"""Metrics the experiments name whose modules do not exist yet: what they need and their typed options.

Implementing one = writing `eval/<name>.py` (move its Options class there, `@register_metric`) and deleting
its entry here; a test refuses a name that is both planned and registered. Every metric is implemented.
"""

from __future__ import annotations

from dpvae.eval.base import Metric

PLANNED: tuple[Metric, ...] = ()
