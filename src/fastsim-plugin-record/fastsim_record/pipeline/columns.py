"""The worker's run builder: a drained lane -> captured items and ``CapturedRun`` values.

The writer worker drains each lane as held (``Lane.drain_held``: carriers are not built)
and hands the list here.  Runs of carriers of one converter whose stream has a
``ColumnEncoder`` (the numeric-tick stream) are encoded column-wise at once and cut into
``CapturedRun`` values over contiguous global and capture sequences; everything else is
built into its ``CapturedItem`` as before.

    | # | drained items                                    | out                        |
    |---|--------------------------------------------------|----------------------------|
    | 1 | no stream has a column encoder                   | each built (``materialize``)|
    | 1b| carriers of several sources, none of a stream     | each built, at once (no run|
    |   | with a column encoder (a critical lane's command  | per change of source); a   |
    |   | events, issued and applied in turn; no block)     | lane found to hold one     |
    |   |                                                   | takes rows 2-4 from then on|
    | 2 | a run of carriers of one converter whose stream   | ``encode_columns``; cut at |
    |   | has a column encoder (one carrier too: a lone     | every break of the global  |
    |   | tick's record metadata then does not depend on    | or capture sequence into   |
    |   | when the worker drained, issue 26)                | ``CapturedRun`` values     |
    | 2b| ... apart: no carrier of it follows the stream's  | all but the last built;    |
    |   | previous one in the global sequence (a driven     | the last as row 2 (a run   |
    |   | Run's ticks, each after its two command events)   | of one)                    |
    | 3 | ... the encoder answers ``None`` (drift, another  | each built: the per-record |
    |   | payload form)                                     | path names the problem     |
    | 4 | anything else (a barrier, a camera item, a        | built                      |
    |   | carrier of another stream)                        |                            |
    | 5 | a block carrier (an ``ObservationBlock`` envelope, | ONE ``CapturedRun`` of its |
    |   | issue 26) of a stream whose encoder has           | ``k`` ticks: the encoder's |
    |   | ``encode_block``                                   | ``encode_block``           |
    | 6 | ... no such encoder, or it answers ``None``       | its ``k`` ticks, each built|
    |   | (another layout)                                  | (``block.tick(i)``)        |

Row 2b (perf42) writes the bytes row 2 would.  Row 2 would cut such a run into runs of one
record; a run of one goes to the file as one block of its own only when the records next
to it in the batch are other runs of its stream (``fsr_columns``: adjacent runs become
ONE block), else as the row it stands for, with the metadata the per-record path gives
the tick (``{"channel_sequence": n}``).  Every global sequence of a Run reaches the
worker (a record, or a gap record for a loss), so the records next to a tick in a batch
are its global neighbours: a tick apart from the stream's previous and next ones in the
global sequence is written as a row either way.  The previous one is known (the
builder keeps each stream's last global sequence); the next one is not, for a run's
last carrier, which therefore takes row 2.  Row 2b skips the columns, their one-record
parts and the runs, built per tick for nothing.

The order of the drained list is kept.  Finding blocks costs nothing on the columnar
path: a run that starts with one is checked by one ``is``, and a block later in a run makes
``encode_columns`` answer ``None``, whose per-record path looks for blocks first.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np

from fastsim_contract.values import Envelope, ObservationBlock
from fastsim_record.core.captured import CapturedItem, CapturedRun
from fastsim_record.ports.sinks import ColumnEncoder, RecordColumns

__all__ = ["RunBuilder"]

_KIND = operator.attrgetter("source")  # a carrier's contract kind: one converter per kind and lane
_PAYLOAD_CLASS = operator.attrgetter("payload.__class__")  # a lane item's payload class (rows 5-6)
_GLOBAL = operator.attrgetter("global_sequence")
_STREAM = operator.attrgetter("stream")
_BLOCK = ObservationBlock


class RunBuilder:
    """Rows 1-4 of the module table; the writer worker's alone."""

    def __init__(self, encoders: Mapping[str, Any]) -> None:
        self._encoders: dict[str, ColumnEncoder] = {
            stream: encoder for stream, encoder in encoders.items() if hasattr(encoder, "encode_columns")
        }
        self._blocks: dict[str, Callable[[Any], RecordColumns | None]] = {
            stream: encoder.encode_block for stream, encoder in self._encoders.items() if hasattr(encoder, "encode_block")
        }
        self.runs = 0  # runs formed (the columnar path's reach, for tests and benchmarks)
        self.apart = 0  # ticks built by row 2b (tests and benchmarks)
        self.plain = 0  # events built by row 1b (tests and benchmarks)
        self._last: dict[str, int] = {}  # stream -> the global sequence of its last carrier here (row 2b)
        #: row 1b: the lanes (their converters, ``materialize.__self__``) found to carry a
        #: stream with a column encoder among other sources
        self._mixed: set[object] = set()
        #: (the lane's converters, a carrier kind) -> the source, stream and lane its items carry
        self._identities: dict[tuple[object, object], tuple[str, str, Any]] = {}

    def split(self, items: list[Any], materialize: Callable[[Any], CapturedItem]) -> list[CapturedItem | CapturedRun]:
        """The drained ``items`` of a lane whose ``materialize`` is given, as captured items and runs, in order."""
        if not items:
            return []
        if not self._encoders:  # row 1 (and 6)
            if list(map(_PAYLOAD_CLASS, items)).count(_BLOCK):
                return self._with_blocks(items, materialize)
            return list(map(materialize, items))
        if list(map(type, items)).count(Envelope) == len(items) and (
            (kinds := list(map(_KIND, items))).count(kinds[0]) == len(items)
        ):  # ``list.count``: identity first, one C-level pass each
            return self._run(items, materialize)  # the common case: one source's ticks
        owner = getattr(materialize, "__self__", None)  # the lane's converters (row 1b)
        if owner is not None and owner not in self._mixed and not list(map(_PAYLOAD_CLASS, items)).count(_BLOCK):
            built: list[CapturedItem | CapturedRun] = list(map(materialize, items))  # row 1b: events of several sources, each built
            if set(map(_STREAM, built)).isdisjoint(self._encoders):
                self.plain += len(built)
                return built
            self._mixed.add(owner)  # a stream with a column encoder: this lane takes rows 2-4 from now on
        out: list[CapturedItem | CapturedRun] = []
        group: list[Any] = []
        for item in items:  # row 4: barriers and other sources break runs
            if item.__class__ is Envelope and (not group or item.source is group[0].source):
                group.append(item)
                continue
            if group:
                out.extend(self._run(group, materialize))
                group = []
            if item.__class__ is Envelope:
                group.append(item)
            else:
                out.append(item)
        if group:
            out.extend(self._run(group, materialize))
        return out

    def _run(self, carriers: list[Any], materialize: Callable[[Any], CapturedItem]) -> list[CapturedItem | CapturedRun]:
        if carriers[0].payload.__class__ is _BLOCK:  # rows 5-6 (a block path drains blocks)
            return self._with_blocks(carriers, materialize)
        first = materialize(carriers[0])
        stream = first.stream
        encoder = self._encoders.get(stream)
        if encoder is None:  # rows 1 and 4 (a block later in the run: row 6)
            if len(carriers) > 1 and list(map(_PAYLOAD_CLASS, carriers)).count(_BLOCK):
                return self._with_blocks(carriers, materialize)
            return [first, *map(materialize, carriers[1:])]
        numbers = list(map(_GLOBAL, carriers))
        if len(carriers) > 1 and self._apart(stream, numbers) and not list(map(_PAYLOAD_CLASS, carriers)).count(_BLOCK):
            self._last[stream] = numbers[-1]  # row 2b
            built: list[CapturedItem | CapturedRun] = [first, *map(materialize, carriers[1:-1])]
            self.apart += len(built)
            built.extend(self._columns(encoder, carriers[-1:], materialize(carriers[-1]), materialize))
            return built
        columns = encoder.encode_columns(carriers)
        if columns is None:  # row 3 (a block later in the run: rows 5-6)
            if len(carriers) > 1 and list(map(_PAYLOAD_CLASS, carriers)).count(_BLOCK):
                return self._with_blocks(carriers, materialize)
            self._last[stream] = numbers[-1]
            return [first, *map(materialize, carriers[1:])]
        self._last[stream] = numbers[-1]
        return self._cut(columns, first)

    def _apart(self, stream: str, numbers: list[int]) -> bool:
        """Row 2b: no global sequence in ``numbers`` follows the one before it (the first:
        the stream's last carrier here); one C-level pass."""
        previous = self._last.get(stream)
        return (previous is None or numbers[0] - previous != 1) and 1 not in map(operator.sub, numbers[1:], numbers)

    def _columns(
        self, encoder: ColumnEncoder, carriers: list[Any], first: CapturedItem, materialize: Callable[[Any], CapturedItem]
    ) -> list[CapturedItem | CapturedRun]:
        """Rows 2-3 of ``carriers`` (no block among them), ``first`` the first built."""
        columns = encoder.encode_columns(carriers)
        if columns is None:
            return [first, *map(materialize, carriers[1:])]
        return self._cut(columns, first)

    def _cut(self, columns: RecordColumns, first: CapturedItem) -> list[CapturedItem | CapturedRun]:
        """Row 2: ``columns`` cut at every break of the global or capture sequence."""
        g, c = columns.global_sequence, columns.stream_sequence
        n = len(g)
        if g.item(-1) - g.item(0) == n - 1 and c.item(-1) - c.item(0) == n - 1 and not (
            np.count_nonzero(g[1:] <= g[:-1]) or np.count_nonzero(c[1:] <= c[:-1])
        ):  # the common case: one unbroken run (ends n - 1 apart, strictly increasing)
            bounds = [0, n]
        else:
            cuts = np.flatnonzero((np.diff(g) != 1) | (np.diff(c) != 1)) + 1
            bounds = [0, *cuts.tolist(), n]
        out: list[CapturedItem | CapturedRun] = []
        for start, stop in itertools.pairwise(bounds):
            out.append(CapturedRun(
                source=first.source, stream=first.stream, lane=first.lane, generation=columns.generation,
                first_global=int(g[start]), last_global=int(g[stop - 1]),
                first_capture=int(c[start]), last_capture=int(c[stop - 1]),
                payload=columns.part(start, stop) if (start, stop) != (0, n) else columns,
            ))
        self.runs += len(out)
        return out

    def _with_blocks(self, items: list[Any], materialize: Callable[[Any], CapturedItem]) -> list[CapturedItem | CapturedRun]:
        """Rows 5-6 for each block carrier in ``items``; the runs between them as above."""
        out: list[CapturedItem | CapturedRun] = []
        group: list[Any] = []
        for item in items:
            if item.payload.__class__ is not _BLOCK:
                group.append(item)
                continue
            if group:
                out.extend(self._run(group, materialize))
                group = []
            out.extend(self._block(item, materialize))
        if group:
            out.extend(self._run(group, materialize))
        return out

    def _identity(self, carrier: Any, materialize: Callable[[Any], CapturedItem]) -> tuple[str, str, Any]:
        """A block carrier's source, stream and lane: what its lane's converter for the
        carrier's kind builds into every item, so kept per (lane converters, kind) from
        the first one built (a converter never changes once registered: ``LaneConverters.register``)."""
        key = (getattr(materialize, "__self__", materialize), carrier.source)
        known = self._identities.get(key)
        if known is None:
            first = materialize(carrier)
            if len(self._identities) >= 64:  # a Run has a handful; anything else stays bounded
                self._identities.clear()
            known = self._identities[key] = (first.source, first.stream, first.lane)
        return known

    def _block(self, carrier: Any, materialize: Callable[[Any], CapturedItem]) -> list[CapturedItem | CapturedRun]:
        """Row 5 (one run of the block's ticks), or row 6 (each tick built)."""
        block: ObservationBlock = carrier.payload
        if carrier.__class__ is Envelope:  # a carrier: its sequences and generation as its first tick's
            source, stream, lane = self._identity(carrier, materialize)
            g, c, generation = carrier.global_sequence, carrier.source_sequence, carrier.generation
        else:  # already built
            source, stream, lane = carrier.source, carrier.stream, carrier.lane
            g, c, generation = carrier.global_sequence, carrier.capture_sequence, carrier.generation
        encode = self._blocks.get(stream)
        columns = encode(carrier) if encode is not None else None
        k = len(block.ticks)
        if stream in self._encoders:  # row 2b's previous carrier: the block's last tick
            self._last[stream] = g + k - 1
        if columns is None:  # row 6: the per-record path names any drift
            first = materialize(carrier)  # the block's first tick
            ticks, times, chan = block.ticks.tolist(), block.sim_time_ns.tolist(), block.channel_sequence
            return [attrs.evolve(
                first, global_sequence=g + i, capture_sequence=c + i, tick=ticks[i], sim_time_ns=times[i],
                channel_sequence=chan + i, payload=block.tick(i),
            ) for i in range(k)]
        self.runs += 1
        return [CapturedRun(
            source=source, stream=stream, lane=lane, generation=generation,
            first_global=g, last_global=g + k - 1, first_capture=c, last_capture=c + k - 1, payload=columns,
        )]
