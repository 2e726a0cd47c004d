"""The worker's record encoder: one released item -> one ``OutRecord``, encoded once.

The writer worker (``worker.py``) releases items in global order and hands each one here
(worker rule 3); nothing here waits, locks or writes.

    | # | released item                  | record                                          |
    |---|--------------------------------|-------------------------------------------------|
    | 1 | a ``GapRecord``                | GAP: accounted in the ``GapLedger``; its time is |
    |   |                                | the stream's previous record time in the gap's  |
    |   |                                | generation, else 0 (FSR gap rule); a camera     |
    |   |                                | stream's gap goes to the camera stage (C8)      |
    | 2 | a barrier                      | BARRIER: the barrier encoder's payload; camera  |
    |   |                                | calibration obligations end at the reset        |
    | 3 | a camera stream's item         | DATA: the camera stage checks and encodes it    |
    | 4 | any other item                 | DATA: its stream's payload encoder; a numeric   |
    |   |                                | tick keeps its ``channel_sequence`` as metadata |
    | 5 | a ``CapturedRun``              | its ``RecordColumns`` (encoded column-wise when  |
    |   |                                | the run was formed: ``columns.RunBuilder``)     |

Every failure raises a ``RecordError``: the stage's or encoder's own, or
``RecordingFailed`` naming the stream for anything unexpected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from fastsim_record.core.captured import CapturedItem, CapturedRun
from fastsim_record.core.gaps import GapLedger, GapRecord
from fastsim_record.errors import RecordError, RecordingFailed
from fastsim_record.pipeline.camera_stage import CameraStage
from fastsim_record.ports.sinks import OutRecord, PayloadEncoder, RecordColumns

__all__ = ["MAX_LOST_DECLARATIONS", "RecordEncoder"]

#: The terminal fence lists at most this many rule-C8 marks (and always their count), so
#: the footer stays bounded; each one is a calibration epoch whose declaration was lost.
MAX_LOST_DECLARATIONS = 1024

_NO_METADATA: Mapping[str, object] = MappingProxyType({})
_record: Callable[[type[OutRecord], tuple[object, ...]], OutRecord] = tuple.__new__


class _Last(NamedTuple):
    """A stream's last record time (what a following gap needs), for a run of records."""

    generation: int
    sim_time_ns: int


class RecordEncoder:
    """Released items to records (module table); the worker thread's alone."""

    def __init__(
        self,
        encoders: Mapping[str, PayloadEncoder],
        barrier_encoder: Callable[[object], bytes],
        camera_stage: CameraStage | None = None,
    ) -> None:
        self._encoders = dict(encoders)
        self._barrier_encoder = barrier_encoder
        self._cameras = camera_stage  # cameras (issue 6): encoded with calibration metadata
        self._camera_streams = (
            frozenset(d.name for d in camera_stage.streams()) if camera_stage else frozenset()
        )
        self._stream_last: dict[str, OutRecord | _Last] = {}  # each stream's last record (gap time)
        self.ledger = GapLedger()
        self.encoded = 0
        self.calibration_violations: tuple[str, ...] = ()

    def gap(self, gap: GapRecord) -> OutRecord:
        """Row 1."""
        self.ledger.record(gap)
        if self._cameras is not None and gap.stream in self._camera_streams:
            self._cameras.lost(gap)
        last = self._stream_last.get(gap.stream)
        sim_time_ns = last.sim_time_ns if last is not None and last.generation == gap.generation else 0
        record = OutRecord(
            gap.stream, "gap", gap.first_global, gap.first_capture, gap.generation, sim_time_ns, b"",
            {"reason": gap.reason.value, "lane": gap.lane.value, "lost": gap.count},
            gap.last_global, gap.last_capture,
        )
        self._stream_last[gap.stream] = record
        return record

    def barrier(self, item: CapturedItem) -> OutRecord:
        """Row 2."""
        if self._cameras is not None:  # calibration obligations end at a reset
            self._cameras.barrier(item.generation)
        record = OutRecord(
            item.stream, "barrier", item.global_sequence, item.capture_sequence, item.generation,
            item.sim_time_ns, self._barrier_encoder(item.payload), {"tick": item.tick},
        )
        self._stream_last[item.stream] = record
        return record

    def data(self, item: CapturedItem) -> tuple[OutRecord, bool]:
        """Rows 3-4: the record, and whether an RGB codec ran (without the GIL)."""
        stream = item.stream
        cameras = self._cameras
        try:
            if cameras is not None and stream in self._camera_streams:
                encoded = cameras.encode(item)
                record = OutRecord(
                    stream, "data", item.global_sequence, item.capture_sequence, item.generation,
                    item.sim_time_ns, encoded.payload, {"tick": item.tick, **encoded.metadata},
                )
                released_gil = encoded.role == "rgb"
            else:
                payload = self._encoders[stream].encode(item.payload)
                chan = item.channel_sequence
                record = _record(OutRecord, (  # the named tuple's fields, without its Python __new__
                    stream, "data", item.global_sequence, item.capture_sequence, item.generation,
                    item.sim_time_ns, payload, {"channel_sequence": chan} if chan is not None else _NO_METADATA, 0, 0,
                ))
                released_gil = False
        except RecordError:
            raise
        except Exception as exc:
            raise RecordingFailed(f"{stream}: encoding failed: {exc!r}") from exc
        self.encoded += 1
        self._stream_last[stream] = record
        return record, released_gil

    def run(self, run: CapturedRun) -> RecordColumns:
        """Row 5."""
        columns: RecordColumns = run.payload  # type: ignore[assignment]
        self.encoded += columns.count
        self._stream_last[run.stream] = _Last(columns.generation, int(columns.sim_time_ns[-1]))
        return columns

    def at_cut(self) -> None:
        """Calibration obligations due at the cut (fence F5)."""
        if self._cameras is not None:
            self.calibration_violations = self._cameras.at_cut()

    def fence_marks(self) -> dict[str, object]:
        """What the terminal fence records besides the decision: rule C8's marks, if any."""
        lost = self._cameras.lost_declarations if self._cameras is not None else ()
        if not lost:
            return {}
        return {"calibration_lost": [
            {"camera": m.camera, "generation": m.generation, "digest": m.digest, "epoch": m.epoch,
             "first_tick": m.first_tick, "ticks": m.ticks}
            for m in lost[:MAX_LOST_DECLARATIONS]
        ], "calibration_lost_count": len(lost)}
