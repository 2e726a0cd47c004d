"""The Record plugin's lifecycle (its ``fastsim.plugins`` entry point is
:func:`fastsim_record.bootstrap.create_plugin`).

The wiring itself (which sources, lanes, encoders, sink, worker, finalizer, grants and
pumps) is the composition root's, :func:`fastsim_record.bootstrap.wire`; it returns one
frozen :class:`~fastsim_record.pipeline.wiring.Wiring`, held as ``plugin.wiring``, which
this module reads (through ports) to run the lifecycle:

    | # | call     | effect                                                             |
    |---|----------|--------------------------------------------------------------------|
    | 1 | prepare  | refuse a config outside the prepare contract (config rules 4-6,    |
    |   |          | whatever the Run's lock: defence in depth), before anything is     |
    |   |          | wired; then ``bootstrap.wire``; on any fault it undoes everything  |
    |   |          | done so far (``Wiring.undo``: pumps cancelled, finalizer           |
    |   |          | unregistered, worker stopped, lease aborted) and one               |
    |   |          | ``RecordError`` line is raised                                     |
    | 2 | start    | arm the monitor                                                    |
    | 3 | stop     | disarm the monitor (idempotent); capture continues to the cut      |
    | 4 | close    | ``Wiring.undo``: cancel pumps, stop the worker; abort the output   |
    |   |          | unless it was committed or the host cancelled at the deadline      |
    |   |          | (idempotent)                                                       |
"""

from __future__ import annotations

from collections.abc import Callable

from fastsim_contract.protocols import PluginContext
from fastsim_contract.run_errors import RunIssue
from fastsim_record import COMPONENT_ID
from fastsim_record.config.model import RecordConfig
from fastsim_record.config.rules import prepare_refusal
from fastsim_record.core.errors import DomainError
from fastsim_record.errors import ConfigError, ContractError, RecordError, translate
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.wiring import Wiring

__all__ = ["RecordPlugin"]


class RecordPlugin:
    """One Record instance in one Run."""

    def __init__(self, context: PluginContext, wire: Callable[[RecordPlugin], Wiring]) -> None:
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
        self.wiring: Wiring | None = None  # what ``wire`` built (set once prepare succeeded)
        self._idle = Monitor(lambda _reason: False)  # the monitor before (or without) wiring
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
            self.wiring = self._wire(self)  # on a fault, ``wire`` has undone its steps
        except BaseException as exc:
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
    @property
    def monitor(self) -> Monitor:
        """The wiring's monitor (an idle one before prepare or after a failed prepare)."""
        return self._idle if self.wiring is None else self.wiring.monitor

    def _cleanup(self) -> None:
        if self.wiring is not None:
            self.wiring.undo()

    @property
    def state(self) -> str:
        """new | prepared | started | stopped | closed."""
        return self._state
