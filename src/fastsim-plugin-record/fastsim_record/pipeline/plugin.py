"""The Record plugin's lifecycle (its ``fastsim.plugins`` entry point is
:func:`fastsim_record.bootstrap.create_plugin`).

The wiring itself (which sources, lanes, encoders, sink, worker, finalizer, grants and
pumps) is the composition root's, :func:`fastsim_record.bootstrap.wire`; this module
holds what it built, through ports, and runs the lifecycle:

    | # | call     | effect                                                             |
    |---|----------|--------------------------------------------------------------------|
    | 1 | prepare  | refuse a config outside the prepare contract (config rules 4-6,    |
    |   |          | whatever the Run's lock: defence in depth), before anything is     |
    |   |          | wired; then ``bootstrap.wire``; on any fault everything done so far|
    |   |          | is undone (pumps cancelled, finalizer unregistered, worker stopped,|
    |   |          | lease aborted) and one ``RecordError`` line is raised              |
    | 2 | start    | arm the monitor                                                    |
    | 3 | stop     | disarm the monitor (idempotent); capture continues to the cut      |
    | 4 | close    | cancel pumps, stop the worker; abort the output unless it was      |
    |   |          | committed or the host cancelled at the deadline (idempotent)       |
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from fastsim_contract.protocols import FinalizerRegistration, PluginContext
from fastsim_contract.run_errors import RunIssue
from fastsim_record import COMPONENT_ID
from fastsim_record.config.model import RecordConfig
from fastsim_record.config.rules import prepare_refusal
from fastsim_record.core.captured import LaneName
from fastsim_record.core.errors import DomainError
from fastsim_record.errors import ConfigError, ContractError, RecordError, translate
from fastsim_record.pipeline.finalizer import RecordFinalizer
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.pumps import LaneHandle, Pump
from fastsim_record.pipeline.worker import WriterWorker
from fastsim_record.ports.sinks import PayloadEncoder, RecordSink
from fastsim_record.ports.sources import Closeable, Selection

if TYPE_CHECKING:
    from fastsim_record.pipeline.camera_stage import CameraSelection

__all__ = ["RecordPlugin"]


class RecordPlugin:
    """One Record instance in one Run."""

    def __init__(self, context: PluginContext, wire: Callable[[RecordPlugin], None]) -> None:
        config = context.config
        if not isinstance(config, RecordConfig):
            raise ConfigError([RunIssue(
                "plugins.record.config",
                f"expected the compiled RecordConfig, got {type(config).__name__}",
            )])
        self.context = context
        self.config = config
        self._wire = wire
        self.component = context.component_id or COMPONENT_ID
        self.selection: Selection | None = None
        self.lanes: dict[LaneName, LaneHandle] = {}
        self.pumps: list[Pump] = []
        self.monitor = Monitor(lambda _reason: False)
        self.worker: WriterWorker | None = None
        self.sink: RecordSink | None = None
        self.finalizer: RecordFinalizer | None = None
        self.registration: FinalizerRegistration | None = None
        self.flow: Closeable | None = None  # the gauge's registration (None: an older Core)
        self.encoders: dict[str, PayloadEncoder] = {}
        self.cameras: CameraSelection | None = None  # issue 6: the media lane's cameras
        self._state = "new"  # new | prepared | started | stopped | closed

    # -- lifecycle ---------------------------------------------------------------------
    def prepare(self) -> None:
        """Row 1: ``bootstrap.wire`` (its steps 1-8), undone on any fault."""
        if self._state != "new":
            raise ContractError(f"prepare called on a {self._state} Record plugin")
        alias = getattr(self.context, "alias", "") or "record"
        refused = prepare_refusal(self.config, f"plugins.{alias}.config")
        if refused is not None:  # nothing is wired yet: no lease, no subscription, no finalizer
            self._state = "closed"
            raise ConfigError([refused])
        try:
            self._wire(self)
        except BaseException as exc:
            self._cleanup()
            self._state = "closed"
            if isinstance(exc, RecordError):
                raise
            if isinstance(exc, DomainError):
                raise ConfigError([RunIssue("plugins.record.config", exc.reason)]) from exc
            raise translate(exc, "prepare") from exc
        self._state = "prepared"

    def start(self) -> None:
        """Row 2: arm the monitor."""
        if self._state != "prepared":
            raise ContractError(f"start called on a {self._state} Record plugin")
        self._state = "started"
        self.monitor.arm()

    def stop(self) -> None:
        """Row 3 (idempotent)."""
        if self._state in ("started", "prepared"):
            self._state = "stopped"
        self.monitor.disarm()

    def close(self) -> None:
        """Row 4 (idempotent)."""
        if self._state == "closed":
            return
        self._state = "closed"
        self._cleanup()

    # -- helpers -----------------------------------------------------------------------
    def cancel_pumps(self) -> None:
        """Cancel every pump (the finalizer does at the cut; idempotent)."""
        for pump in self.pumps:
            pump.cancel()

    def _cleanup(self) -> None:
        self.monitor.disarm()
        self.cancel_pumps()
        flow, self.flow = self.flow, None
        if flow is not None:
            with contextlib.suppress(Exception):  # Core drops gauges at the cut anyway
                flow.close()
        finalizer = self.finalizer
        host_cancelled = finalizer is not None and finalizer.cancelled
        committed = finalizer is not None and finalizer.committed
        registration = self.registration
        self.registration = None
        if registration is not None and (finalizer is None or finalizer.result is None):
            with contextlib.suppress(Exception):  # after the cut Core refuses; nothing to undo
                registration.unregister()
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

    @property
    def state(self) -> str:
        """new | prepared | started | stopped | closed."""
        return self._state
