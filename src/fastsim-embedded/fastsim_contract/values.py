"""Core-owned values that cross the Core/Record boundary.

Everything here is immutable.  Envelopes arrive already stamped by Core: the global
recording sequence, the Runtime generation, the tick and the simulation time are
Core's facts, never the plugin's.

Global recording sequence
    Core allocates one contiguous sequence, starting at 1, over exactly the items
    Record captures (Record is the sole ordered capture owner declared by its
    manifest's ``recording_sources``): lifecycle, plugin events, control audit and
    results, the selected observation ticks, generation barriers, camera samples and
    the optional render-state / geometry / fluid items.  A hole in it is therefore
    either a declared loss (a gap) or a failure.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import NamedTuple

import attrs

from fastsim_contract.samples import (
    ChannelSample,
    ObservationBlock,
    ObservationTick,
    PackedLayout,
    PackedValues,
    RowViews,
    SampleBlock,
)

__all__ = [
    "SERVICE_CEILING_BYTES",
    "RECEIPT_REQUIRED_KEYS",
    "CameraCapture",
    "CameraSample",
    "CapturePlan",
    "ChannelDescriptor",
    "ChannelSample",
    "ObservationBlock",
    "CompletionKind",
    "CompletionRequest",
    "Envelope",
    "FinalizerRegistrationRequest",
    "FinalizerResult",
    "GenerationBarrier",
    "ObservationTick",
    "PackedLayout",
    "PackedValues",
    "RowViews",
    "SampleBlock",
    "SourceKind",
    "TerminalSemanticCut",
]

#: The conservative per-envelope charge for critical-lane admission when the producer
#: did not compute the portable byte size (older Core releases): 1 MiB.
SERVICE_CEILING_BYTES = 1 << 20


class SourceKind(enum.Enum):
    """The capture sources Core can deliver to Record."""

    LIFECYCLE = "lifecycle"
    PLUGIN_EVENT = "events"
    CONTROL_AUDIT = "control.audit"
    CONTROL_RESULT = "control.result"
    OBSERVATION = "observations"
    GENERATION_BARRIER = "generation"
    CAMERA = "cameras"
    RENDER_STATE = "render.state"
    GEOMETRY = "geometry"
    FLUID_EMISSION = "fluid.emissions"


@attrs.frozen
class ChannelDescriptor:
    """A scene channel as the backend declares it before the run starts.

    ``kind`` is ``numeric`` (joint vectors, poses, depth...), ``rgb`` (a camera's image:
    packed HxWx3 uint8 RGB, or HxWx1 grey / HxWx4 RGBA, which Record writes as PNG), ``intrinsics`` (3x3 float64 K), ``translation`` (float64[3]) or
    ``quaternion_xyzw`` (float64[4]).  ``shape``/``dtype``/``units`` describe one sample;
    ``layout`` is the byte layout (``C``-contiguous little-endian).
    """

    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    units: tuple[str, ...] = ()
    entity: str = ""
    layout: str = "C<"
    attributes: Mapping[str, object] = attrs.field(factory=dict)


@attrs.frozen
class CameraSample:
    """One camera channel sample (RGB frame, K, translation or quaternion).

    ``calibration_digest`` names the calibration epoch the sample belongs to; RGB and
    extrinsics may forward-reference a digest that the matching intrinsics sample
    declares later in the same tick.  ``profile`` is the complete bounded calibration
    profile and is present on intrinsics samples.
    """

    camera: str
    channel: str
    role: str  # "rgb" | "intrinsics" | "translation" | "quaternion_xyzw"
    value: object  # read-only numpy array
    calibration_digest: str
    channel_sequence: int
    profile: Mapping[str, object] | None = None


class Envelope(NamedTuple):
    """An immutable, already stamped item from one capture source.

    ``payload`` is a JSON-able mapping for lifecycle, events, control, geometry and fluid
    items, an :class:`ObservationTick` for observations, a :class:`CameraSample` for
    cameras, and a mapping of read-only arrays for render state.  ``portable_size`` is
    the producer-computed portable byte size (lifecycle and plugin events, Core
    >=0.1.0a33); ``None`` means "charge the service ceiling".

    A tuple underneath (Core builds one per captured item on the simulation thread: one
    C call, ``tuple.__new__(Envelope, fields)``, instead of a slot store per field), with
    the value semantics of a frozen attrs class: equal only to an ``Envelope`` with equal
    fields, hashed by its fields, unordered, and any assignment raises
    ``attrs.exceptions.FrozenInstanceError``.
    """

    global_sequence: int
    source: SourceKind
    generation: int
    tick: int
    sim_time_ns: int
    payload: object
    portable_size: int | None = None
    source_sequence: int = 0  # per-source sequence (capture_sequence for observations)

    # Equal only to an Envelope: a plain tuple of the same fields is not one (``False`` in
    # both directions, as Python asks this subclass first), anything else is asked back.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return tuple.__eq__(self, other)
        return False if isinstance(other, tuple) else NotImplemented

    def __ne__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return tuple.__ne__(self, other)
        return True if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return tuple.__hash__(self)

    # unordered, as the attrs class was (order=False)
    def __lt__(self, other: object) -> bool:
        return NotImplemented

    def __le__(self, other: object) -> bool:
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        return NotImplemented

    def __ge__(self, other: object) -> bool:
        return NotImplemented

    def __setattr__(self, name: str, value: object) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    def __delattr__(self, name: str) -> None:
        raise attrs.exceptions.FrozenInstanceError()


class CompletionKind(enum.Enum):
    """Why a Run completes.  The first completion request wins."""

    NORMAL = "normal"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STOPPED = "stopped"


def _keep_needs_failed(request: CompletionRequest, attribute: object, keep: bool) -> None:
    if keep is not True and keep is not False:  # a flag that publishes a failed Run: never a truthy stand-in
        raise TypeError(f"keep_recorded must be True or False (got {type(keep).__name__})")
    if keep and request.kind is not CompletionKind.FAILED:
        raise ValueError(f"keep_recorded applies to a failed completion only (got {request.kind.value})")


@attrs.frozen
class CompletionRequest:
    """A request to complete the Run; ``requested_by`` names the component.

    ``keep_recorded`` (``failed`` only; contract section 6, rows FR1-FR5): the Run's data
    source failed (the simulation or the env raised), and what was recorded before it is
    sound, so Core lets a consumer commit it (the artifact says ``failed``).  Core honours
    it only from its own data source; a plugin's request is taken as a plain ``failed``.
    """

    kind: CompletionKind
    reason: str
    requested_by: str
    keep_recorded: bool = attrs.field(default=False, validator=_keep_needs_failed, kw_only=True)


@attrs.frozen
class FinalizerRegistrationRequest:
    """How a component asks the terminal coordinator to run its finalizer."""

    component: str
    required: bool
    requested_timeout_s: float
    sources: tuple[str, ...]  # source names the finalizer consumes through the cut


@attrs.frozen
class TerminalSemanticCut:
    """Core's terminal cut: the last global sequence and each source's last sequence.

    ``source_final_sequences`` maps a source name (``SourceKind.value``, or
    ``cameras.<alias>.<role>`` for camera channels) to the last per-source sequence
    published before the cut (0 when the source published nothing).
    """

    final_global_sequence: int
    source_final_sequences: Mapping[str, int]
    completion: CompletionRequest
    final_generation: int


@attrs.frozen
class FinalizerResult:
    """A finalizer's answer to the terminal coordinator."""

    component: str
    ok: bool
    reason: str | None
    committed_name: str | None = None
    summary: Mapping[str, object] = attrs.field(factory=dict)


@attrs.frozen
class GenerationBarrier:
    """Payload of a ``GENERATION_BARRIER`` envelope: Runtime generation ``generation`` starts.

    Barriers travel in the ordered observation subscription and take the next
    ``capture_sequence`` (``Envelope.source_sequence``), so observation continuity is
    contiguous over ticks and barriers.  ``previous`` is the generation that ended.
    """

    generation: int
    previous: int
    reason: str = "reset"


@attrs.frozen
class CameraCapture:
    """One selected camera: an alias and its four channel names."""

    alias: str
    rgb: str
    intrinsics: str
    translation: str
    quaternion_xyzw: str

    def channels(self) -> dict[str, str]:
        """Role -> channel name (every field but ``alias``, in field order)."""
        return {role: channel for role, channel in attrs.asdict(self).items() if role != "alias"}


@attrs.frozen
class CapturePlan:
    """The global capture source mask, compiled before any plugin starts.

    Core allocates global recording sequences only for items in this plan, so a hole
    Record sees is a loss or a failure, never "something Record did not ask for".
    ``sources`` holds ``SourceKind`` values; ``generation`` is implied by
    ``observations``.  ``observation_channels`` is the ordered selected numeric channel
    set (empty means no observation source, no grant, no polling).
    """

    sources: frozenset[str]
    observation_channels: tuple[str, ...] = ()
    cameras: tuple[CameraCapture, ...] = ()
    render_state_hz: float | None = None
    geometry_hz: float | None = None

    def justified_grants(self) -> dict[str, bool]:
        """Which capability grant this plan justifies (contract section 5):

        | # | grant              | granted when                      |
        |---|--------------------|-----------------------------------|
        | 1 | output.write_lease | always                            |
        | 2 | observation        | the plan selects numeric channels |
        | 3 | camera             | the plan selects cameras          |
        | 4 | render.state       | the plan enables render.state     |
        | 5 | scene.geometry@2   | the plan enables geometry         |

        Any other grant is unknown and refused.
        """
        return {
            "output.write_lease": True,
            "observation": bool(self.observation_channels),
            "camera": bool(self.cameras),
            "render.state": self.render_state_hz is not None,
            "scene.geometry@2": self.geometry_hz is not None,
        }

    def captures(self, source: str) -> bool:
        """Whether ``source`` (a ``SourceKind`` value) is in the mask."""
        if source == SourceKind.GENERATION_BARRIER.value:
            return SourceKind.OBSERVATION.value in self.sources
        return source in self.sources


#: Keys every validation receipt handed to ``OutputService.confirm_validation`` carries:
#: ``validator`` (schema/profile name), ``validated_bytes`` (== the sealed size),
#: ``integrity`` (``structural``/``fast``/``strong``), ``content_sha256`` (hex or
#: ``None``; required under ``RunOutputPolicy(integrity="sha256")``), ``footer`` (FSR
#: footer identity) and ``completion_id`` (== ``RunContext.completion_id``).
RECEIPT_REQUIRED_KEYS = ("validator", "validated_bytes", "integrity", "completion_id")
