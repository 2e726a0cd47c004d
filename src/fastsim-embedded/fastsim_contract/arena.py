"""The tick arena: Core's packed observation ticks in consecutive rows of one block.

A packed observation tick (``PackedValues``) is published over a read-only buffer.  When
Core packs those buffers into an arena, the buffer of the tick with live channel
sequence ``k`` is the arena's slot ``(k - 1) % size``: a read-only array over row
``(k - 1) % size`` of one preallocated block.  A consumer that holds a run of such ticks
can then take their bytes as ONE existing memory range, and their sequences and times as
columns, instead of reading each tick's objects.  The arena is additive: a consumer that
does not know it sees ordinary read-only ``PackedValues`` buffers.

    | #  | rule                                                                        |
    |----|-----------------------------------------------------------------------------|
    | A1 | ``slots[i]`` is a permanent, read-only, C-contiguous array over row ``i``;  |
    |    | numpy bases every view derived from it on the slot's root (a ``frombuffer`` |
    |    | array over a read-only memoryview of the rows, counted too)                 |
    | A2 | Core writes row ``i`` (bytes and column entries) only while no object but   |
    |    | the arena references ``slots[i]`` or its root (reference counts): a tick    |
    |    | buffer never changes while anybody holds it, as ``PackedValues`` promises    |
    | A3 | when slot ``i`` is busy Core publishes a private copy instead (not a slot)   |
    | A4 | column entries of row ``i`` (``global_sequence``, ``capture_sequence``,      |
    |    | ``sim_time_ns``, ``generation``, ``channel_sequence``) are the envelope's    |
    |    | facts of the tick whose buffer is ``slots[i]``, written with it (A2)         |
    | A5 | so a run of live envelopes whose buffers are ``slots[i:j]`` (by identity:   |
    |    | ``ids``) has its bytes in ``payload(i, j)`` and its facts in the columns     |

A consumer keeps a reference to each tick buffer it still needs (A2 then holds the row).
"""

from __future__ import annotations

import sys
from typing import Any, cast

import numpy as np

__all__ = ["TickArena", "tick_arena_of"]

_getrefcount = sys.getrefcount


class _Rows(np.ndarray):
    """The arena's read-only rows; the one array type that can name its arena."""

    tick_arena: TickArena


class TickArena:
    """Rows ``0 .. size-1`` of ``nbytes`` each, their permanent slots and columns (A1-A5)."""

    def __init__(self, size: int, like: Any, channels: tuple[str, ...], layout: object) -> None:
        dtype, shape = like.dtype, tuple(like.shape)
        self.size = size
        self.nbytes = int(like.nbytes)
        self.channels = channels
        self.layout = layout
        self.dtype, self.shape = dtype, shape
        self._block = np.empty((size, self.nbytes), np.uint8)  # private and writable
        self._write_rows = [row.view(dtype).reshape(shape) for row in self._block]
        rows = self._block.view(_Rows)
        rows.flags.writeable = False
        rows.tick_arena = self
        self._flat = memoryview(cast(Any, rows)).toreadonly().cast("B")  # under every slot (A1)
        nb = self.nbytes
        # ``frombuffer`` arrays are the roots: numpy bases every view derived from a slot
        # (a reshape, a slice, a ``view``) on its root, so the root's count sees them all
        self._roots = [np.frombuffer(self._flat[i * nb:(i + 1) * nb], dtype) for i in range(size)]
        self.slots = [root if root.shape == shape else root.reshape(shape) for root in self._roots]
        self.ids = list(map(id, self.slots))
        self.index = {ident: i for i, ident in enumerate(self.ids)}
        self.global_sequence = [0] * size
        self.capture_sequence = [0] * size
        self.sim_time_ns = [0] * size
        self.generation = [0] * size
        self.channel_sequence = [0] * size
        # the references that exist while nobody else holds a slot: the arena's own lists
        # (a reshaped slot's reference to its root) and, as in ``take``, three local names
        # and the argument of ``getrefcount``
        self._views = [root.base for root in self._roots]  # numpy's memoryview under a root
        out, root, view = self.slots[0], self._roots[0], self._views[0]
        self._free = (_getrefcount(out), _getrefcount(root), _getrefcount(view))
        del out, root, view

    def take(self, slot: int, buffer: Any) -> Any:
        """Copy ``buffer`` into row ``slot`` and return the slot, or ``None`` when the
        slot is still referenced (A2, A3) or ``buffer`` does not fit the row."""
        out, root, view = self.slots[slot], self._roots[slot], self._views[slot]
        if (_getrefcount(out), _getrefcount(root), _getrefcount(view)) != self._free:
            return None
        row = self._write_rows[slot]
        if buffer.shape != row.shape or buffer.dtype != row.dtype:
            return None
        row[...] = buffer
        return out

    def take_bytes(self, slot: int) -> Any:
        """Row ``slot`` as a writable uint8 array for a gather copy (``None`` when busy, A2);
        the caller then publishes ``slots[slot]``."""
        out, root, view = self.slots[slot], self._roots[slot], self._views[slot]
        if (_getrefcount(out), _getrefcount(root), _getrefcount(view)) != self._free:
            return None
        return self._block[slot]

    def payload(self, start: int, stop: int) -> memoryview:
        """The bytes of rows ``start .. stop-1`` (no copy)."""
        nb = self.nbytes
        return self._flat[start * nb:stop * nb]


def tick_arena_of(buffer: Any) -> TickArena | None:
    """The arena whose slot ``buffer`` may be (identity decides, A5), or ``None``."""
    base = getattr(buffer, "base", None)
    if base.__class__ is np.ndarray:  # a reshaped slot: its root
        base = base.base
    if base.__class__ is not memoryview:
        return None
    rows: Any = base.obj
    if rows.__class__ is not _Rows:
        return None
    arena: TickArena = rows.tick_arena
    return arena
