"""Publishing lifecycle, plugin events and control on the simulation thread (a part of ``EmbeddedHost``).

    | # | publisher                | source            | payload                                  |
    |---|--------------------------|-------------------|------------------------------------------|
    | 1 | ``publish_lifecycle``    | lifecycle         | ``{"event": ..., **data}``               |
    | 2 | ``publish_plugin_event`` | events            | ``{"event", "emitter", "data"}``         |
    | 3 | ``publish_control`` (or ``publish_control_issued`` / ``publish_control_applied``) | control.audit / control.result | the command, its outcome |
    | 4 | ``begin_generation``     | generation barrier, then lifecycle ``generation.started``    |
    | 5 | ``publish_now``          | any               | stamped with the current generation, tick and sim time |

Nothing is built when the source is not captured.  Event payloads carry their portable
size unless the host was made without (an older Core).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from fastsim_contract.payloads import FrozenDict, freeze, portable_size
from fastsim_contract.values import Envelope, GenerationBarrier, SourceKind
from fastsim_embedded.backends.base import ControlCommand, ControlOutcome
from fastsim_embedded.host.bus import CaptureBus
from fastsim_embedded.host.context import EmbeddedRunContext

__all__ = ["EventPublisher"]

_EVENT = SourceKind.PLUGIN_EVENT
_AUDIT = SourceKind.CONTROL_AUDIT
_RESULT = SourceKind.CONTROL_RESULT


def _fixed_size(event: str, fields: tuple[str, ...]) -> int:
    """The portable size of an ``event`` payload with ``fields`` left empty: its keys,
    punctuation and event name (each field given as ``0`` here, one byte, taken off)."""
    return portable_size({"event": event, **dict.fromkeys(fields, 0)}) - len(fields)


_ISSUED_FIXED = _fixed_size("command.issued", ("command_id", "command", "target", "args"))
_APPLIED_FIXED = _fixed_size("command.applied", ("command_id", "accepted", "detail"))


@attrs.define(eq=False)
class EventPublisher:
    """The lifecycle, event and control publishers of one Run (module table)."""

    context: EmbeddedRunContext
    bus: CaptureBus
    portable_sizes: bool = True  # off: envelopes carry no portable_size (older Core)
    _audit: bool = attrs.field(init=False, default=False)  # the bus captures control audit
    _result: bool = attrs.field(init=False, default=False)  # ... control results

    def __attrs_post_init__(self) -> None:
        self._audit = self.bus.captures(_AUDIT)  # the plan is fixed for the Run
        self._result = self.bus.captures(_RESULT)

    def publish_now(self, source: SourceKind, payload: object, **options: Any) -> Envelope | None:
        """Publish ``payload`` on ``source`` stamped with the current generation, tick and
        simulation time (``options``: ``CaptureBus.publish``'s keywords)."""
        ctx = self.context
        return self.bus.publish(
            source, generation=ctx.generation, tick=ctx.tick, sim_time_ns=ctx.sim_time_ns,
            payload=payload, **options,
        )

    def _publish_event(self, source: SourceKind, data: Mapping[str, object]) -> Envelope | None:
        if not self.bus.captures(source):
            return None
        return self._publish_frozen(source, freeze(data))

    def _publish_frozen(self, source: SourceKind, payload: FrozenDict) -> Envelope | None:
        """Publish an already frozen event payload (the caller checked ``captures``)."""
        ctx = self.context  # the hot path: straight to the bus, without publish_now's **options
        return self.bus.publish(
            source, generation=ctx.generation, tick=ctx.tick, sim_time_ns=ctx.sim_time_ns,
            payload=payload, portable_size=portable_size(payload) if self.portable_sizes else None,
        )

    def publish_lifecycle(self, event: str, **data: object) -> Envelope | None:
        """A lifecycle event (``run.created``, ``generation.started``, ``run.stopping``...)."""
        return self._publish_event(SourceKind.LIFECYCLE, {"event": event, **data})

    def publish_plugin_event(
        self, name: str, data: Mapping[str, object] | None = None, emitter: str = "scene"
    ) -> Envelope | None:
        """A plugin/scene event (built frozen, like the control events below)."""
        if not self.bus.captures(_EVENT):
            return None
        return self._publish_frozen(_EVENT, FrozenDict({
            "event": freeze(name), "emitter": freeze(emitter), "data": freeze(dict(data or {})),
        }))

    # The control events run once per command on the simulation thread.  Their payloads
    # are built frozen (``freeze`` of the same mapping gives the same FrozenDict; only the
    # nested values need a deep copy), nothing is built when the source is not captured,
    # and their portable size is summed from the parts: the fixed text (keys, punctuation,
    # the event name; ``_fixed_size``) plus each variable field's own size, so the constant
    # skeleton is never serialised.  ``publish_control`` shares the command id's frozen
    # form and size between a command's two events.
    def publish_control(
        self, command: ControlCommand, apply: Callable[[ControlCommand], ControlOutcome]
    ) -> ControlOutcome:
        """Audit ``command`` (issued), ``apply`` it, publish its result (applied)."""
        command_id = freeze(command.command_id)
        id_size = portable_size(command_id) if self.portable_sizes and (self._audit or self._result) else 0
        self._issued(command, command_id, id_size)
        outcome = apply(command)
        self._applied(command_id, id_size, outcome)
        return outcome

    def publish_control_issued(self, command: ControlCommand) -> Envelope | None:
        """Control audit: the command was issued."""
        command_id = freeze(command.command_id)
        return self._issued(command, command_id, portable_size(command_id) if self.portable_sizes else 0)

    def publish_control_applied(self, command: ControlCommand, outcome: ControlOutcome) -> Envelope | None:
        """Control result: the command was applied (or rejected)."""
        command_id = freeze(command.command_id)
        return self._applied(command_id, portable_size(command_id) if self.portable_sizes else 0, outcome)

    def _issued(self, command: ControlCommand, command_id: Any, id_size: int) -> Envelope | None:
        if not self._audit:
            return None
        name, target, args = freeze(command.name), freeze(command.target), freeze(command.args)
        payload = FrozenDict(
            {"event": "command.issued", "command_id": command_id, "command": name, "target": target, "args": args}
        )
        size = (
            _ISSUED_FIXED + id_size + portable_size(name) + portable_size(target) + portable_size(args)
            if self.portable_sizes else None
        )
        ctx = self.context
        return self.bus.publish(
            _AUDIT, generation=ctx.generation, tick=ctx.tick, sim_time_ns=ctx.sim_time_ns,
            payload=payload, portable_size=size,
        )

    def _applied(self, command_id: Any, id_size: int, outcome: ControlOutcome) -> Envelope | None:
        if not self._result:
            return None
        accepted, detail = freeze(outcome.accepted), freeze(outcome.detail)
        payload = FrozenDict(
            {"event": "command.applied", "command_id": command_id, "accepted": accepted, "detail": detail}
        )
        size = (
            _APPLIED_FIXED + id_size + (4 if accepted is True else 5 if accepted is False else portable_size(accepted))
            + (2 if not detail and type(detail) is FrozenDict else portable_size(detail))  # true/false/{} as is
            if self.portable_sizes else None
        )
        ctx = self.context
        return self.bus.publish(
            _RESULT, generation=ctx.generation, tick=ctx.tick, sim_time_ns=ctx.sim_time_ns,
            payload=payload, portable_size=size,
        )

    def begin_generation(self, reason: str = "reset") -> int:
        """A new Runtime generation: the barrier, then ``generation.started``."""
        previous = self.context.generation
        self.context.generation = previous + 1
        ctx = self.context
        self.publish_now(SourceKind.GENERATION_BARRIER, GenerationBarrier(ctx.generation, previous, reason))
        self.publish_lifecycle("generation.started", generation=ctx.generation, previous=previous, reason=reason)
        return ctx.generation
