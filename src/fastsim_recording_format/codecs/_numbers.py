"""Plain-number checks the payload codecs share."""

from __future__ import annotations

import math

__all__ = ["finite_floats"]


def finite_floats(values: object, n: int) -> list[float]:
    """``values`` as exactly ``n`` finite floats.

    Raises ``ValueError("<n> numbers")`` when they are not numbers and
    ``ValueError("<n> finite numbers")`` when there are not ``n`` finite ones, so each
    codec words its own one-line error around what was expected.
    """
    try:
        out = [float(v) for v in values]  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise ValueError(f"{n} numbers") from None
    if len(out) != n or not all(math.isfinite(v) for v in out):
        raise ValueError(f"{n} finite numbers")
    return out
