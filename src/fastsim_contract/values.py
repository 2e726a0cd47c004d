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
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import attrs
import numpy as np

__all__ = [
    "SERVICE_CEILING_BYTES",
    "RECEIPT_REQUIRED_KEYS",
    "CameraCapture",
    "CameraSample",
    "CapturePlan",
    "ChannelDescriptor",
    "ChannelSample",
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

    ``kind`` is ``numeric`` (joint vectors, poses, depth...), ``rgb`` (packed HxWx3
    uint8), ``intrinsics`` (3x3 float64 K), ``translation`` (float64[3]) or
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
class ChannelSample:
    """One channel's value in one tick; ``channel_sequence`` is diagnostic only."""

    channel: str
    value: object  # an immutable (read-only) numpy array in practice
    channel_sequence: int


class RowViews(Sequence[object]):
    """Channel values that are rows of a few read-only 2-D blocks, viewed on access.

    A backend that computes its numeric state as blocks (e.g. all joint positions of all
    entities in one array) lets Core publish one tick without creating one array object
    per channel: ``RowViews(blocks, rows)`` yields ``blocks[b][r]`` for each ``(b, r)``
    in ``rows``.  The blocks are read-only and never mutated, so every view is too.
    """

    __slots__ = ("blocks", "rows")
    blocks: tuple[Any, ...]
    rows: tuple[tuple[int, int], ...]

    def __init__(self, blocks: tuple[Any, ...], rows: tuple[tuple[int, int], ...]) -> None:
        object.__setattr__(self, "blocks", blocks)
        object.__setattr__(self, "rows", rows)

    def __setattr__(self, name: str, value: object) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, i: int) -> object: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[object, ...]: ...
    def __getitem__(self, i: int | slice) -> object:
        if isinstance(i, slice):
            return tuple(self)[i]
        block, row = self.rows[i]
        return self.blocks[block][row]

    def __iter__(self) -> Iterator[object]:
        blocks = self.blocks
        for block, row in self.rows:
            yield blocks[block][row]

    def __repr__(self) -> str:
        return f"RowViews({len(self.rows)} rows of {len(self.blocks)} blocks)"


@attrs.frozen
class PackedLayout:
    """Where each channel of a packed tick lives: channels back to back, no padding.

    ``fields`` is one ``(dtype, shape)`` per channel in sample order; ``dtype`` is a
    numpy dtype string with its byte order (``"<f8"``), ``shape`` one sample's shape.
    Channel ``i`` occupies ``offsets[i]`` .. ``offsets[i] + prod(shape) * itemsize`` in
    C order; ``nbytes`` is the whole tick.  Core builds one layout per Run and shares it
    across ticks, so a consumer can check it once and then compare by identity.
    """

    fields: tuple[tuple[str, tuple[int, ...]], ...]
    offsets: tuple[int, ...] = attrs.field(init=False)
    nbytes: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        offsets: list[int] = []
        at = 0
        for dtype, shape in self.fields:
            offsets.append(at)
            at += math.prod(shape) * np.dtype(dtype).itemsize
        object.__setattr__(self, "offsets", tuple(offsets))
        object.__setattr__(self, "nbytes", at)


class PackedValues(Sequence[object]):
    """Channel values of one tick packed into ONE read-only buffer (``PackedLayout``).

    ``buffer`` is a read-only, C-contiguous numpy array of exactly ``layout.nbytes``
    bytes that nobody mutates afterwards; the whole tick is ``buffer.tobytes()``.  Item
    ``i`` is a read-only array view of channel ``i`` (made on access).  A backend that
    keeps its numeric state packed lets Core publish a 90-channel tick as one buffer,
    and a consumer encode it with one copy.
    """

    __slots__ = ("buffer", "layout")
    buffer: Any
    layout: PackedLayout

    def __init__(self, buffer: Any, layout: PackedLayout) -> None:
        if buffer.nbytes != layout.nbytes:
            raise ValueError(f"PackedValues: buffer has {buffer.nbytes} bytes, layout {layout.nbytes}")
        object.__setattr__(self, "buffer", buffer)
        object.__setattr__(self, "layout", layout)

    def __setattr__(self, name: str, value: object) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    def __len__(self) -> int:
        return len(self.layout.fields)

    @overload
    def __getitem__(self, i: int) -> object: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[object, ...]: ...
    def __getitem__(self, i: int | slice) -> object:
        if isinstance(i, slice):
            return tuple(self)[i]
        dtype, shape = self.layout.fields[i]
        raw = self.buffer.reshape(-1).view(np.uint8)
        return np.frombuffer(raw, dtype=dtype, count=math.prod(shape), offset=self.layout.offsets[i]).reshape(shape)

    def __iter__(self) -> Iterator[object]:
        for i in range(len(self.layout.fields)):
            yield self[i]

    def __repr__(self) -> str:
        return f"PackedValues({len(self.layout.fields)} channels, {self.layout.nbytes} bytes)"


class SampleBlock(Sequence[ChannelSample]):
    """The samples of one tick, stored column-wise: immutable, materialized on access.

    A Core publishing many channels per tick builds one ``SampleBlock`` (the plan's
    shared channel-name tuple, a sequence of read-only values -- a tuple or
    :class:`RowViews` -- and one ``channel_sequence``)
    instead of one :class:`ChannelSample` object per channel.  It is a read-only
    ``Sequence[ChannelSample]`` equal to the tuple of its samples; consumers on a hot path
    read ``channels`` and ``values`` directly.
    """

    __slots__ = ("channel_sequence", "channels", "values")
    channels: tuple[str, ...]
    values: Sequence[object]
    channel_sequence: int

    def __init__(self, channels: tuple[str, ...], values: Sequence[object], channel_sequence: int) -> None:
        if len(channels) != len(values):
            raise ValueError(f"SampleBlock: {len(channels)} channels but {len(values)} values")
        object.__setattr__(self, "channels", channels)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "channel_sequence", channel_sequence)

    def __setattr__(self, name: str, value: object) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    def __len__(self) -> int:
        return len(self.channels)

    @overload
    def __getitem__(self, index: int) -> ChannelSample: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[ChannelSample, ...]: ...
    def __getitem__(self, index: int | slice) -> ChannelSample | tuple[ChannelSample, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        return ChannelSample(self.channels[index], self.values[index], self.channel_sequence)

    def __iter__(self) -> Iterator[ChannelSample]:
        seq = self.channel_sequence
        for channel, value in zip(self.channels, self.values):
            yield ChannelSample(channel, value, seq)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.channels, self.channel_sequence))

    def __repr__(self) -> str:
        return f"SampleBlock({len(self.channels)} channels, channel_sequence={self.channel_sequence})"


@attrs.frozen
class ObservationTick:
    """All selected numeric channels of one tick: one atomic record.

    ``samples`` is a tuple of :class:`ChannelSample` or a :class:`SampleBlock` (the
    embedded host publishes blocks); ``channels``/``values`` read either form without
    materializing per-channel objects.
    """

    capture_sequence: int
    samples: Sequence[ChannelSample]

    @property
    def channels(self) -> tuple[str, ...]:
        """Channel names in sample order."""
        if isinstance(self.samples, SampleBlock):
            return self.samples.channels
        return tuple(s.channel for s in self.samples)

    @property
    def values(self) -> Sequence[object]:
        """Sample values in sample order."""
        if isinstance(self.samples, SampleBlock):
            return self.samples.values
        return tuple(s.value for s in self.samples)


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


@attrs.frozen
class Envelope:
    """An immutable, already stamped item from one capture source.

    ``payload`` is a JSON-able mapping for lifecycle, events, control, geometry and fluid
    items, an :class:`ObservationTick` for observations, a :class:`CameraSample` for
    cameras, and a mapping of read-only arrays for render state.  ``portable_size`` is
    the producer-computed portable byte size (lifecycle and plugin events, Core
    >=0.1.0a33); ``None`` means "charge the service ceiling".
    """

    global_sequence: int
    source: SourceKind
    generation: int
    tick: int
    sim_time_ns: int
    payload: object
    portable_size: int | None = None
    source_sequence: int = 0  # per-source sequence (capture_sequence for observations)


class CompletionKind(enum.Enum):
    """Why a Run completes.  The first completion request wins."""

    NORMAL = "normal"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STOPPED = "stopped"


@attrs.frozen
class CompletionRequest:
    """A request to complete the Run; ``requested_by`` names the component."""

    kind: CompletionKind
    reason: str
    requested_by: str


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
        """Role -> channel name."""
        return {
            "rgb": self.rgb,
            "intrinsics": self.intrinsics,
            "translation": self.translation,
            "quaternion_xyzw": self.quaternion_xyzw,
        }


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
