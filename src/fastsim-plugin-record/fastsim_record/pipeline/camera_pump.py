"""The camera pump: one subscription to Core's ``cameras`` source, feeding the media lane.

Core publishes every selected camera channel on the ``cameras`` source, each channel
with its own capture sequence keyed ``cameras.<alias>.<role>`` (the key the terminal
cut uses).  The pump is an ordinary :class:`~fastsim_record.pipeline.pumps.Pump` with two
camera-specific parts:

    | # | part                    | what it does (on the publishing thread, no encoding)          |
    |---|-------------------------|---------------------------------------------------------------|
    | 1 | ``CameraConverter``     | contract envelope with a ``CameraSample`` -> core envelope on  |
    |   |                         | source ``cameras.<alias>.<role>``, stream ``cameras.<alias>.*``,|
    |   |                         | the media lane, the alias's ``required`` flag and the frame's  |
    |   |                         | exact byte size; an unselected camera or role is a ContractError|
    | 2 | ``PerChannelContinuity``| one core ``SourceContinuity`` per camera channel (rules S1-S4) |

The frame stays the immutable buffer Core handed over: it is neither converted nor
copied here (``value.nbytes`` is read for byte admission, nothing else).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from fastsim_contract.values import CameraSample, Envelope, SourceKind
from fastsim_record.core.captured import CapturedItem, LaneName
from fastsim_record.core.generations import Discontinuity, SourceContinuity
from fastsim_record.errors import ContractError
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.pumps import LaneHandle, Pump
from fastsim_record.ports.cameras import ROLES, camera_stream_name

__all__ = [
    "CAMERA_SOURCE",
    "CameraConverter",
    "CameraPump",
    "PerChannelContinuity",
    "camera_channel_keys",
]

CAMERA_SOURCE = SourceKind.CAMERA.value
_CAMERA = SourceKind.CAMERA


def camera_channel_keys(aliases: Mapping[str, bool]) -> tuple[str, ...]:
    """Every ``cameras.<alias>.<role>`` source key of the selected aliases."""
    return tuple(f"cameras.{alias}.{role}" for alias in aliases for role in ROLES)


@attrs.define(eq=False, slots=True)
class CameraConverter:
    """Contract camera envelope -> core captured item (an ``ItemConverter``; table, part 1)."""

    aliases: Mapping[str, bool]  # alias -> required
    _routes: dict[tuple[str, str], tuple[str, str, bool]] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._routes = {
            (alias, role): (f"cameras.{alias}.{role}", camera_stream_name(alias, role), required)
            for alias, required in self.aliases.items()
            for role in ROLES
        }

    def __call__(self, item: object) -> CapturedItem:
        """Validate and convert; raises ContractError naming the field."""
        if item.__class__ is not Envelope:
            raise ContractError(
                f"cameras: expected a stamped contract Envelope, got {type(item).__name__}"
            )
        envelope = item
        if envelope.source is not _CAMERA:
            raise ContractError(f"cameras: envelope of source {envelope.source!r} on this subscription")
        sample = envelope.payload
        if not isinstance(sample, CameraSample):
            raise ContractError("cameras: payload must be a CameraSample")
        route = self._routes.get((sample.camera, sample.role))
        if route is None:
            raise ContractError(
                f"cameras: sample of unselected camera channel {sample.camera!r}/{sample.role!r}"
            )
        seq = envelope.global_sequence
        cap = envelope.source_sequence
        if seq.__class__ is not int or seq < 1 or cap.__class__ is not int or cap < 1:
            raise ContractError(
                f"cameras: global_sequence/source_sequence must be integers >= 1 (got {seq!r}/{cap!r})"
            )
        source, stream, required = route
        size = getattr(sample.value, "nbytes", None)
        return CapturedItem(
            global_sequence=seq, source=source, capture_sequence=cap, stream=stream,
            lane=LaneName.MEDIA, generation=envelope.generation, tick=envelope.tick,
            sim_time_ns=envelope.sim_time_ns, required=required,
            size=size if isinstance(size, int) else None,
            channel_sequence=sample.channel_sequence, payload=sample,
        )


@attrs.define(eq=False, slots=True)
class PerChannelContinuity:
    """One core ``SourceContinuity`` per camera channel key (module table, part 2)."""

    keys: tuple[str, ...]
    _trackers: dict[str, SourceContinuity] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._trackers = {k: SourceContinuity(k, carries_barriers=False) for k in self.keys}

    def check(self, envelope: CapturedItem) -> Discontinuity | None:
        """Rules S1-S4 on the envelope's own channel."""
        return self._trackers[envelope.source].check(envelope)

    @property
    def last_capture(self) -> int:
        """The largest last capture sequence over the channels (diagnostic)."""
        return max((t.last_capture for t in self._trackers.values()), default=0)

    def progress(self) -> dict[str, int]:
        """Channel key -> last capture sequence seen."""
        return {k: t.last_capture for k, t in self._trackers.items()}


class CameraPump(Pump):
    """The ``cameras`` source's pump: a Pump with per-channel continuity."""

    __slots__ = ("channels",)

    def __init__(self, aliases: Mapping[str, bool], handle: LaneHandle, monitor: Monitor) -> None:
        if handle.lane.spec.name is not LaneName.MEDIA:
            raise ContractError("cameras: the camera pump feeds the media lane only")
        super().__init__(CAMERA_SOURCE, CameraConverter(dict(aliases)), handle, monitor)
        self.channels = PerChannelContinuity(camera_channel_keys(aliases))
        self._continuity = self.channels  # type: ignore[assignment]
