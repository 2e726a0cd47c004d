"""What the composition root built for one Record instance, as one frozen value.

:func:`fastsim_record.bootstrap.wire` returns a :class:`Wiring`; ``RecordPlugin`` holds it
as ``plugin.wiring`` and reads every part from it.  A fault part-way through wiring
yields a partial ``Wiring`` (the steps not reached are ``None`` or empty) that
:meth:`Wiring.undo` takes apart, exactly as ``close`` takes apart a whole one:

    | # | undo step                                                                 |
    |---|---------------------------------------------------------------------------|
    | 1 | disarm the monitor; cancel every pump; close the flow gauge               |
    | 2 | unregister the finalizer unless it already produced a result              |
    | 3 | cancel the worker after a host cancel, otherwise stop and join it         |
    | 4 | abort the output unless it was committed or the host cancelled (Core then |
    |   | owns the revocation); an abort failure is latched on the monitor          |
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from fastsim_contract.protocols import FinalizerRegistration
from fastsim_record.core.captured import LaneName
from fastsim_record.errors import RecordError
from fastsim_record.pipeline.finalizer import RecordFinalizer
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.pumps import LaneHandle, Pump
from fastsim_record.pipeline.worker import WriterWorker
from fastsim_record.ports.sinks import PayloadEncoder, RecordSink
from fastsim_record.ports.sources import Closeable, Selection

if TYPE_CHECKING:
    from fastsim_record.pipeline.camera_stage import CameraSelection

__all__ = ["Wiring", "cancel_all"]


def cancel_all(pumps: Sequence[Pump]) -> None:
    """Cancel every pump in ``pumps`` (idempotent; the finalizer calls it at the cut)."""
    for pump in pumps:
        pump.cancel()


@attrs.frozen(eq=False)
class Wiring:
    """The selection, lanes, encoders, sink, worker, finalizer, grants' pumps of one Run."""

    monitor: Monitor
    selection: Selection | None = None
    cameras: CameraSelection | None = None  # issue 6: the media lane's cameras
    lanes: Mapping[LaneName, LaneHandle] = attrs.field(factory=dict)
    encoders: Mapping[str, PayloadEncoder] = attrs.field(factory=dict)
    sink: RecordSink | None = None
    worker: WriterWorker | None = None
    flow: Closeable | None = None  # the gauge's registration (None: an older Core)
    finalizer: RecordFinalizer | None = None
    registration: FinalizerRegistration | None = None
    pumps: tuple[Pump, ...] = ()

    def cancel_pumps(self) -> None:
        """Cancel every pump (idempotent)."""
        cancel_all(self.pumps)

    def undo(self) -> None:
        """Take apart what was built (module table; safe on a partial ``Wiring``, once)."""
        self.monitor.disarm()
        self.cancel_pumps()
        if self.flow is not None:
            with contextlib.suppress(Exception):  # Core drops gauges at the cut anyway
                self.flow.close()
        finalizer = self.finalizer
        host_cancelled = finalizer is not None and finalizer.cancelled
        committed = finalizer is not None and finalizer.committed
        if self.registration is not None and (finalizer is None or finalizer.result is None):
            with contextlib.suppress(Exception):  # after the cut Core refuses; nothing to undo
                self.registration.unregister()
        worker = self.worker
        if worker is not None:
            if host_cancelled:
                worker.cancel()
            else:
                worker.stop()
                worker.join(2.0)
        if self.sink is not None and not committed and not host_cancelled:
            try:
                self.sink.abort()
            except RecordError as exc:
                self.monitor.latch(exc)
