"""Data layer: fetch raw files (verified), prepare them into one canonical format, load and describe them.

Typical use::

    from dpvae.data import fetch_dataset, prepare_dataset, load_prepared
    fetch_dataset("mnist", "data", mirror="/path/to/mirror")
    prepared = load_prepared(prepare_dataset("mnist", "data", seed=0))
"""

from dpvae.data.errors import DataError
from dpvae.data.registry import DATASETS, DatasetSpec, dataset_ids, fetch_dataset, get_dataset, prepare_dataset
from dpvae.data.sources import RemoteFile, fetch
from dpvae.data.stats import dataset_statistics
from dpvae.data.store import Prepared, Split, load_prepared, write_prepared

__all__ = [
    "DATASETS",
    "DataError",
    "DatasetSpec",
    "Prepared",
    "RemoteFile",
    "Split",
    "dataset_ids",
    "dataset_statistics",
    "fetch",
    "fetch_dataset",
    "get_dataset",
    "load_prepared",
    "prepare_dataset",
    "write_prepared",
]
