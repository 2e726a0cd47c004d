"""The ``Dataset``'s keys and windows: ticks or seconds, the ``action`` key, the dtype.

    | # | rule                                                                            |
    |---|---------------------------------------------------------------------------------|
    | 1 | a window is a sequence of integer tick offsets, or ``{"ticks": [...]}``, or     |
    |   | ``{"seconds": [...]}`` (LeRobot's ``delta_timestamps``)                        |
    | 2 | a seconds offset ``s`` takes, for a sample at time ``t``, the tick of the same  |
    |   | segment at ``t + s`` (within ``TOLERANCE_S``, LeRobot's ``tolerance_s``); none |
    |   | there (outside the segment, or a gap in the recording): the nearest tick and a  |
    |   | pad flag.  Every offset must be a whole number of the file's tick period (its  |
    |   | median tick interval) within ``TOLERANCE_S``: else ``BadArgument`` at the first |
    |   | sample of that file                                                             |
    | 3 | ``action`` (``Dataset(action=True)``, or ``"<target>.<command>"``) is           |
    |   | ``Recording.actions()`` on the sample clock's ticks, windowed like any key;     |
    |   | ``action_is_pad`` (always present) is true outside the segment or where no      |
    |   | command followed the observation (NaN values); ``action_accepted`` is false for |
    |   | a refused command                                                               |
    | 4 | ``dtype`` (e.g. ``"float32"``) casts every numeric key (channels and action);   |
    |   | ``None`` keeps the recorded dtype                                               |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fastsim_recording_format.encoding import Array
from fastsim_recording_format.reading._errors import BadArgument, unknown

__all__ = ["ACTION", "TOLERANCE_S", "Windows", "action_rows", "float_dtype"]

ACTION = "action"
TOLERANCE_S = 1e-4


def float_dtype(dtype: object) -> np.dtype[Any] | None:
    """The numeric keys' dtype (``None``: as recorded); only floating dtypes."""
    if dtype is None:
        return None
    try:
        out: np.dtype[Any] = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        raise BadArgument(f"dtype must be a floating dtype such as 'float32', got {dtype!r}") from None
    if out.kind != "f":
        raise BadArgument(f"dtype must be a floating dtype such as 'float32', got {dtype!r}")
    return out


def _offsets(name: str, value: object) -> tuple[Array, bool]:
    """``(offsets, in_seconds)`` of one key's window (rule 1)."""
    seconds = False
    if isinstance(value, Mapping):
        if len(value) != 1 or next(iter(value)) not in ("ticks", "seconds"):
            raise BadArgument(f"window[{name!r}] must be a sequence of tick offsets, {{'ticks': [...]}} or "
                              f"{{'seconds': [...]}}, got {value!r}")
        unit, value = next(iter(value.items()))
        seconds = unit == "seconds"
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
        raise BadArgument(f"window[{name!r}] must be a non-empty sequence of offsets, got {value!r}")
    if seconds:
        if not all(isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
                   and np.isfinite(v) for v in value):
            raise BadArgument(f"window[{name!r}] must hold finite offsets in seconds, got {list(value)!r}")
        return np.round(np.asarray(value, np.float64) * 1e9).astype(np.int64), True
    if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value):
        raise BadArgument(f"window[{name!r}] must hold integer tick offsets, got {list(value)!r}")
    return np.asarray(value, np.int64), False


class Windows:
    """Each key's offsets (ticks, or nanoseconds for a seconds window) and the positions
    of a sample's window in its segment."""

    def __init__(self, window: object, keys: tuple[str, ...]) -> None:
        self.windowed = window is not None
        self.offsets: dict[str, Array] = {}
        self.seconds: set[str] = set()
        if window is None:
            self.offsets = {k: np.zeros(1, np.int64) for k in keys}
            return
        if isinstance(window, Mapping):
            extra = sorted(set(window) - set(keys))
            if extra:
                raise unknown("window key", extra[0], keys, "the dataset's channels and cameras are")
            for k in keys:
                self.offsets[k], sec = _offsets(k, window.get(k, [0]))
                if sec:
                    self.seconds.add(k)
        else:
            offsets, sec = _offsets("*", window)
            self.offsets = dict.fromkeys(keys, offsets)
            self.seconds = set(keys) if sec else set()

    def check_period(self, times: Array, path: str) -> None:
        """Rule 2: every seconds offset is a whole number of this file's tick period."""
        if not self.seconds or len(times) < 2:
            return
        steps = np.diff(times)
        steps = steps[steps > 0]
        if not len(steps):
            return
        period = float(np.median(steps))
        tol = TOLERANCE_S * 1e9
        for key in sorted(self.seconds):
            off = self.offsets[key].astype(np.float64)
            bad = np.abs(off - np.round(off / period) * period) > tol
            if bad.any():
                raise BadArgument(f"window[{key!r}]: {off[bad][0] / 1e9:g} s is not a whole number of ticks of "
                                  f"{path} (tick period {period / 1e6:.4g} ms, tolerance {TOLERANCE_S} s)")

    def positions(self, key: str, pos: int, times: Array) -> tuple[Array, Array]:
        """Rows (in the segment) of a sample's window for ``key``, and its pad flags."""
        length = len(times)
        if key not in self.seconds:
            q = pos + self.offsets[key]
            pad = (q < 0) | (q >= length)
            return np.clip(q, 0, length - 1), pad
        target = times[pos] + self.offsets[key]
        q = np.clip(np.searchsorted(times, target), 0, length - 1)
        before = np.clip(q - 1, 0, length - 1)
        q = np.where(np.abs(times[before] - target) < np.abs(times[q] - target), before, q)
        pad = np.abs(times[q] - target) > TOLERANCE_S * 1e9
        return q, pad


def action_rows(recording: Any, command: str | None, clock: str) -> tuple[Array, Array, Array]:
    """``(values (T, n), issued, accepted)`` of a file's actions on its clock ticks (rule 3)."""
    got = recording.actions(command, clock=clock)
    return got.values, got.issued, got.accepted
