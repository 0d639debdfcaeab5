"""Fixtures of the data-layer tests live in tests/conftest.py (`prepared_from_mirror`)."""
