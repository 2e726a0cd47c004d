"""Running per-element statistics for LeRobot's ``meta/stats.json`` (one pass, bounded memory)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["RunningStats"]


class RunningStats:
    """min, max, mean, std and count of rows ``(n, k)`` added in pieces."""

    def __init__(self) -> None:
        self.count = 0
        self._sum: npt.NDArray[np.float64] | None = None
        self._sq: npt.NDArray[np.float64] | None = None
        self._min: npt.NDArray[np.float64] | None = None
        self._max: npt.NDArray[np.float64] | None = None

    def add(self, rows: npt.NDArray[Any]) -> None:
        """Add ``rows`` (n, k)."""
        x = np.asarray(rows, np.float64)
        if len(x) == 0:
            return
        s, q, lo, hi = x.sum(0), (x * x).sum(0), x.min(0), x.max(0)
        if self._sum is None or self._sq is None or self._min is None or self._max is None:
            self._sum, self._sq, self._min, self._max = s, q, lo, hi
        else:
            self._sum, self._sq = self._sum + s, self._sq + q
            self._min, self._max = np.minimum(self._min, lo), np.maximum(self._max, hi)
        self.count += len(x)

    def to_json(self, *, image: bool = False) -> dict[str, Any]:
        """The statistics as lists; ``image`` shapes them ``(3, 1, 1)`` as LeRobot does."""
        if self._sum is None or self._sq is None or self._min is None or self._max is None:
            return {"count": [0]}
        mean = self._sum / self.count
        std = np.sqrt(np.maximum(self._sq / self.count - mean * mean, 0.0))

        def shape(v: npt.NDArray[np.float64]) -> Any:
            return v.reshape(3, 1, 1).tolist() if image else v.tolist()

        return {"min": shape(self._min), "max": shape(self._max), "mean": shape(mean), "std": shape(std),
                "count": [self.count]}
