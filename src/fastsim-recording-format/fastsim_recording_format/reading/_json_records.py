"""JSON record streams (events, lifecycle, control) of a recording or episode, one part of
a view (see ``_recording``)."""

from __future__ import annotations

import json

from fastsim_recording_format import FormatError
from fastsim_recording_format.reading._file import Scope
from fastsim_recording_format.reading._values import Event

__all__ = ["JsonRecords"]


class JsonRecords:
    """A view's JSON streams, decoded into :class:`Event` values."""

    __slots__ = ("_scope",)

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def read(self, kind: str) -> tuple[Event, ...]:
        """Every DATA record of the streams of ``kind``, JSON-decoded, in recording order."""
        f = self._scope.file()
        out: list[Event] = []
        for spec in f.streams.values():
            if spec.kind != kind:
                continue
            rows = self._scope.data_rows(spec)
            read = f.tables.read
            for at, length, t, g, seq in zip(
                rows["payload_at"].tolist(), rows["payload_length"].tolist(), rows["time_ns"].tolist(),
                rows["generation"].tolist(), rows["global_sequence"].tolist(),
            ):
                try:
                    data = json.loads(read(at, length))
                except ValueError as exc:
                    raise FormatError(at, f"{spec.name}: payload is not JSON ({exc})") from None
                if not isinstance(data, dict):
                    raise FormatError(at, f"{spec.name}: payload is not a JSON object")
                out.append(Event(spec.name, t, g, seq, data))
        out.sort(key=lambda e: e.global_sequence)
        return tuple(out)
