"""Joint counts and mutual information of integer-coded records (PrivBayes' and Ryan's selection steps)."""

from __future__ import annotations

import numpy as np


def mutual_information_table(counts: np.ndarray) -> float:
    """I(row variable; column variable) in nats of a joint count table (sklearn's mutual_info_score)."""
    joint = np.asarray(counts, dtype=np.float64)
    joint = joint / joint.sum()
    pc, pp = joint.sum(axis=0), joint.sum(axis=1)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log(joint[nz] / np.outer(pp, pc)[nz])))


class JointCounter:
    """Joint counts of (child, parents) candidates: popcounts of bit planes for small domains, bincount otherwise.

    A bit plane per (attribute, value) holds the records with that value, 64 per word; the count of a
    cell (u, v1, ..., vk) is popcount(plane[child, u] & plane[p1, v1] & ...), vectorised over every
    candidate of the same domain shape. Tables with more than `POPCOUNT_CELLS` cells use bincount on
    column-major codes.
    """

    POPCOUNT_CELLS = 64

    def __init__(self, codes: np.ndarray, sizes: np.ndarray) -> None:
        self.codes = np.asfortranarray(codes)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        n, d = codes.shape
        small = self.sizes <= 16
        width = -(-n // 64)
        self.planes = np.zeros((d, int(self.sizes[small].max(initial=1)), width), dtype=np.uint64)
        for a in np.flatnonzero(small):
            for v in range(self.sizes[a]):
                packed = np.packbits(self.codes[:, a] == v, bitorder="little")
                self.planes[a, v] = np.pad(packed, (0, width * 8 - len(packed))).view(np.uint64)

    def tables(self, candidates: list[tuple[int, tuple[int, ...]]]) -> list[np.ndarray]:
        """[parent cells, child cells] count table of every candidate (parents combined in C order)."""
        out: list[np.ndarray | None] = [None] * len(candidates)
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, (child, parents) in enumerate(candidates):
            groups.setdefault(tuple(int(self.sizes[a]) for a in (*parents, child)), []).append(i)
        for shape, members in groups.items():
            if int(np.prod(shape)) <= self.POPCOUNT_CELLS and max(shape) <= self.planes.shape[1]:
                for i, table in zip(members, self._popcount([candidates[i] for i in members], shape)):
                    out[i] = table
            else:
                for i in members:
                    child, parents = candidates[i]
                    joint, size = combine(self.codes, parents, self.sizes)
                    counts = np.bincount(joint * shape[-1] + self.codes[:, child], minlength=size * shape[-1])
                    out[i] = counts.reshape(size, shape[-1])
        return out  # type: ignore[return-value]

    def _popcount(self, group: list[tuple[int, tuple[int, ...]]], shape: tuple[int, ...], chunk: int = 512):
        tables = []
        for start in range(0, len(group), chunk):
            part = group[start : start + chunk]
            attributes = np.array([(*parents, child) for child, parents in part])  # [M, k+1]
            counts = np.zeros((len(part), int(np.prod(shape))), dtype=np.int64)
            for cell, values in enumerate(np.ndindex(*shape)):
                acc = self.planes[attributes[:, 0], values[0]]
                for j in range(1, len(shape)):
                    acc = acc & self.planes[attributes[:, j], values[j]]
                counts[:, cell] = np.bitwise_count(acc).sum(axis=1, dtype=np.int64)
            tables += list(counts.reshape(len(part), -1, shape[-1]))
        return tables


def combine(codes: np.ndarray, columns: tuple[int, ...], sizes: np.ndarray) -> tuple[np.ndarray, int]:
    """One code per record for the joint value of `columns` (C order, first column slowest)."""
    combined = np.zeros(len(codes), dtype=np.int64)
    total = 1
    for c in columns:
        combined = combined * sizes[c] + codes[:, c]
        total *= int(sizes[c])
    return combined, total
