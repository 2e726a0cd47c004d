"""The worker's run builder: a drained lane -> captured items and ``CapturedRun`` values.

The writer worker drains each lane as held (``Lane.drain_held``: carriers are not built)
and hands the list here.  Runs of carriers of one converter whose stream has a
``ColumnEncoder`` (the numeric-tick stream) are encoded column-wise at once and cut into
``CapturedRun`` values over contiguous global and capture sequences; everything else is
built into its ``CapturedItem`` as before.

    | # | drained items                                    | out                        |
    |---|--------------------------------------------------|----------------------------|
    | 1 | no stream has a column encoder                   | each built (``materialize``)|
    | 2 | a run of carriers of one converter whose stream   | ``encode_columns``; cut at |
    |   | has a column encoder                              | every break of the global  |
    |   |                                                   | or capture sequence into   |
    |   |                                                   | ``CapturedRun`` values     |
    | 3 | ... the encoder answers ``None`` (drift, another  | each built: the per-record |
    |   | payload form)                                     | path names the problem     |
    | 4 | anything else (a barrier, a camera item, a        | built                      |
    |   | carrier of another stream)                        |                            |

The order of the drained list is kept.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from fastsim_contract.values import Envelope
from fastsim_record.core.captured import CapturedItem, CapturedRun
from fastsim_record.ports.sinks import ColumnEncoder

__all__ = ["RunBuilder"]

_KIND = operator.attrgetter("source")  # a carrier's contract kind: one converter per kind and lane


class RunBuilder:
    """Rows 1-4 of the module table; the writer worker's alone."""

    def __init__(self, encoders: Mapping[str, Any]) -> None:
        self._encoders: dict[str, ColumnEncoder] = {
            stream: encoder for stream, encoder in encoders.items() if hasattr(encoder, "encode_columns")
        }
        self.runs = 0  # runs formed (the columnar path's reach, for tests and benchmarks)

    def split(self, items: list[Any], materialize: Callable[[Any], CapturedItem]) -> list[CapturedItem | CapturedRun]:
        """The drained ``items`` of a lane whose ``materialize`` is given, as captured items and runs, in order."""
        if not items:
            return []
        if not self._encoders:  # row 1
            return list(map(materialize, items))
        if list(map(type, items)).count(Envelope) == len(items) and (
            (kinds := list(map(_KIND, items))).count(kinds[0]) == len(items)
        ):  # ``list.count``: identity first, one C-level pass each
            return self._run(items, materialize)  # the common case: one source's ticks
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
        first = materialize(carriers[0])
        encoder = self._encoders.get(first.stream)
        columns = encoder.encode_columns(carriers) if encoder is not None and len(carriers) > 1 else None
        if columns is None:  # rows 1 and 3
            return [first, *map(materialize, carriers[1:])]
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
