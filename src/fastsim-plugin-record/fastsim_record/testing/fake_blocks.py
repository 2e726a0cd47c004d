"""The fake Core's pending block of ticks (``fake_bus`` module doc, contract BK1-BK8).

``PendingBlock`` holds the packed rows of the ticks stamped since the last flush, with
their ticks and simulation times; the bus calls it under its lock and delivers what
``take`` returns.  ``packed_layout`` is the Run's one ``PackedLayout``: the plan's channels
in plan order, little-endian, back to back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from fastsim_contract.values import (
    ChannelDescriptor,
    Envelope,
    ObservationBlock,
    PackedLayout,
    SourceKind,
)
from fastsim_recording_format.encoding import readonly

__all__ = ["PendingBlock", "pack_row", "packed_layout"]


def packed_layout(channels: Sequence[ChannelDescriptor], names: Sequence[str]) -> PackedLayout | None:
    """The plan's ``names`` packed in plan order (``None``: none, or one is undeclared)."""
    declared = {c.name: c for c in channels}
    if not names or any(name not in declared for name in names):
        return None
    return PackedLayout(tuple(
        (np.dtype(declared[n].dtype).newbyteorder("<").str, tuple(declared[n].shape)) for n in names
    ))


def pack_row(names: Sequence[str], layout: PackedLayout, values: Mapping[str, object]) -> bytes | None:
    """One tick's values as one packed row, or ``None`` when a value lacks its exact dtype
    and shape (such a tick goes out per channel, as without packing)."""
    parts = []
    for name, (dtype, shape) in zip(names, layout.fields, strict=True):
        value = np.asarray(values.get(name))
        if value.dtype != np.dtype(dtype) or value.shape != shape:
            return None
        parts.append(np.ascontiguousarray(value).tobytes())
    return b"".join(parts)


@attrs.define(eq=False)
class PendingBlock:
    """The rows of the block being filled (at most ``size`` ticks of one generation)."""

    channels: tuple[str, ...]
    layout: PackedLayout
    size: int  # k: the Run's block bound
    _rows: list[bytes] = attrs.field(factory=list)
    _ticks: list[int] = attrs.field(factory=list)
    _times: list[int] = attrs.field(factory=list)
    _first: tuple[int, int, int] = (0, 0, 0)  # global sequence, capture sequence, generation

    def row(self, values: Mapping[str, object]) -> bytes | None:
        """One tick's packed row (``pack_row``)."""
        return pack_row(self.channels, self.layout, values)

    def add(self, row: bytes, global_sequence: int, capture: int, generation: int, tick: int, sim_time_ns: int) -> bool:
        """BK1: one stamped tick's row; True when the block is full (BK4)."""
        if not self._rows:
            self._first = (global_sequence, capture, generation)
        self._rows.append(row)
        self._ticks.append(tick)
        self._times.append(sim_time_ns)
        return len(self._rows) >= self.size

    def take(self) -> Envelope | None:
        """The pending ticks as one stamped block envelope (the first tick's sequences, tick
        and time; channel sequences are the ticks, as the fake's per-tick samples), or ``None``."""
        rows = self._rows
        if not rows:
            return None
        k = len(rows)
        first, capture, generation = self._first
        ticks = readonly(np.array(self._ticks, np.int64))
        times = readonly(np.array(self._times, np.int64))
        buffer = np.frombuffer(b"".join(rows), np.uint8).reshape(k, self.layout.nbytes)  # read-only
        block = ObservationBlock(capture, self.channels, self.layout, buffer, ticks, times, self._ticks[0])
        self._rows, self._ticks, self._times = [], [], []
        return Envelope(first, SourceKind.OBSERVATION, generation, int(ticks[0]), int(times[0]), block, None, capture)
