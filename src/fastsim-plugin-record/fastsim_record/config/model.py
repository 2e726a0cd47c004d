"""The Record component's config as frozen attrs values (the effective, compiled form).

Field validators hold in every catalog version and carry the exact user-facing text;
rules that span fields or differ between versions live in ``rules.py``.  Defaults are
the README's "currently executable configuration" (0.3.12):

    integrity: structural            output: {name: episode.fsr}
    streams:  lifecycle/events/control: true
              observations: {mode: all_numeric, include: {}}
              cameras: {}              (encoding jpeg, quality 92 when omitted)
              render_state: {enabled: false, rate_hz: 30.0}
              geometry:     {enabled: false, rate_hz: 30.0}
    queues:   critical 4096 items / 64 MiB, numeric 2048 / 256 MiB,
              media 64 / 512 MiB, overload fail_run
    batching: 256 items, 16 MiB, 1.0 s of simulation time
    finalize: requested_timeout_s 60, preserve_incomplete true, postprocessors {}
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Mapping
from typing import Any

import attrs

from fastsim_contract.output_names import output_name_refusal
from fastsim_contract.run import output_name_problem
from fastsim_contract.run_structure import describe, non_empty, one_of, positive_number

__all__ = [
    "CAMERA_ENCODINGS",
    "DEFAULT_JPEG_QUALITY",
    "GRANT_CAMERA",
    "GRANT_OBSERVATION",
    "GRANT_OUTPUT",
    "GRANT_RENDER_STATE",
    "GRANT_SCENE_GEOMETRY",
    "INTEGRITY_MODES",
    "OBSERVATION_MODES",
    "OVERLOAD_POLICIES",
    "BatchingConfig",
    "CameraConfig",
    "FinalizeConfig",
    "ObservationChannel",
    "ObservationsConfig",
    "OutputConfig",
    "QueueConfig",
    "QueuesConfig",
    "RateCaptureConfig",
    "RecordConfig",
    "StreamsConfig",
]

OBSERVATION_MODES = ("all_numeric", "none", "explicit")
#: Authorable encodings; ``raw`` is the legacy (0.3.0-0.3.5) effective value only.
CAMERA_ENCODINGS = ("jpeg", "png")
LEGACY_RAW_ENCODING = "raw"
DEFAULT_JPEG_QUALITY = 92
INTEGRITY_MODES = ("structural", "fast", "strong")
OVERLOAD_POLICIES = ("fail_run", "degrade_recording", "drop_oldest", "drop_newest")
LOSSY_POLICIES = OVERLOAD_POLICIES[1:]

GRANT_OBSERVATION = "observation"
GRANT_CAMERA = "camera"
GRANT_RENDER_STATE = "render.state"
GRANT_SCENE_GEOMETRY = "scene.geometry@2"
GRANT_OUTPUT = "output.write_lease"


def positive_int(_: object, __: attrs.Attribute[Any], value: int) -> None:
    """Validator: an integer greater than zero."""
    if value <= 0:
        raise ValueError(f"must be a positive integer (got {describe(value)})")


#: Upper bounds the machine can honour (a lane holds at most this much in memory; a
#: batch is encoded and written in one piece).
LANE_MAX_ITEMS = 1 << 20
LANE_MAX_BYTES = 16 << 30
BATCH_MAX_ITEMS = 1 << 16
BATCH_MAX_BYTES = 1 << 30
BATCH_SPAN_MIN_S = 0.001
BATCH_SPAN_MAX_S = 3600.0
FINALIZE_MAX_TIMEOUT_S = 3600.0


def bounded_int(high: int) -> Any:
    """Validator: a positive integer of at most ``high``."""
    def check(_: object, attribute: attrs.Attribute[Any], value: int) -> None:
        positive_int(_, attribute, value)
        if value > high:
            raise ValueError(f"must be at most {high} (got {describe(value)})")
    return check


def bounded_number(high: float, *, low: float | None = None) -> Any:
    """Validator: a positive finite number of at most ``high`` (and at least ``low``)."""
    def check(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
        positive_number(_, attribute, value)
        if low is not None and value < low:
            raise ValueError(f"must be at least {low:g} (got {describe(value)})")
        if value > high:
            raise ValueError(f"must be at most {high:g} (got {describe(value)})")
    return check


def exactly_one(_: object, __: attrs.Attribute[Any], value: int) -> None:
    """Validator: ``every_n_samples`` is fixed to 1 (cadence belongs to Core's runtime)."""
    if value != 1:
        raise ValueError(
            "must be 1: capture cadence is set by runtime.sensor_hz and runtime.rate_policy,"
            f" and values above 1 would create sequence holes (got {describe(value)})"
        )


def jpeg_quality(_: object, __: attrs.Attribute[Any], value: int | None) -> None:
    """Validator: an exact integer from 1 through 100 (or omitted)."""
    if value is not None and not 1 <= value <= 100:
        raise ValueError(f"must be an integer from 1 through 100 (got {describe(value)})")


def bare_file_name(_: object, __: attrs.Attribute[Any], value: str) -> None:
    """Validator: a bare file name (no directory, no traversal); Core owns the directory."""
    bad = (
        not value
        or value in (".", "..")
        or "/" in value
        or "\\" in value
        or "\x00" in value
        or value != value.strip()
    )
    if bad:
        raise ValueError(f"must be a bare file name without directories (got {describe(value)})")
    refusal = output_name_refusal(value)  # the Core contract's one rule: the host applies the same
    if refusal is not None:
        raise ValueError(f"must be a name the host can commit and the batch tools list: {refusal}")
    problem = output_name_problem(value)
    if problem is not None:
        raise ValueError(problem)




@attrs.frozen
class ObservationChannel:
    """One explicitly selected numeric observation channel."""

    channel: str = attrs.field(validator=non_empty)
    required: bool = True
    every_n_samples: int = attrs.field(default=1, validator=exactly_one)


@attrs.frozen
class ObservationsConfig:
    """Which numeric observation channels are recorded."""

    mode: str = attrs.field(default="all_numeric", validator=one_of(OBSERVATION_MODES))
    include: Mapping[str, ObservationChannel] = attrs.field(factory=dict)


@attrs.frozen
class CameraConfig:
    """One camera alias: its RGB channel, calibration channels and codec."""

    rgb: str = attrs.field(validator=non_empty)
    intrinsics: str = attrs.field(validator=non_empty)
    translation: str = attrs.field(validator=non_empty)
    quaternion_xyzw: str = attrs.field(validator=non_empty)
    required: bool = True
    every_n_samples: int = attrs.field(default=1, validator=exactly_one)
    encoding: str = attrs.field(
        default="jpeg", validator=one_of(CAMERA_ENCODINGS, legacy=(LEGACY_RAW_ENCODING,))
    )
    quality: int | None = attrs.field(default=None, validator=jpeg_quality)


@attrs.frozen
class RateCaptureConfig:
    """An optional, rate-bounded capture (render_state, geometry): disabled by default."""

    enabled: bool = False
    rate_hz: float = attrs.field(default=30.0, validator=positive_number)


@attrs.frozen
class StreamsConfig:
    """The selected sources."""

    lifecycle: bool = True
    events: bool = True
    control: bool = True
    observations: ObservationsConfig = attrs.field(factory=ObservationsConfig)
    cameras: Mapping[str, CameraConfig] = attrs.field(factory=dict)
    render_state: RateCaptureConfig = attrs.field(factory=RateCaptureConfig)
    geometry: RateCaptureConfig = attrs.field(factory=RateCaptureConfig)


@attrs.frozen
class OutputConfig:
    """The primary artifact's bare file name (Core chooses the directory)."""

    name: str = attrs.field(default="episode.fsr", validator=bare_file_name)


@attrs.frozen
class QueueConfig:
    """One bounded lane."""

    max_items: int = attrs.field(validator=bounded_int(LANE_MAX_ITEMS))
    max_bytes: int = attrs.field(validator=bounded_int(LANE_MAX_BYTES))
    overload: str = attrs.field(default="fail_run", validator=one_of(OVERLOAD_POLICIES))


@attrs.frozen
class QueuesConfig:
    """The three lanes: critical, numeric, media."""

    critical: QueueConfig = attrs.field(factory=lambda: QueueConfig(4096, 64 * 1024 * 1024))
    numeric: QueueConfig = attrs.field(factory=lambda: QueueConfig(2048, 256 * 1024 * 1024))
    media: QueueConfig = attrs.field(factory=lambda: QueueConfig(64, 512 * 1024 * 1024))


@attrs.frozen
class BatchingConfig:
    """Batch flush limits: whichever is reached first."""

    max_items: int = attrs.field(default=256, validator=bounded_int(BATCH_MAX_ITEMS))
    max_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=bounded_int(BATCH_MAX_BYTES))
    max_sim_duration_s: float = attrs.field(
        default=1.0, validator=bounded_number(BATCH_SPAN_MAX_S, low=BATCH_SPAN_MIN_S)
    )


@attrs.frozen
class FinalizeConfig:
    """Finalizer settings (0.3.8+: preserve_incomplete true, postprocessors empty)."""

    requested_timeout_s: float = attrs.field(
        default=60.0, validator=bounded_number(FINALIZE_MAX_TIMEOUT_S)
    )
    preserve_incomplete: bool = True
    postprocessors: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class RecordConfig:
    """The effective Record config of one plugin entry (compiled, defaults merged)."""

    integrity: str = attrs.field(default="structural", validator=one_of(INTEGRITY_MODES))
    output: OutputConfig = attrs.field(factory=OutputConfig)
    streams: StreamsConfig = attrs.field(factory=StreamsConfig)
    queues: QueuesConfig = attrs.field(factory=QueuesConfig)
    batching: BatchingConfig = attrs.field(factory=BatchingConfig)
    finalize: FinalizeConfig = attrs.field(factory=FinalizeConfig)

    def selected_numeric_channels(self, scene_numeric_channels: Collection[str]) -> tuple[str, ...]:
        """The numeric channels recorded: all the scene's, none, or the explicit ones."""
        mode = self.streams.observations.mode
        if mode == "all_numeric":
            return tuple(scene_numeric_channels)
        if mode == "explicit":
            return tuple(c.channel for c in self.streams.observations.include.values())
        return ()

    def required_grants(self, scene_numeric_channels: Collection[str]) -> frozenset[str]:
        """Grants to request; Observation only when numeric channels are selected."""
        grants = {GRANT_OUTPUT}
        if self.selected_numeric_channels(scene_numeric_channels):
            grants.add(GRANT_OBSERVATION)
        if self.streams.cameras:
            grants.add(GRANT_CAMERA)
        if self.streams.render_state.enabled:
            grants.add(GRANT_RENDER_STATE)
        if self.streams.geometry.enabled:
            grants.add(GRANT_SCENE_GEOMETRY)
        return frozenset(grants)

    def with_output_name(self, name: str) -> RecordConfig:
        """This config writing ``name`` (Core's per-episode rename,
        ``fastsim_contract.run_rename``); ``ValueError`` for a name ``output.name`` refuses.

        The renamed config's mapping is this one's with ``output.name`` replaced: a recording
        that renames one compiled config per episode maps the config once, not per episode."""
        renamed = attrs.evolve(self, output=attrs.evolve(self.output, name=name))
        plain = self._plain_mapping()  # kept mappings are never handed out, so they may share parts
        _remember(renamed, {**plain, "output": {**plain["output"], "name": name}})
        return renamed

    def to_mapping(self) -> dict[str, Any]:
        """The effective config as plain data, in authored key order (a fresh copy per call)."""
        plain: dict[str, Any] = _copy(self._plain_mapping())
        return plain

    def _plain_mapping(self) -> dict[str, Any]:
        """This config's plain data, built once per instance (the config is frozen and its
        values are plain data); callers get copies, never this dict."""
        plain = _MAPPINGS.get(id(self))
        if plain is None:
            plain = _remember(self, _plain(attrs.asdict(self, recurse=True)))
        return plain


# id(config) -> its plain mapping; an entry is dropped when its config is collected, so an id
# is never looked up for a later object that reuses it
_MAPPINGS: dict[int, dict[str, Any]] = {}


def _remember(config: RecordConfig, plain: dict[str, Any]) -> dict[str, Any]:
    kept = _MAPPINGS.setdefault(id(config), plain)  # atomic: two threads keep one mapping
    if kept is plain:
        weakref.finalize(config, _MAPPINGS.pop, id(config), None)
    return kept


def _copy(value: Any) -> Any:
    """A deep copy of ``_plain`` data (dicts, lists and scalar leaves)."""
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
