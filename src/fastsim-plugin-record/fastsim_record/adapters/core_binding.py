"""The Core binding: contract envelopes in, core captured items out; Core errors translated.

The pipeline talks to Core only through this module, behind the ports of
``fastsim_record.ports.sources``.  An :class:`EnvelopeConverter` (a ``CarrierConverter``)
runs on the publishing thread inside a pump, so it does only cheap checks
(``validate``); the frozen :class:`fastsim_record.core.captured.CapturedItem` is built
by ``build`` -- on the writer worker, through the lane's ``LaneConverters``, for the
envelopes a pump admits as carriers -- and it never encodes.

Envelope validation (``EnvelopeConverter.__call__``):

    | # | check                                                  | failure            |
    |---|--------------------------------------------------------|--------------------|
    | 1 | the item is a contract ``Envelope`` (immutable, stamped)| ContractError      |
    | 2 | its ``source`` kind is one this subscription carries    | ContractError      |
    | 3 | global sequence and source sequence are integers >= 1  | ContractError      |
    | 4 | the payload type fits the kind (tick, barrier, mapping)| ContractError      |

A numeric tick keeps its diagnostic live ``channel_sequence`` (issue 27): a
``SampleBlock``'s one value, or per-channel samples' common value (the smallest when
they differ).  It is never used for continuity.

Size charged by lane admission: the producer-computed portable size when present, the
fixed record size for numeric ticks (known from the channel descriptors), otherwise
``None`` (the core charges the 1 MiB service ceiling).

Blocks of ticks (issue 26, ``docs/design/columnar-capture.md``).  Record opts into Core's
``ObservationBlock`` only when its numeric lane's overload policy is ``fail_run`` (the
default; lossy policies are legal only for optional streams): the ``observations``
subscription then passes ``max_block = min(240, the lane's pressure headroom in items and
in bytes / record_bytes)`` (``Lane.block_limit``), so a pending block is never what
overruns the lane.  With a lossy numeric lane (drop_newest, drop_oldest,
degrade_recording) Record subscribes exactly as without blocks (``max_block`` 1), and the
per-tick loss paths are unchanged.  A Core that raises ``TypeError`` for the keyword gets
the plain subscription (one probe, no version table).  ``validate_block`` checks a block
as rules 1-3 above plus, each refusal one line:

    | # | a block (``ObservationBlock`` payload) ...                               |
    |---|-------------------------------------------------------------------------|
    | 5 | arrives on an ``observations`` subscription that opted in, with at most  |
    |   | ``max_block`` ticks, and names the envelope's capture sequence           |
    | 6 | carries the Run's ``PackedLayout`` (the first block's, then by identity) |
    |   | of ``record_bytes`` bytes a tick                                          |
    | 7 | has a read-only, C-contiguous numpy buffer of ``k * record_bytes`` bytes |
    | 8 | has ``k >= 1`` int64 ticks and ``k`` int64 simulation times, the times  |
    |   | non-decreasing                                                          |

A block that does not fit the ``fail_run`` lane is FATAL and latched, as the first tick
that would not have fitted; admission charges it ``k`` items and ``k * record_bytes``
bytes (``Lane.try_admit_block``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs
import numpy as np

from fastsim_contract.protocols import CoreServices, Finalizer, FinalizerRegistration, FlowGauge
from fastsim_contract.values import (
    CompletionKind,
    CompletionRequest,
    Envelope,
    FinalizerRegistrationRequest,
    GenerationBarrier,
    ObservationBlock,
    ObservationTick,
    PackedLayout,
    SampleBlock,
    SourceKind,
)
from fastsim_record.core.captured import CapturedItem, EnvelopeKind, LaneName
from fastsim_record.errors import ContractError, translate
from fastsim_record.ports.sources import BlockSink, Closeable, EnvelopeSink, SourceSpec

__all__ = ["CoreBinding", "EnvelopeConverter"]

_new = object.__new__
_RECORD_KIND = EnvelopeKind.RECORD
_BARRIER_KIND = EnvelopeKind.BARRIER


def _slot_setters(*names: str) -> tuple[Callable[[object, object], None], ...]:
    """The slots' member-descriptor setters of ``CapturedItem`` (``build`` sets them)."""
    return tuple(vars(CapturedItem)[name].__set__ for name in names)


(
    _set_global, _set_source, _set_capture, _set_stream, _set_lane, _set_generation, _set_tick,
    _set_sim_time, _set_required, _set_size, _set_kind, _set_channel_sequence, _set_payload,
) = _slot_setters(
    "global_sequence", "source", "capture_sequence", "stream", "lane", "generation", "tick",
    "sim_time_ns", "required", "size", "kind", "channel_sequence", "payload",
)

_BARRIER = SourceKind.GENERATION_BARRIER
_OBSERVATION = SourceKind.OBSERVATION
_INT64 = np.dtype(np.int64)


@attrs.define(eq=False, slots=True)
class EnvelopeConverter:
    """Contract envelope of one subscription -> core envelope (rules 1-4)."""

    source: str
    stream: str
    lane: LaneName
    required: bool
    kinds: frozenset[SourceKind]
    fixed_size: int | None = None
    #: the largest block it takes (1: none; the pump sets it from its lane, module doc)
    max_block: int = 1
    _kinds: tuple[SourceKind, ...] = attrs.field(init=False)
    _layout: PackedLayout | None = attrs.field(init=False, default=None)  # the Run's (rule 6)

    def __attrs_post_init__(self) -> None:
        self._kinds = tuple(self.kinds)

    def __call__(self, item: object) -> CapturedItem:
        """Validate and convert; raises ContractError naming the field."""
        self.validate(item)
        return self.build(item)  # type: ignore[arg-type]  # validate checked the class

    def validate(self, item: object) -> int | None:
        """Rules 1-4 without building anything: the admission size (``None``: ceiling)."""
        if item.__class__ is not Envelope:
            raise ContractError(
                f"{self.source}: expected a stamped contract Envelope, got {type(item).__name__}"
            )
        envelope: Envelope = item
        kind = envelope.source
        if kind not in self._kinds:  # a tuple: identity comparisons, no Enum hashing
            raise ContractError(f"{self.source}: envelope of source {kind!r} on this subscription")
        seq = envelope.global_sequence
        cap = envelope.source_sequence
        if seq.__class__ is not int or seq < 1 or cap.__class__ is not int or cap < 1:
            raise ContractError(
                f"{self.source}: global_sequence/source_sequence must be integers >= 1 "
                f"(got {seq!r}/{cap!r})"
            )
        payload = envelope.payload
        if kind is _BARRIER:
            if payload.__class__ is not GenerationBarrier:
                raise ContractError(f"{self.source}: barrier payload must be a GenerationBarrier")
            return 0
        if kind is _OBSERVATION:
            if payload.__class__ is not ObservationTick:
                raise ContractError(f"{self.source}: observation payload must be an ObservationTick" + (
                    " (an ObservationBlock on a subscription that did not opt in)"
                    if payload.__class__ is ObservationBlock else ""
                ))
            return self.fixed_size
        if not isinstance(payload, dict) and not isinstance(payload, Mapping):  # dict: C check
            raise ContractError(f"{self.source}: payload must be a mapping")
        return envelope.portable_size

    def validate_block(self, item: object) -> int:
        """Rules 1-3 and 5-8 (module doc) of a block envelope: its admission size in bytes."""
        name = self.source
        if item.__class__ is not Envelope:
            raise ContractError(f"{name}: expected a stamped contract Envelope, got {type(item).__name__}")
        envelope: Envelope = item
        seq, cap, block = envelope.global_sequence, envelope.source_sequence, envelope.payload
        if envelope.source is not _OBSERVATION or block.__class__ is not ObservationBlock:
            raise ContractError(f"{name}: an ObservationBlock travels only as an observation payload")
        if seq.__class__ is not int or seq < 1 or cap.__class__ is not int or cap < 1:
            raise ContractError(
                f"{name}: global_sequence/source_sequence must be integers >= 1 (got {seq!r}/{cap!r})"
            )
        ticks = block.ticks
        count = len(ticks)
        if count < 1:  # the contract's block holds at least one tick
            raise ContractError(f"{name}: block of {count} ticks at global sequence {seq}")
        if count > self.max_block:
            raise ContractError(f"{name}: block of {count} ticks at global sequence {seq} exceeds max_block {self.max_block}")
        if block.capture_sequence != cap:
            raise ContractError(f"{name}: block capture_sequence {block.capture_sequence} is not the envelope's {cap}")
        layout, size = block.layout, self.fixed_size or 0
        if layout is not self._layout:
            if self._layout is not None or layout.__class__ is not PackedLayout or layout.nbytes != size:
                raise ContractError(
                    f"{name}: block layout at global sequence {seq} is not the Run's packed layout of {size} bytes a tick"
                )
            self._layout = layout  # the first block's layout is the Run's
        buffer = block.buffer
        if buffer.__class__ is not np.ndarray or buffer.flags.writeable or not buffer.flags.c_contiguous:
            raise ContractError(f"{name}: block buffer at global sequence {seq} must be a read-only, C-contiguous array")
        if buffer.nbytes != count * size:
            raise ContractError(
                f"{name}: block buffer at global sequence {seq} holds {buffer.nbytes} bytes, not {count} x {size}"
            )
        if ticks.__class__ is not np.ndarray or ticks.dtype != _INT64:
            raise ContractError(f"{name}: block ticks at global sequence {seq} must be {count} int64 values")
        times = block.sim_time_ns
        if times.__class__ is not np.ndarray or times.dtype != _INT64 or len(times) != count:
            raise ContractError(f"{name}: block sim_time_ns at global sequence {seq} must be {count} int64 values")
        if count > 1 and bool((times[1:] < times[:-1]).any()):
            raise ContractError(f"{name}: block sim_time_ns at global sequence {seq} decreases")
        return count * size

    def build(self, envelope: Envelope) -> CapturedItem:
        """The core envelope of a ``validate``d contract envelope (no checks).

        Built through the frozen class's slots, as Core builds the packed observation:
        the worker builds one per record, and ``__init__`` of a frozen class costs twice
        as much; a test pins the result equal to the constructed envelope."""
        core = _new(CapturedItem)
        _set_global(core, envelope.global_sequence)
        _set_capture(core, envelope.source_sequence)
        _set_generation(core, envelope.generation)
        _set_tick(core, envelope.tick)
        _set_sim_time(core, envelope.sim_time_ns)
        source = envelope.source
        if source is _BARRIER:
            _set_size(core, 0)
            _set_kind(core, _BARRIER_KIND)
        else:
            _set_size(core, self.fixed_size if source is _OBSERVATION else envelope.portable_size)
            _set_kind(core, _RECORD_KIND)
        _set_channel_sequence(core, _channel_sequence(envelope.payload) if source is _OBSERVATION else None)
        _set_payload(core, envelope.payload)
        name, stream, lane, required = self.source, self.stream, self.lane, self.required
        _set_source(core, name)
        _set_stream(core, stream)
        _set_lane(core, lane)
        _set_required(core, required)
        return core


def _channel_sequence(tick: object) -> int | None:
    """The tick's diagnostic live sequence (module header)."""
    samples = getattr(tick, "samples", None)
    if samples.__class__ is SampleBlock:
        return int(samples.channel_sequence)
    seqs = [getattr(s, "channel_sequence", None) for s in samples or ()]
    known = [s for s in seqs if isinstance(s, int)]
    return min(known) if known else None


@attrs.define(eq=False)
class CoreBinding:
    """The pipeline's only handle on Core; every failure is a ``RecordError``."""

    core: CoreServices
    component: str

    def subscribe(self, spec: SourceSpec, sink: EnvelopeSink) -> Closeable:
        """Atomic history-plus-live subscription for ``spec``; a ``BlockSink`` whose
        ``max_block`` exceeds 1 subscribes its ``blocks`` with it (module doc), and a Core
        that refuses the keyword (``TypeError``) gets the plain subscription."""
        if getattr(sink, "max_block", 1) > 1 and isinstance(sink, BlockSink):  # the Protocol check last: ~10 us
            try:
                return self.core.subscribe(
                    spec.name, sink.blocks, from_sequence=spec.from_sequence, channels=spec.channels,
                    max_block=sink.max_block,
                )
            except TypeError:  # a Core that predates blocks: the one probe
                sink.max_block = 1
            except Exception as exc:
                raise translate(exc, f"subscribe {spec.name}") from exc
        try:
            return self.core.subscribe(
                spec.name, sink, from_sequence=spec.from_sequence, channels=spec.channels
            )
        except Exception as exc:
            raise translate(exc, f"subscribe {spec.name}") from exc

    def request_grant(self, grant: str) -> None:
        """Ask for a capability grant."""
        try:
            self.core.request_grant(grant)
        except Exception as exc:
            raise translate(exc, f"grant {grant}") from exc

    def register_finalizer(
        self, timeout_s: float, sources: Sequence[str], finalizer: Finalizer
    ) -> FinalizerRegistration:
        """Register Record's required finalizer."""
        request = FinalizerRegistrationRequest(self.component, True, timeout_s, tuple(sources))
        try:
            return self.core.register_finalizer(request, finalizer)
        except Exception as exc:
            raise translate(exc, "register_finalizer") from exc

    def register_flow_gauge(self, gauge: FlowGauge) -> Closeable | None:
        """Let an unpaced host wait while ``gauge`` is pressed (contract section 10);
        ``None`` from an older Core without flow control."""
        register = getattr(self.core, "register_flow_gauge", None)
        if register is None:
            return None
        try:
            registration: Closeable = register(gauge)
        except Exception as exc:
            raise translate(exc, "register_flow_gauge") from exc
        return registration

    def completion_requester(self) -> Callable[[str], bool]:
        """A callable that asks Core for a failed completion with a reason."""

        def request(reason: str) -> bool:
            try:
                return bool(self.core.request_completion(
                    CompletionRequest(CompletionKind.FAILED, reason, self.component)
                ))
            except Exception:  # Core refused; the finalizer still reports the failure
                return False

        return request
