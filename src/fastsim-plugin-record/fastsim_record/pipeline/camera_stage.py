"""The worker's camera stage: calibration enforcement and encoding, after queue admission.

The writer worker hands every released media envelope (in global order) to
:meth:`CameraStage.encode`, every reset barrier to :meth:`barrier`, and asks
:meth:`at_cut` at the terminal cut.  Per camera envelope:

    | # | step                                                       | violation -> raises          |
    |---|------------------------------------------------------------|------------------------------|
    | 1 | descriptor drift: the channel's (dtype, shape) is the one  | DescriptorDriftError (core D1-D2)|
    |   | declared when the stream opened                            |                              |
    | 2 | calibration epochs (core ``CalibrationTracker`` C1-C7):     | CalibrationError             |
    |   | per camera and generation, forward references only within  |                              |
    |   | the same tick, intrinsics before the next tick/barrier/cut |                              |
    | 3 | record checks and encoding (``CameraRecordEncoding``):       | DescriptorDriftError /            |
    |   | JPEG/PNG for images (the only place a frame is converted), | CalibrationError             |
    |   | exact float64 bytes for K, translation and quaternion      |                              |
    | 4 | missing required sample (rule C5, whole cameras): every    | CalibrationError             |
    |   | selected camera shares Core's capture cadence, so when a   |                              |
    |   | tick ends (next tick, barrier, cut) a required camera with |                              |
    |   | no sample in a tick another camera published in fails, and |                              |
    |   | at the cut a required camera that never published fails   |                              |

Every violation is also kept, so :meth:`at_cut` hands the fence (rule F5) the complete
list; a stage that raised once is failed for good (fail closed).

A lost sample of an optional camera (a gap from the media lane's declared policy) is
handed to :meth:`lost`: a lost intrinsics sample releases that tick's forward references
under rule C8 instead of failing C4, and :meth:`lost_declarations` lists the marks the
terminal fence records (``calibration_lost``).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import numpy as np

from fastsim_contract.values import CameraSample, ChannelDescriptor
from fastsim_record.core.captured import CapturedItem
from fastsim_record.core.descriptors import DescriptorTracker
from fastsim_record.core.epochs import (
    CalibrationRule,
    CalibrationTracker,
    CameraRole,
    LostDeclaration,
)
from fastsim_record.core.gaps import GapRecord
from fastsim_record.errors import CalibrationError, DescriptorDriftError
from fastsim_record.pipeline.camera_pump import camera_channel_keys
from fastsim_record.ports.cameras import (
    ARRAY_SHAPES,
    CameraRecordEncoding,
    EncodedCameraRecord,
    MakeCameraRecordEncoding,
    camera_stream_name,
    camera_streams,
)
from fastsim_record.ports.encoders import FrameEncoder
from fastsim_record.ports.sinks import StreamDecl
from fastsim_record.ports.sources import SourceSpec

__all__ = ["CameraSelection", "CameraSetup", "CameraStage", "rgb_size"]


@attrs.frozen
class CameraSetup:
    """One selected camera alias as the worker needs it."""

    alias: str
    channels: Mapping[str, str]  # role -> scene channel
    required: bool
    encoder: FrameEncoder = attrs.field(eq=False)


def rgb_size(descriptor: ChannelDescriptor) -> tuple[int, int, int]:
    """(width, height, channels) of a camera image channel declared as ``(H, W, C)`` uint8:
    C = 3 (RGB), or 1 (grey) / 4 (RGBA), which only PNG records (docs/fsr-format.md 9.2)."""
    shape = tuple(descriptor.shape)
    if len(shape) != 3 or shape[2] not in (1, 3, 4) or min(shape) < 1 or np.dtype(descriptor.dtype) != np.uint8:
        raise DescriptorDriftError(
            f"{descriptor.name}: a camera image channel must be uint8 (H, W, 3), or (H, W, 1) grey / "
            f"(H, W, 4) RGBA, declared {descriptor.dtype}{list(shape)}",
            stream=descriptor.name,
        )
    return int(shape[1]), int(shape[0]), int(shape[2])


def _declared(setup: CameraSetup, role: str) -> tuple[object, tuple[int, ...]]:
    if role == "rgb":
        return np.dtype(np.uint8), setup.encoder.descriptor.shape
    return np.dtype(np.float64), ARRAY_SHAPES[role]


@attrs.define(eq=False)
class CameraStage:
    """Worker-side calibration enforcement and encoding for every selected camera."""

    setups: tuple[CameraSetup, ...]
    #: the record-encoding adapter per alias, handed in by the composition root
    make_encoding: MakeCameraRecordEncoding
    _encoders: dict[str, CameraRecordEncoding] = attrs.field(init=False)
    _calibration: CalibrationTracker = attrs.field(init=False)
    _descriptors: DescriptorTracker = attrs.field(init=False, factory=DescriptorTracker)
    _failures: list[str] = attrs.field(init=False, factory=list)
    # rule 4: the (generation, tick) being released, its cameras, and every camera seen
    _tick: tuple[int, int] | None = attrs.field(init=False, default=None)
    _tick_cameras: set[str] = attrs.field(init=False, factory=set)
    _published: set[str] = attrs.field(init=False, factory=set)
    _required: frozenset[str] = attrs.field(init=False)
    _roles: dict[str, tuple[str, CameraRole]] = attrs.field(init=False, factory=dict)  # stream ->
    # (alias, role) -> (stream, role): built once, not per released sample
    _routes: dict[tuple[str, str], tuple[str, CameraRole]] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        self._encoders = {s.alias: self.make_encoding(s.alias, s.encoder) for s in self.setups}
        self._calibration = CalibrationTracker({s.alias: s.required for s in self.setups})
        self._required = frozenset(s.alias for s in self.setups if s.required)
        for setup in self.setups:
            for role in ("rgb", "intrinsics", "translation", "quaternion_xyzw"):
                self._descriptors.observe(camera_stream_name(setup.alias, role), _declared(setup, role))
                self._roles[camera_stream_name(setup.alias, role)] = (setup.alias, CameraRole(role))
                self._routes[setup.alias, role] = (camera_stream_name(setup.alias, role), CameraRole(role))

    def streams(self) -> tuple[StreamDecl, ...]:
        """The four stream declarations of every camera, in selection order."""
        out: list[StreamDecl] = []
        for setup in self.setups:
            out += camera_streams(
                setup.alias, setup.channels, setup.encoder.descriptor, required=setup.required
            )
        return tuple(out)

    def encode(self, envelope: CapturedItem) -> EncodedCameraRecord:
        """Enforce the rules on one released camera envelope and encode it (module table)."""
        if self._failures:
            raise CalibrationError(f"cameras: already failed: {self._failures[0]}")
        sample = envelope.payload
        if not isinstance(sample, CameraSample) or sample.camera not in self._encoders:
            raise self._latch(DescriptorDriftError(f"{envelope.stream}: not a selected camera sample"))
        key = (envelope.generation, envelope.tick)
        if key != self._tick:
            missing = self._end_tick()
            self._tick = key
            if missing is not None:
                raise self._latch(CalibrationError(missing, camera=sample.camera, rule=CalibrationRule.COMPLETE))
        self._tick_cameras.add(sample.camera)
        self._published.add(sample.camera)
        route = self._routes.get((sample.camera, sample.role))
        stream, role = route if route is not None else (camera_stream_name(sample.camera, sample.role), None)
        value = sample.value
        if isinstance(value, np.ndarray):  # a numpy dtype compares equal to its name
            descriptor: tuple[object, tuple[int, ...]] = (value.dtype, value.shape)
        else:
            descriptor = (type(value).__name__, ())
        drift = self._descriptors.observe(stream, descriptor)
        if drift is not None:
            raise self._latch(DescriptorDriftError(f"{stream}: descriptor drift: {drift.reason}", stream=stream))
        violation = self._calibration.observe(
            sample.camera, role if role is not None else CameraRole(sample.role), sample.calibration_digest,
            tick=envelope.tick, generation=envelope.generation,
        )
        if violation is not None:
            raise self._latch(
                CalibrationError(
                    f"calibration rule {violation.rule}: {violation.reason}",
                    camera=violation.camera, rule=violation.rule,
                )
            )
        try:
            return self._encoders[sample.camera].encode(sample)
        except (DescriptorDriftError, CalibrationError) as exc:
            raise self._latch(exc) from None

    def lost(self, gap: GapRecord) -> None:
        """A declared gap on a camera stream (rule C8 when it is an intrinsics sample)."""
        where = self._roles.get(gap.stream)
        if where is not None and not self._failures:
            self._calibration.lost(where[0], where[1], tick=gap.tick, generation=gap.generation)

    @property
    def lost_declarations(self) -> tuple[LostDeclaration, ...]:
        """Rule C8's marks so far (complete after :meth:`at_cut`)."""
        return self._calibration.lost_declarations

    def barrier(self, generation: int) -> None:
        """A reset barrier: a pending forward reference or incomplete tick raises (fail closed)."""
        missing = self._end_tick()
        self._tick = None
        if missing is not None:
            raise self._latch(CalibrationError(missing, rule=CalibrationRule.COMPLETE))
        before = len(self._calibration.violations)
        self._calibration.barrier(generation)
        new = self._calibration.violations[before:]
        if new:
            reason = f"calibration rule {new[0].rule}: {new[0].reason}"
            raise self._latch(CalibrationError(reason, camera=new[0].camera, rule=new[0].rule))

    def at_cut(self) -> tuple[str, ...]:
        """The terminal cut: every calibration and descriptor violation, in detection order."""
        reasons = list(self._failures)
        late = [self._end_tick()]
        late += [
            f"calibration rule C5: missing required sample: required camera {alias!r} "
            "published no sample before the terminal cut"
            for alias in sorted(self._required - self._published)
        ]
        reasons += [r for r in late if r is not None and r not in reasons]
        for violation in self._calibration.at_cut():
            reason = f"calibration rule {violation.rule}: {violation.reason}"
            if reason not in reasons:
                reasons.append(reason)
        return tuple(reasons)

    def _end_tick(self) -> str | None:
        """Rule 4 for the tick being released: a required camera absent while another published."""
        seen, self._tick_cameras = self._tick_cameras, set()
        absent = sorted(self._required - seen) if seen else []
        if not absent or self._tick is None:
            return None
        generation, tick = self._tick
        return (
            f"calibration rule C5: missing required sample: required camera {absent[0]!r} "
            f"published nothing in tick {tick} (generation {generation}) while "
            f"{sorted(seen)[0]!r} did"
        )

    def _latch(self, error: DescriptorDriftError | CalibrationError) -> DescriptorDriftError | CalibrationError:
        self._failures.append(str(error))
        return error


@attrs.frozen
class CameraSelection:
    """The selected cameras, ready to wire."""

    spec: SourceSpec
    aliases: dict[str, bool]  # alias -> required
    stage: CameraStage = attrs.field(eq=False)

    @property
    def channel_keys(self) -> tuple[str, ...]:
        """The per-channel source keys the terminal cut and the fence use (rule 5)."""
        return camera_channel_keys(self.aliases)
