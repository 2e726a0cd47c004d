"""Publishing lifecycle, plugin events and control on the simulation thread (a part of ``EmbeddedHost``).

    | # | publisher                | source            | payload                                  |
    |---|--------------------------|-------------------|------------------------------------------|
    | 1 | ``publish_lifecycle``    | lifecycle         | ``{"event": ..., **data}``               |
    | 2 | ``publish_plugin_event`` | events            | ``{"event", "emitter", "data"}``         |
    | 3 | ``publish_control_issued`` / ``publish_control_applied`` | control.audit / control.result | the command, its outcome |
    | 4 | ``begin_generation``     | generation barrier, then lifecycle ``generation.started``    |
    | 5 | ``publish_now``          | any               | stamped with the current generation, tick and sim time |

Nothing is built when the source is not captured.  Event payloads carry their portable
size unless the host was made without (an older Core).
"""

from __future__ import annotations

from collections.abc import Mapping
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


@attrs.define(eq=False)
class EventPublisher:
    """The lifecycle, event and control publishers of one Run (module table)."""

    context: EmbeddedRunContext
    bus: CaptureBus
    portable_sizes: bool = True  # off: envelopes carry no portable_size (older Core)

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

    # The two control events run once per command on the simulation thread: their payloads
    # are built frozen (``freeze`` of the same mapping gives the same FrozenDict; only the
    # nested values need a deep copy), and nothing is built when the source is not captured.
    def publish_control_issued(self, command: ControlCommand) -> Envelope | None:
        """Control audit: the command was issued."""
        if not self.bus.captures(_AUDIT):
            return None
        return self._publish_frozen(_AUDIT, FrozenDict({
            "event": "command.issued",
            "command_id": freeze(command.command_id),
            "command": freeze(command.name),
            "target": freeze(command.target),
            "args": freeze(dict(command.args)),
        }))

    def publish_control_applied(self, command: ControlCommand, outcome: ControlOutcome) -> Envelope | None:
        """Control result: the command was applied (or rejected)."""
        if not self.bus.captures(_RESULT):
            return None
        return self._publish_frozen(_RESULT, FrozenDict({
            "event": "command.applied",
            "command_id": freeze(command.command_id),
            "accepted": freeze(outcome.accepted),
            "detail": freeze(dict(outcome.detail)),
        }))

    def begin_generation(self, reason: str = "reset") -> int:
        """A new Runtime generation: the barrier, then ``generation.started``."""
        previous = self.context.generation
        self.context.generation = previous + 1
        ctx = self.context
        self.publish_now(SourceKind.GENERATION_BARRIER, GenerationBarrier(ctx.generation, previous, reason))
        self.publish_lifecycle("generation.started", generation=ctx.generation, previous=previous, reason=reason)
        return ctx.generation
