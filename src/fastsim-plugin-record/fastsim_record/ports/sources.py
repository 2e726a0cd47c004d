"""The source side of the pipeline: what a pump needs from its source and its converter.

A :class:`SourceSpec` is one selected capture source, decided at prepare time from the
compiled config and the scene's declared channels (``fastsim_record.bootstrap``); which
lane each source kind feeds, and everything else about it, is one row of the source
registry (``fastsim_record.sources.SOURCES``).  Only selected sources get a pump.

Converter ports (a pump holds one; the Core binding implements both):

    | # | port               | a pump ...                                                  |
    |---|--------------------|-------------------------------------------------------------|
    | 1 | ``ItemConverter``  | calls it on every contract envelope: validated and built    |
    |   |                    | into a core ``CapturedItem`` on the publishing thread       |
    | 2 | ``CarrierConverter``| (also rule 1) ``validate``s each envelope and admits a      |
    |   |                    | :class:`Carrier`; the worker calls ``Carrier.build``        |

The carrier fast path: a lane built with ``materialize`` holds either a ``CapturedItem``
or a ``Carrier`` (contract envelope plus its converter); ``materialize`` builds the
captured item of a carrier and passes a captured item through, so the simulation
thread builds no frozen object per envelope.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import attrs

from fastsim_contract.values import ChannelDescriptor, Envelope
from fastsim_record.core.captured import CapturedItem, LaneName

__all__ = [
    "Carrier",
    "CarrierConverter",
    "Closeable",
    "EnvelopeSink",
    "ItemConverter",
    "Selection",
    "SourceHub",
    "SourceSpec",
    "materialize",
]

#: Called by the host on the publishing thread with one immutable, stamped envelope.
EnvelopeSink = Callable[[Envelope], None]


@attrs.frozen
class SourceSpec:
    """One selected capture source and how Record subscribes to it."""

    name: str  # subscription/source name, e.g. "lifecycle" or "observations"
    kind: str  # a ``fastsim_record.sources.SOURCES`` key
    lane: LaneName
    required: bool = True
    channels: tuple[str, ...] = ()  # selected channels (observations, cameras)
    from_sequence: int = 1


@attrs.frozen
class Selection:
    """What a config selects in one scene: the sources and the numeric channels."""

    sources: tuple[SourceSpec, ...]
    numeric: tuple[ChannelDescriptor, ...]


class ItemConverter(Protocol):
    """Contract envelope -> core captured item, raising ``ContractError`` (row 1)."""

    def __call__(self, item: object) -> CapturedItem: ...


@runtime_checkable
class CarrierConverter(Protocol):
    """A converter whose envelopes may travel as :class:`Carrier` (row 2)."""

    def __call__(self, item: object) -> CapturedItem: ...

    def validate(self, item: object) -> int | None:
        """The checks of ``__call__`` without building: the admission size (None: ceiling)."""
        ...

    def build(self, envelope: Envelope) -> CapturedItem:
        """The captured item of a validated envelope (no checks)."""
        ...


class Carrier:
    """A validated contract envelope on its way through a lane, built on the worker."""

    __slots__ = ("converter", "envelope")

    def __init__(self, envelope: Envelope, converter: CarrierConverter) -> None:
        self.envelope = envelope
        self.converter = converter

    def build(self) -> CapturedItem:
        """The core captured item (called once, by the worker or on an overload path)."""
        return self.converter.build(self.envelope)


def materialize(item: object) -> CapturedItem:
    """A lane item as its captured item: a carrier is built now, a captured item passes."""
    if item.__class__ is Carrier:
        return item.build()
    return item  # type: ignore[return-value]


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
