"""The Core binding: contract envelopes in, core envelopes out; Core errors translated.

The pipeline talks to Core only through this module.  A :class:`EnvelopeConverter`
runs on the publishing thread inside a pump, so it does only cheap checks
(``validate``); the frozen :class:`fastsim_record.core.envelope.Envelope` is built by
``build`` -- on the writer worker, through ``materialize``, for the carriers a pump
admits -- and it never encodes.

Envelope validation (``EnvelopeConverter.__call__``):

    | # | check                                                  | failure            |
    |---|--------------------------------------------------------|--------------------|
    | 1 | the item is a contract ``Envelope`` (immutable, stamped)| ContractError      |
    | 2 | its ``source`` kind is one this subscription carries    | ContractError      |
    | 3 | global sequence and source sequence are integers >= 1  | ContractError      |
    | 4 | the payload type fits the kind (tick, barrier, mapping)| ContractError      |

Size charged by lane admission: the producer-computed portable size when present, the
fixed record size for numeric ticks (known from the channel descriptors), otherwise
``None`` (the core charges the 1 MiB service ceiling).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from fastsim_contract.errors import CoreError
from fastsim_contract.protocols import CoreServices, Finalizer, FinalizerRegistration, FlowGauge
from fastsim_contract.values import (
    CompletionKind,
    CompletionRequest,
    Envelope,
    FinalizerRegistrationRequest,
    GenerationBarrier,
    ObservationTick,
    SourceKind,
)
from fastsim_record.core.envelope import Envelope as CoreEnvelope
from fastsim_record.core.envelope import EnvelopeKind, LaneName
from fastsim_record.errors import ContractError, RecordError
from fastsim_record.ports.sources import Closeable, EnvelopeSink, SourceSpec

__all__ = ["CoreBinding", "EnvelopeConverter", "materialize", "translate"]

_new = object.__new__
_RECORD_KIND = EnvelopeKind.RECORD
_BARRIER_KIND = EnvelopeKind.BARRIER


def _slot(name: str) -> Callable[[object, object], None]:
    setter: Callable[[object, object], None] = vars(CoreEnvelope)[name].__set__  # member descriptor
    return setter


_set_global = _slot("global_sequence")
_set_source = _slot("source")
_set_capture = _slot("capture_sequence")
_set_stream = _slot("stream")
_set_lane = _slot("lane")
_set_generation = _slot("generation")
_set_tick = _slot("tick")
_set_sim_time = _slot("sim_time_ns")
_set_required = _slot("required")
_set_size = _slot("size")
_set_kind = _slot("kind")
_set_channel_sequence = _slot("channel_sequence")
_set_payload = _slot("payload")

_BARRIER = SourceKind.GENERATION_BARRIER
_OBSERVATION = SourceKind.OBSERVATION


def translate(exc: BaseException, what: str) -> RecordError:
    """A Core (or unexpected) error as one ``fastsim_record.errors`` line."""
    if isinstance(exc, RecordError):
        return exc
    if isinstance(exc, CoreError):
        return ContractError(f"{what}: Core refused: {exc}", cause=type(exc).__name__)
    return ContractError(f"{what}: {type(exc).__name__}: {exc}", cause=type(exc).__name__)


@attrs.define(eq=False, slots=True)
class EnvelopeConverter:
    """Contract envelope of one subscription -> core envelope (rules 1-4)."""

    source: str
    stream: str
    lane: LaneName
    required: bool
    kinds: frozenset[SourceKind]
    fixed_size: int | None = None
    _kinds: tuple[SourceKind, ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._kinds = tuple(self.kinds)

    def __call__(self, item: object) -> CoreEnvelope:
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
                raise ContractError(f"{self.source}: observation payload must be an ObservationTick")
            return self.fixed_size
        if not isinstance(payload, dict) and not isinstance(payload, Mapping):  # dict: C check
            raise ContractError(f"{self.source}: payload must be a mapping")
        return envelope.portable_size

    def build(self, envelope: Envelope) -> CoreEnvelope:
        """The core envelope of a ``validate``d contract envelope (no checks).

        Built through the frozen class's slots, as Core builds the packed observation:
        the worker builds one per record, and ``__init__`` of a frozen class costs twice
        as much; a test pins the result equal to the constructed envelope."""
        core = _new(CoreEnvelope)
        source = envelope.source
        barrier = source is _BARRIER
        _set_global(core, envelope.global_sequence)
        _set_source(core, self.source)
        _set_capture(core, envelope.source_sequence)
        _set_stream(core, self.stream)
        _set_lane(core, self.lane)
        _set_generation(core, envelope.generation)
        _set_tick(core, envelope.tick)
        _set_sim_time(core, envelope.sim_time_ns)
        _set_required(core, self.required)
        _set_size(core, 0 if barrier else self.fixed_size if source is _OBSERVATION else envelope.portable_size)
        _set_kind(core, _BARRIER_KIND if barrier else _RECORD_KIND)
        _set_channel_sequence(core, None)
        _set_payload(core, envelope.payload)
        return core


def materialize(item: object) -> CoreEnvelope:
    """A lane item as its core envelope: a pump's carrier ``(contract envelope,
    converter)`` is built now (on the worker); a core envelope passes through."""
    if item.__class__ is tuple:
        contract, convert = item
        built: CoreEnvelope = convert.build(contract)
        return built
    return item  # type: ignore[return-value]


@attrs.define(eq=False)
class CoreBinding:
    """The pipeline's only handle on Core; every failure is a ``RecordError``."""

    core: CoreServices
    component: str

    def subscribe(self, spec: SourceSpec, sink: EnvelopeSink) -> Closeable:
        """Atomic history-plus-live subscription for ``spec``."""
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
