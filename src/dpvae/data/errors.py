"""The data layer's exception (defined in dpvae.errors)."""

from dpvae.errors import DataError

__all__ = ["DataError"]
