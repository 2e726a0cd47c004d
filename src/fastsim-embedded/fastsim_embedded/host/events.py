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

from fastsim_contract.payloads import EMPTY, FrozenDict, freeze, freeze_sized, portable_size
from fastsim_contract.values import Envelope, GenerationBarrier, SourceKind
from fastsim_embedded.backends.base import ControlCommand, ControlOutcome
from fastsim_embedded.host.bus import CaptureBus, Stamp
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
_EVENT_FIXED = _fixed_size("", ("emitter", "data")) - 2  # "event" holds the name: its quotes are in its size


@attrs.define(eq=False)
class EventPublisher:
    """The lifecycle, event and control publishers of one Run (module table)."""

    context: EmbeddedRunContext
    bus: CaptureBus
    portable_sizes: bool = True  # off: envelopes carry no portable_size (older Core)
    # the bus's stampers of the plan's sources (None: not captured; the plan is fixed for the Run)
    _audit: Stamp | None = attrs.field(init=False, default=None)
    _result: Stamp | None = attrs.field(init=False, default=None)
    _event: Stamp | None = attrs.field(init=False, default=None)
    _lifecycle: Stamp | None = attrs.field(init=False, default=None)
    # the last command kind's frozen name and target and the size they and the fixed text
    # take in its audit (a driver sends the same kind every tick: compared by identity)
    _kind: tuple[object, object, str, str, int] = attrs.field(init=False, default=(None, None, "", "", 0))
    # the same for the last plugin event's name and emitter (their frozen forms and size)
    _named: tuple[object, object, str, str, int] = attrs.field(init=False, default=(None, None, "", "", 0))

    def __attrs_post_init__(self) -> None:
        self._audit = self.bus.stamper(_AUDIT)
        self._result = self.bus.stamper(_RESULT)
        self._event = self.bus.stamper(_EVENT)
        self._lifecycle = self.bus.stamper(SourceKind.LIFECYCLE)

    def publish_now(self, source: SourceKind, payload: object, **options: Any) -> Envelope | None:
        """Publish ``payload`` on ``source`` stamped with the current generation, tick and
        simulation time (``options``: ``CaptureBus.publish``'s keywords)."""
        ctx = self.context
        return self.bus.publish(
            source, generation=ctx.generation, tick=ctx.tick, sim_time_ns=ctx.sim_time_ns,
            payload=payload, **options,
        )

    def publish_lifecycle(self, event: str, **data: object) -> Envelope | None:
        """A lifecycle event (``run.created``, ``generation.started``, ``run.stopping``...)."""
        stamp = self._lifecycle
        if stamp is None:
            return None
        if self.portable_sizes:  # frozen and sized in one pass
            payload, size = freeze_sized({"event": event, **data})
        else:
            payload, size = freeze({"event": event, **data}), None
        ctx = self.context
        return stamp(ctx.generation, ctx.tick, ctx.sim_time_ns, payload, size)

    def publish_plugin_event(
        self, name: str, data: Mapping[str, object] | None = None, emitter: str = "scene"
    ) -> Envelope | None:
        """A plugin/scene event (built frozen, like the control events below; its size
        summed from the fixed text and each field's own size: the data frozen and sized in
        one pass, the name and emitter kept from the previous event when they are the same
        strings)."""
        stamp = self._event
        if stamp is None:
            return None
        if data:
            frozen, data_size = freeze_sized(data if type(data) is dict else dict(data))
        else:
            frozen, data_size = EMPTY, 2
        named = self._named
        if name is not named[0] or emitter is not named[1]:
            name_, emitter_ = freeze(name), freeze(emitter)
            fixed = _EVENT_FIXED + portable_size(name_) + portable_size(emitter_) if self.portable_sizes else 0
            named = (name, emitter, name_, emitter_, fixed)
            if type(name) is str and type(emitter) is str:  # immutable: kept for the next event
                self._named = named
        payload = FrozenDict({"event": named[2], "emitter": named[3], "data": frozen})
        ctx = self.context
        return stamp(
            ctx.generation, ctx.tick, ctx.sim_time_ns, payload, named[4] + data_size if self.portable_sizes else None
        )

    # The control events run once per command on the simulation thread.  Their payloads
    # are built frozen (``freeze`` of the same mapping gives the same FrozenDict; only the
    # nested values need a deep copy), nothing is built when the source is not captured,
    # and their portable size is summed from the parts: the fixed text (keys, punctuation,
    # the event name; ``_fixed_size``) plus each variable field's own size, so the constant
    # skeleton is never serialised.  ``publish_control`` shares the command id's frozen
    # form and size between a command's two events; the command kind's name and target
    # (and their sizes) are kept from the previous command when they are the same objects;
    # the arguments are frozen and sized in one pass (``freeze_sized``).
    def publish_control(
        self, command: ControlCommand, apply: Callable[[ControlCommand], ControlOutcome]
    ) -> ControlOutcome:
        """Audit ``command`` (issued), ``apply`` it, publish its result (applied)."""
        if self._audit is None and self._result is None:
            return apply(command)
        command_id = freeze(command.command_id)
        id_size = portable_size(command_id) if self.portable_sizes else 0
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
        stamp = self._audit
        if stamp is None:
            return None
        kind = self._kind
        if command.name is not kind[0] or command.target is not kind[1]:
            name, target = freeze(command.name), freeze(command.target)
            fixed = _ISSUED_FIXED + portable_size(name) + portable_size(target) if self.portable_sizes else 0
            kind = (command.name, command.target, name, target, fixed)
            if type(name) is str and type(target) is str:  # immutable: kept for the next command
                self._kind = kind
        args, args_size = freeze_sized(command.args) if self.portable_sizes else (freeze(command.args), 0)
        payload = FrozenDict(
            {"event": "command.issued", "command_id": command_id, "command": kind[2], "target": kind[3], "args": args}
        )
        ctx = self.context
        return stamp(
            ctx.generation, ctx.tick, ctx.sim_time_ns, payload,
            kind[4] + id_size + args_size if self.portable_sizes else None,
        )

    def _applied(self, command_id: Any, id_size: int, outcome: ControlOutcome) -> Envelope | None:
        stamp = self._result
        if stamp is None:
            return None
        accepted, detail = outcome.accepted, outcome.detail
        if accepted is True or accepted is False:  # true / false, as is
            accepted_size = 4 if accepted else 5
        else:
            accepted = freeze(accepted)
            accepted_size = portable_size(accepted) if self.portable_sizes else 0
        if not detail and type(detail) is dict:  # the common empty detail: the shared frozen {}
            detail, detail_size = EMPTY, 2
        elif type(detail) is dict and self.portable_sizes:  # frozen and sized in one pass (a
            detail, detail_size = freeze_sized(detail)  # result's ctrl becomes a FloatRow)
        else:
            detail = freeze(detail)
            detail_size = portable_size(detail) if self.portable_sizes else 0
        payload = FrozenDict(
            {"event": "command.applied", "command_id": command_id, "accepted": accepted, "detail": detail}
        )
        ctx = self.context
        return stamp(
            ctx.generation, ctx.tick, ctx.sim_time_ns, payload,
            _APPLIED_FIXED + id_size + accepted_size + detail_size if self.portable_sizes else None,
        )

    def begin_generation(self, reason: str = "reset") -> int:
        """A new Runtime generation: the barrier, then ``generation.started``."""
        previous = self.context.generation
        self.context.generation = previous + 1
        ctx = self.context
        self.publish_now(SourceKind.GENERATION_BARRIER, GenerationBarrier(ctx.generation, previous, reason))
        self.publish_lifecycle("generation.started", generation=ctx.generation, previous=previous, reason=reason)
        return ctx.generation
