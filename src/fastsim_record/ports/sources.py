"""The source side of the pipeline: what Record captures, and from where.

A :class:`SourceSpec` is one selected capture source, decided at prepare time from the
compiled config and the scene's declared channels.  Only selected sources get a pump.

Source table (``SOURCE_LANES``):

    | # | source           | lane     | history from seq 1 | notes                               |
    |---|------------------|----------|--------------------|-------------------------------------|
    | 1 | lifecycle        | critical | yes                | always selected                     |
    | 2 | events           | critical | yes                | always selected                     |
    | 3 | control.audit    | critical | no (before start)  | always selected                     |
    | 4 | control.result   | critical | no (before start)  | always selected                     |
    | 5 | observations     | numeric  | yes                | only with >= 1 selected channel;    |
    |   |                  |          |                    | carries generation barriers too     |
    | 6 | cameras.<alias>  | media    | yes                | extension point (camera issue)      |
    | 7 | render.state     | numeric  | yes                | extension point                     |
    | 8 | geometry         | numeric  | yes                | extension point                     |
    | 9 | fluid.emissions  | critical | yes                | extension point (Core fluid.audit)  |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol

import attrs

from fastsim_contract.values import Envelope

__all__ = [
    "LANE_CRITICAL",
    "LANE_MEDIA",
    "LANE_NUMERIC",
    "SOURCE_LANES",
    "Closeable",
    "EnvelopeSink",
    "SourceHub",
    "SourceSpec",
]

LANE_CRITICAL: Final = "critical"
LANE_NUMERIC: Final = "numeric"
LANE_MEDIA: Final = "media"

#: source kind -> lane it feeds (rows of the module table).
SOURCE_LANES: Final[dict[str, str]] = {
    "lifecycle": LANE_CRITICAL,
    "events": LANE_CRITICAL,
    "control.audit": LANE_CRITICAL,
    "control.result": LANE_CRITICAL,
    "observations": LANE_NUMERIC,
    "cameras": LANE_MEDIA,
    "render.state": LANE_NUMERIC,
    "geometry": LANE_NUMERIC,
    "fluid.emissions": LANE_CRITICAL,
}

#: Called by the host on the publishing thread with one immutable, stamped envelope.
EnvelopeSink = Callable[[Envelope], None]


@attrs.frozen
class SourceSpec:
    """One selected capture source and how Record subscribes to it."""

    name: str  # subscription/source name, e.g. "lifecycle" or "observations"
    kind: str  # a SOURCE_LANES key
    lane: str
    required: bool = True
    channels: tuple[str, ...] = ()  # selected channels (observations, cameras)
    from_sequence: int = 1


class Closeable(Protocol):
    """Something with an idempotent ``close``."""

    def close(self) -> None: ...


class SourceHub(Protocol):
    """The host's capture sources as the pipeline sees them (the Core binding)."""

    def subscribe(self, spec: SourceSpec, sink: EnvelopeSink) -> Closeable:
        """Atomic history-plus-live subscription; errors are ``fastsim_record.errors``."""
        ...

    def request_grant(self, grant: str) -> None:
        """Ask the host for a capability grant (``observation``)."""
        ...
