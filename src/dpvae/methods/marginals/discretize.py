"""Discretisation shared by PrivBayes and Ryan's method: records <-> integer codes.

Every feature column becomes one attribute: a categorical column keeps its categories (from the
prepared data's schema, `meta["columns"]`), a continuous one gets `bins` equal-width bins on a range,
and image pixels get `pixel_bins` equal-width bins on [0, 1]. The label is the last attribute. Decoding
draws a value uniformly inside the bin (DataSynthesizer's `uniform_sampling_within_a_bin`) or returns the
category.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Column:
    """One attribute: categorical `values` (code i decodes to values[i]) or continuous bin `edges`."""

    name: str
    values: tuple[float, ...] | None = None
    edges: tuple[float, ...] | None = None

    @property
    def size(self) -> int:
        return len(self.values) if self.values is not None else len(self.edges) - 1

    def encode(self, x: np.ndarray) -> np.ndarray:
        """Codes 0..size-1: nearest category, or the bin (values outside the range go to the end bins)."""
        x = np.asarray(x, dtype=np.float64)
        if self.values is not None:
            values = np.asarray(self.values)
            return np.abs(x[:, None] - values[None, :]).argmin(axis=1)
        inner = np.asarray(self.edges[1:-1])
        return np.searchsorted(inner, x, side="right")

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.values is not None:
            return np.asarray(self.values)[codes]
        edges = np.asarray(self.edges)
        return edges[codes] + rng.random(len(codes)) * (edges[codes + 1] - edges[codes])


@dataclass(frozen=True)
class Discretizer:
    """The attribute columns of a dataset (features, then the label) and its record shape."""

    columns: tuple[Column, ...]
    record_shape: tuple[int, ...]

    @property
    def sizes(self) -> np.ndarray:
        return np.array([c.size for c in self.columns], dtype=np.int64)

    def encode(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """[N, d+1] int64 codes of the flattened features and the label."""
        flat = np.asarray(x).reshape(len(x), -1)
        codes = [c.encode(flat[:, i]) for i, c in enumerate(self.columns[:-1])]
        codes.append(self.columns[-1].encode(np.asarray(y, dtype=np.float64)))
        return np.column_stack(codes).astype(np.int64)

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(x float32 [N, *record_shape], y int64 [N]) from codes."""
        flat = np.column_stack([c.decode(codes[:, i], rng) for i, c in enumerate(self.columns[:-1])])
        y = np.asarray(self.columns[-1].decode(codes[:, -1], rng)).astype(np.int64)
        return flat.astype(np.float32).reshape(len(codes), *self.record_shape), y

    def to_json(self) -> str:
        return json.dumps(
            {
                "record_shape": list(self.record_shape),
                "columns": [{"name": c.name, "values": c.values, "edges": c.edges} for c in self.columns],
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Discretizer:
        data = json.loads(text)
        columns = tuple(
            Column(
                c["name"],
                None if c["values"] is None else tuple(c["values"]),
                None if c["edges"] is None else tuple(c["edges"]),
            )
            for c in data["columns"]
        )
        return cls(columns, tuple(data["record_shape"]))

    def save(self, path: Path) -> None:
        path.write_text(self.to_json())

    @classmethod
    def load(cls, path: Path) -> Discretizer:
        return cls.from_json(path.read_text())


def _equal_width(low: float, high: float, bins: int) -> tuple[float, ...]:
    if not high > low:
        high = low + 1.0  # a constant column: one occupied bin
    return tuple(np.linspace(low, high, bins + 1).tolist())


def build_discretizer(
    x: np.ndarray, meta: dict, n_classes: int, bins: int, pixel_bins: int, range_data: np.ndarray | None = None
) -> Discretizer:
    """Columns for a prepared dataset.

    * images (records with more than one axis) and `meta["scaling"]` "pixel/255": `pixel_bins` bins on [0, 1];
    * a column the schema (`meta["columns"]`) calls categorical: its K label-encoded categories, which the
      preparers encoded as k/(K-1);
    * any other column: `bins` equal-width bins on [0, 1] when the data has a recorded domain (`meta["domain"]`:
      the papers' datasets and declared ones, their columns encoded into [0, 1] by it), else on the [min, max] of
      `range_data` (default `x`): the observed range, as DataSynthesizer bins (Ryan's passes its public slice).
    """
    record_shape = tuple(np.asarray(x).shape[1:])
    flat = np.asarray(x if range_data is None else range_data, dtype=np.float64).reshape(-1, int(np.prod(record_shape)))
    is_image = len(record_shape) > 1 or "pixel" in str(meta.get("scaling", ""))
    schema = meta.get("columns") or []
    columns = []
    for i in range(flat.shape[1]):
        spec = schema[i] if i < len(schema) else {}
        if is_image:
            columns.append(Column(f"p{i}", edges=_equal_width(0.0, 1.0, pixel_bins)))
        elif spec.get("kind") == "categorical" and len(spec.get("categories", ())) >= 1:
            k = len(spec["categories"])
            values = (0.0,) if k == 1 else tuple((np.arange(k) / (k - 1)).tolist())
            columns.append(Column(spec.get("name", f"c{i}"), values=values))
        elif "domain" in meta:
            columns.append(Column(spec.get("name", f"c{i}"), edges=_equal_width(0.0, 1.0, bins)))
        else:
            columns.append(
                Column(
                    spec.get("name", f"c{i}"),
                    edges=_equal_width(float(flat[:, i].min()), float(flat[:, i].max()), bins),
                )
            )
    columns.append(Column("label", values=tuple(float(c) for c in range(n_classes))))
    return Discretizer(tuple(columns), record_shape)
