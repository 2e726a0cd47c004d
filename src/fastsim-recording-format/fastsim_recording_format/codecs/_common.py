"""What the payload codecs share: their one-line error raiser and plain-number checks."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NoReturn

from fastsim_recording_format.errors import PayloadError

__all__ = ["failing", "finite_floats"]


def failing(error: type[PayloadError], stream: str) -> Callable[[str], NoReturn]:
    """The codec's ``fail(message)``: raise ``error("<stream>: <message>")``."""

    def fail(message: str) -> NoReturn:
        raise error(f"{stream}: {message}")

    return fail


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
