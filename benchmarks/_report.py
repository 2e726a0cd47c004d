"""What every benchmark shares: ``--json``, the one JSON line, interleaved medians.

With ``--json`` a benchmark prints, as its LAST line, one JSON object::

    {"benchmark": "bench_worker", "load_average": [1.2, 1.1, 0.9], "passed": true,
     "figures": {"worker_us_per_record": {"value": 2.1, "target": 3.0, "op": "<=", "met": true}, ...}}

Figure names are stable snake_case; ``target``/``op``/``met`` are ``null`` for a figure
without a target (a baseline, a count).  A value that is NaN or infinite (a counter an older
tree lacks, a ratio over zero) is ``null``, and ``met`` is ``false`` when it has a target: the
line is strict JSON (``json.loads`` in any language, ``jq``).  Parameters of the run (steps,
rounds, sizes) sit beside ``figures`` as top-level keys (``Figures.extra``).  The human table
is printed as before.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
from collections.abc import Sequence
from typing import Any

__all__ = ["Figures", "add_json_flag", "load_average", "median_ci"]


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--json`` (print the one JSON line last)."""
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (the machine is shared: say how busy it was)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def median_ci(values: Sequence[float], z: float = 1.96) -> tuple[float, float, float]:
    """Median of ``values`` and a distribution-free ~95% confidence interval for it
    (order statistics of the binomial(n, 1/2) normal approximation)."""
    data = sorted(values)
    n = len(data)
    if n == 0:
        return math.nan, math.nan, math.nan
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return statistics.median(data), data[lo], data[hi]


class Figures:
    """The figures of one benchmark run, each with its target."""

    def __init__(self, benchmark: str) -> None:
        self.benchmark = benchmark
        self._figures: dict[str, dict[str, Any]] = {}
        self.extra: dict[str, Any] = {}

    def add(self, name: str, value: float | int | None, target: float | None = None, op: str | None = None) -> None:
        """One figure; ``op`` is ``<=`` or ``>=`` when there is a target.  A NaN or infinite
        ``value`` is kept as ``None`` (not measured; a target it has is not met)."""
        met = None
        if target is not None and op is not None and value is not None and math.isfinite(float(value)):
            met = bool(value <= target) if op == "<=" else bool(value >= target)
        elif target is not None:
            met = False
        if isinstance(value, float):
            value = round(value, 6) if math.isfinite(value) else None
        self._figures[name] = {
            "value": value,
            "target": target, "op": op, "met": met,
        }

    @property
    def passed(self) -> bool:
        """Every figure with a target met it."""
        return all(f["met"] is not False for f in self._figures.values())

    def line(self) -> str:
        """The one JSON line: strict JSON, NaN and infinities (in ``extra`` too) as ``null``."""
        return json.dumps(_finite({
            "benchmark": self.benchmark, "load_average": load_average(), "passed": self.passed,
            "figures": self._figures, **self.extra,
        }), sort_keys=False, allow_nan=False)

    def emit(self, enabled: bool) -> None:
        """Print the one JSON line (when ``enabled``); NaN and infinite values print as ``null``."""
        if enabled:
            print(self.line())


def _finite(data: Any) -> Any:
    """``data`` with every NaN or infinite float (in dicts, lists and tuples) replaced by ``None``."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(value) for value in data]
    return data
