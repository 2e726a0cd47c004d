"""Observation samples: one tick's channel values, row-wise or packed, all immutable.

    | # | value                | holds                                                     |
    |---|----------------------|-----------------------------------------------------------|
    | 1 | ``ChannelSample``    | one channel's read-only value in one tick                 |
    | 2 | ``RowViews``         | values that are rows of a few read-only 2-D blocks        |
    | 3 | ``PackedValues``     | every channel back to back in ONE read-only buffer,       |
    |   |                      | described by a shared ``PackedLayout``                    |
    | 4 | ``SampleBlock``      | one tick's samples column-wise (channel names, values, one|
    |   |                      | ``channel_sequence``), equal to the tuple of its samples  |
    | 5 | ``ObservationTick``  | what the ``observations`` source delivers per tick        |
    | 6 | ``ObservationBlock`` | k consecutive packed ticks of one generation, row-wise in |
    |   |                      | ONE read-only 2-D buffer (opt-in: ``max_block``, BK1-BK8) |

The sequences are frozen: their slots are set once (``object.__setattr__`` or, on the
host's hot path, the slot descriptors) and ``__setattr__`` refuses every change.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

import attrs
import numpy as np

__all__ = [
    "ChannelSample",
    "ObservationBlock",
    "ObservationTick", "PackedLayout",
    "PackedValues",
    "RowViews",
    "SampleBlock",
]

_T = TypeVar("_T")


class _FrozenSequence(Sequence[_T], Generic[_T]):
    """A read-only sequence whose item ``i`` is ``_item(i)``; slices are tuples."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    def _item(self, i: int) -> _T:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> _T: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[_T, ...]: ...
    def __getitem__(self, i: int | slice) -> _T | tuple[_T, ...]:
        if isinstance(i, slice):
            return tuple(self)[i]
        return self._item(i)


@attrs.frozen
class ChannelSample:
    """One channel's value in one tick; ``channel_sequence`` is diagnostic only."""

    channel: str
    value: object  # an immutable (read-only) numpy array in practice
    channel_sequence: int


class RowViews(_FrozenSequence[object]):
    """Channel values that are rows of a few read-only 2-D blocks, viewed on access.

    A backend that computes its numeric state as blocks (e.g. all joint positions of all
    entities in one array) lets Core publish one tick without creating one array object
    per channel: ``RowViews(blocks, rows)`` yields ``blocks[b][r]`` for each ``(b, r)``
    in ``rows``.  The blocks are read-only and never mutated, so every view is too.
    """

    __slots__ = ("blocks", "rows")
    blocks: tuple[Any, ...]
    rows: tuple[tuple[int, int], ...]

    def __init__(self, blocks: tuple[Any, ...], rows: tuple[tuple[int, int], ...]) -> None:
        object.__setattr__(self, "blocks", blocks)
        object.__setattr__(self, "rows", rows)

    def __len__(self) -> int:
        return len(self.rows)

    def _item(self, i: int) -> object:
        block, row = self.rows[i]
        return self.blocks[block][row]

    def __iter__(self) -> Iterator[object]:
        blocks = self.blocks
        for block, row in self.rows:
            yield blocks[block][row]

    def __repr__(self) -> str:
        return f"RowViews({len(self.rows)} rows of {len(self.blocks)} blocks)"


@attrs.frozen
class PackedLayout:
    """Where each channel of a packed tick lives: channels back to back, no padding.

    ``fields`` is one ``(dtype, shape)`` per channel in sample order; ``dtype`` is a
    numpy dtype string with its byte order (``"<f8"``), ``shape`` one sample's shape.
    Channel ``i`` occupies ``offsets[i]`` .. ``offsets[i] + prod(shape) * itemsize`` in
    C order; ``nbytes`` is the whole tick.  Core builds one layout per Run and shares it
    across ticks, so a consumer can check it once and then compare by identity.
    """

    fields: tuple[tuple[str, tuple[int, ...]], ...]
    offsets: tuple[int, ...] = attrs.field(init=False)
    nbytes: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        offsets: list[int] = []
        at = 0
        for dtype, shape in self.fields:
            offsets.append(at)
            at += math.prod(shape) * np.dtype(dtype).itemsize
        object.__setattr__(self, "offsets", tuple(offsets))
        object.__setattr__(self, "nbytes", at)


class PackedValues(_FrozenSequence[object]):
    """Channel values of one tick packed into ONE read-only buffer (``PackedLayout``).

    ``buffer`` is a read-only, C-contiguous numpy array of exactly ``layout.nbytes``
    bytes that nobody mutates afterwards; the whole tick is ``buffer.tobytes()``.  Item
    ``i`` is a read-only array view of channel ``i`` (made on access).  A backend that
    keeps its numeric state packed lets Core publish a 90-channel tick as one buffer,
    and a consumer encode it with one copy.
    """

    __slots__ = ("buffer", "layout")
    buffer: Any
    layout: PackedLayout

    def __init__(self, buffer: Any, layout: PackedLayout) -> None:
        if buffer.nbytes != layout.nbytes:
            raise ValueError(f"PackedValues: buffer has {buffer.nbytes} bytes, layout {layout.nbytes}")
        object.__setattr__(self, "buffer", buffer)
        object.__setattr__(self, "layout", layout)

    def __len__(self) -> int:
        return len(self.layout.fields)

    def _item(self, i: int) -> object:
        dtype, shape = self.layout.fields[i]
        raw = self.buffer.reshape(-1).view(np.uint8)
        return np.frombuffer(raw, dtype=dtype, count=math.prod(shape), offset=self.layout.offsets[i]).reshape(shape)

    def __iter__(self) -> Iterator[object]:
        for i in range(len(self.layout.fields)):
            yield self._item(i)

    def __repr__(self) -> str:
        return f"PackedValues({len(self.layout.fields)} channels, {self.layout.nbytes} bytes)"


class SampleBlock(_FrozenSequence[ChannelSample]):
    """The samples of one tick, stored column-wise: immutable, materialized on access.

    A Core publishing many channels per tick builds one ``SampleBlock`` (the plan's
    shared channel-name tuple, a sequence of read-only values -- a tuple or
    :class:`RowViews` -- and one ``channel_sequence``)
    instead of one :class:`ChannelSample` object per channel.  It is a read-only
    ``Sequence[ChannelSample]`` equal to the tuple of its samples; consumers on a hot path
    read ``channels`` and ``values`` directly.
    """

    __slots__ = ("channel_sequence", "channels", "values")
    channels: tuple[str, ...]
    values: Sequence[object]
    channel_sequence: int

    def __init__(self, channels: tuple[str, ...], values: Sequence[object], channel_sequence: int) -> None:
        if len(channels) != len(values):
            raise ValueError(f"SampleBlock: {len(channels)} channels but {len(values)} values")
        object.__setattr__(self, "channels", channels)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "channel_sequence", channel_sequence)

    def __len__(self) -> int:
        return len(self.channels)

    def _item(self, index: int) -> ChannelSample:
        return ChannelSample(self.channels[index], self.values[index], self.channel_sequence)

    def __iter__(self) -> Iterator[ChannelSample]:
        seq = self.channel_sequence
        for channel, value in zip(self.channels, self.values):
            yield ChannelSample(channel, value, seq)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.channels, self.channel_sequence))

    def __repr__(self) -> str:
        return f"SampleBlock({len(self.channels)} channels, channel_sequence={self.channel_sequence})"


@attrs.frozen
class ObservationTick:
    """All selected numeric channels of one tick: one atomic record.

    ``samples`` is a tuple of :class:`ChannelSample` or a :class:`SampleBlock` (the
    embedded host publishes blocks); ``channels``/``values`` read either form without
    materializing per-channel objects.
    """

    capture_sequence: int
    samples: Sequence[ChannelSample]

    @property
    def channels(self) -> tuple[str, ...]:
        """Channel names in sample order."""
        if isinstance(self.samples, SampleBlock):
            return self.samples.channels
        return tuple(s.channel for s in self.samples)

    @property
    def values(self) -> Sequence[object]:
        """Sample values in sample order."""
        if isinstance(self.samples, SampleBlock):
            return self.samples.values
        return tuple(s.value for s in self.samples)


class ObservationBlock:
    """``count`` consecutive packed ticks of ONE generation, delivered as one payload.

    A subscriber that passes ``max_block > 1`` to ``subscribe("observations", ...)`` may
    receive this instead of ``count`` :class:`ObservationTick` envelopes (contract section 4,
    rules BK1-BK8).  The envelope carrying it holds the FIRST tick's global sequence,
    source (capture) sequence, tick and simulation time; the block covers global sequences
    ``global_sequence .. global_sequence + count - 1`` and capture sequences
    ``capture_sequence .. capture_sequence + count - 1``.

    * ``buffer``: read-only, C-contiguous ``uint8`` array of shape ``(count, layout.nbytes)``;
      row ``i`` holds exactly the bytes tick ``i``'s ``PackedValues.buffer`` would hold.
    * ``ticks``, ``sim_time_ns``: read-only ``int64`` arrays of length ``count``
      (``sim_time_ns`` non-decreasing).
    * ``channel_sequence``: the first tick's diagnostic channel sequence; tick ``i`` has
      ``channel_sequence + i``.
    * ``channels``/``layout``: the plan's channel tuple and the Run's one ``PackedLayout``
      (shared by identity with the per-tick form).

    Nobody mutates any of it afterwards.  ``tick(i)`` materializes tick ``i`` as the
    :class:`ObservationTick` the per-tick form delivers (over a row view, no copy).
    """

    __slots__ = ("buffer", "capture_sequence", "channel_sequence", "channels", "layout", "sim_time_ns", "ticks")
    capture_sequence: int
    channels: tuple[str, ...]
    layout: PackedLayout
    buffer: Any
    ticks: Any
    sim_time_ns: Any
    channel_sequence: int

    def __init__(
        self,
        capture_sequence: int,
        channels: tuple[str, ...],
        layout: PackedLayout,
        buffer: Any,
        ticks: Any,
        sim_time_ns: Any,
        channel_sequence: int,
    ) -> None:
        count = len(ticks)
        if count < 1:
            raise ValueError("ObservationBlock: a block holds at least one tick")
        if len(sim_time_ns) != count:
            raise ValueError(f"ObservationBlock: {count} ticks but {len(sim_time_ns)} times")
        if buffer.ndim != 2 or buffer.shape[0] != count or buffer.nbytes != count * layout.nbytes:
            raise ValueError(
                f"ObservationBlock: buffer shape {buffer.shape} is not ({count}, {layout.nbytes} bytes)"
            )
        if len(channels) != len(layout.fields):
            raise ValueError(f"ObservationBlock: {len(channels)} channels but {len(layout.fields)} layout fields")
        for name, value in (
            ("capture_sequence", capture_sequence),
            ("channels", channels),
            ("layout", layout),
            ("buffer", buffer),
            ("ticks", ticks),
            ("sim_time_ns", sim_time_ns),
            ("channel_sequence", channel_sequence),
        ):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    @property
    def count(self) -> int:
        """The number of ticks (``k``)."""
        return len(self.ticks)

    def __len__(self) -> int:
        return len(self.ticks)

    def tick(self, i: int) -> ObservationTick:
        """Tick ``i`` as the per-tick form delivers it (a row view, no copy)."""
        if not 0 <= i < len(self.ticks):
            raise IndexError(f"ObservationBlock: tick {i} of {len(self.ticks)}")
        values = PackedValues(self.buffer[i], self.layout)
        return ObservationTick(
            self.capture_sequence + i, SampleBlock(self.channels, values, self.channel_sequence + i)
        )

    def __repr__(self) -> str:
        return (
            f"ObservationBlock({len(self.ticks)} ticks from capture_sequence={self.capture_sequence}, "
            f"{self.layout.nbytes} bytes each)"
        )
