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
    | 2 | ``CarrierConverter``| (also rule 1) ``validate``s each envelope and admits it     |
    |   |                    | as a carrier; the worker builds it (``LaneConverters``)     |
    | 3 | ``BlockConverter`` | (also rule 2) ``validate_block``s an ``ObservationBlock``   |
    |   |                    | envelope of at most ``max_block`` ticks, admitted as ONE    |
    |   |                    | carrier charged its ticks (issue 26)                        |

The carrier fast path: a carrier is the validated contract ``Envelope`` itself, held in
its lane as Core stamped it, so the simulation thread allocates nothing per envelope.
Its converter lives with the lane: :class:`LaneConverters` (its ``materialize`` is the
lane's) maps each contract source kind to the one carrier converter that feeds the lane with it
(a pump registers its converter when it is built), builds the captured item of a held
envelope and passes a captured item (the full path: barriers, cameras) through.

A pump that takes blocks is a ``BlockSink``: the Core binding subscribes its ``blocks``
callable with ``max_block`` when that exceeds 1, and the pump itself (ticks only)
otherwise.  The worker's run builder (``pipeline.columns``) turns a held block carrier into
one ``CapturedRun``; ``LaneConverters.materialize`` of one gives its first tick's item.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

import attrs

from fastsim_contract.values import ChannelDescriptor, Envelope, SourceKind
from fastsim_record.core.captured import CapturedItem, LaneName

__all__ = [
    "BlockConverter",
    "BlockSink",
    "CarrierConverter",
    "Closeable",
    "EnvelopeSink",
    "ItemConverter",
    "LaneConverters",
    "Selection",
    "SourceSpec",
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
    """A converter whose validated envelopes may travel as carriers (row 2)."""

    #: The contract source kinds it accepts (a lane knows one converter per kind).
    kinds: frozenset[SourceKind]

    def __call__(self, item: object) -> CapturedItem: ...

    def validate(self, item: object) -> int | None:
        """The checks of ``__call__`` without building: the admission size (None: ceiling)."""
        ...

    def build(self, envelope: Envelope) -> CapturedItem:
        """The captured item of a validated envelope (no checks)."""
        ...


@runtime_checkable
class BlockConverter(CarrierConverter, Protocol):
    """A carrier converter that also validates blocks of ticks (row 3)."""

    #: the largest block it accepts (1: none)
    max_block: int
    #: the bytes of one tick's record (``None``: unknown, so no blocks)
    fixed_size: int | None

    def validate_block(self, item: object) -> int:
        """The block checks (Core binding rules 1-3, 5-8): its admission size in bytes."""
        ...


@runtime_checkable
class BlockSink(Protocol):
    """An envelope sink that can also take blocks (module doc): ``max_block`` > 1 means it
    opts in, and ``blocks`` is then the sink to subscribe (it takes blocks and ticks)."""

    max_block: int

    def blocks(self, item: object) -> None: ...


class LaneConverters:
    """The carrier converters feeding one lane, by contract source kind: ``materialize``
    (the lane's) builds a held contract envelope with its kind's converter."""

    __slots__ = ("_build", "_by_kind")

    def __init__(self) -> None:
        self._by_kind: dict[SourceKind, CarrierConverter] = {}
        self._build: dict[SourceKind, Callable[[Envelope], CapturedItem]] = {}

    def register(self, converter: CarrierConverter, kinds: Iterable[SourceKind]) -> bool:
        """Let ``converter``'s envelopes of ``kinds`` travel as carriers in this lane.

        False (nothing registered) when another converter already holds one of the kinds:
        that pump then takes the full path, so no carrier is ever built by the wrong one.
        """
        kinds = tuple(kinds)
        if any(self._by_kind.get(kind, converter) is not converter for kind in kinds):
            return False
        for kind in kinds:
            self._by_kind[kind] = converter
            self._build[kind] = converter.build
        return True

    def converter_of(self, carrier: Envelope) -> CarrierConverter:
        """The converter that validated ``carrier`` (a held contract envelope)."""
        return self._by_kind[carrier.source]

    def materialize(self, item: object) -> CapturedItem:
        """A lane item as its captured item: a carrier is built now, a captured item passes."""
        if item.__class__ is Envelope:
            return self._build[item.source](item)
        return item  # type: ignore[return-value]


class Closeable(Protocol):
    """Something with an idempotent ``close``."""

    def close(self) -> None: ...
