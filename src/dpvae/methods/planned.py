"""Methods the experiments name whose packages do not exist yet: their typed parameters and resources.

Implementing one = writing its family's package `methods/<family>/` (move its Params class there, register the
Method) and deleting its entry here; a test refuses a name that is both planned and registered. Every method is
implemented.
"""

from __future__ import annotations

from dpvae.methods.base import PlannedMethod

PLANNED: tuple[PlannedMethod, ...] = ()
