"""The source registry: everything Record knows about each kind of capture source, as data.

One row per source kind.  Adding a source is adding a row here (and a selection rule in
``fastsim_record.bootstrap.select_sources``); the bootstrap loops over the selected
sources and reads every decision from their rows.

    | # | source kind     | lane     | contract kinds              | barriers | FSR stream kind  | payload codec            | grant            |
    |---|-----------------|----------|-----------------------------|----------|------------------|--------------------------|------------------|
    | 1 | lifecycle       | critical | lifecycle                   | no       | lifecycle        | json                     |                  |
    | 2 | events          | critical | plugin_event                | no       | events           | json                     |                  |
    | 3 | control.audit   | critical | control_audit               | no       | control          | json                     |                  |
    | 4 | control.result  | critical | control_result              | no       | control          | json                     |                  |
    | 5 | observations    | numeric  | observation, generation_    | yes      | observations     | numeric-tick/1           | observation      |
    |   |                 |          | barrier                     |          |                  |                          |                  |
    | 6 | render.state    | numeric  | render_state                | no       | render.state     | zlib                     | render.state     |
    | 7 | geometry        | numeric  | geometry                    | no       | scene.geometry@2 | fastsim-scene-geometry/2 | scene.geometry@2 |
    | 8 | fluid.emissions | critical | fluid_emission              | no       | fluid.emissions  | json                     |                  |
    | 9 | cameras         | media    | camera                      | no       | camera.*         | the camera's (jpeg, png) | camera           |

Rows 1-8 have an encoder factory: given the selected :class:`SourceSpec` and the
:class:`StreamContext`, it builds the worker-side payload encoder and the stream's
attributes.  Cameras (row 9) have none: the camera stage
(``fastsim_record.pipeline.camera_stage``) declares four streams per camera and encodes
them.  Lifecycle, events and control are selected by the config's stream switches,
observations by the selected numeric channels, the render-side sources by
``pipeline.render_streams.render_kinds`` and cameras by ``fastsim_record.camera_wiring``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

import attrs

from fastsim_contract.protocols import RunContext
from fastsim_contract.values import ChannelDescriptor, SourceKind
from fastsim_record.adapters import fluid, geometry, render_state
from fastsim_record.adapters.payloads import JsonEncoder, NumericTickEncoder
from fastsim_record.config.model import (
    GRANT_CAMERA,
    GRANT_OBSERVATION,
    GRANT_RENDER_STATE,
    GRANT_SCENE_GEOMETRY,
    RecordConfig,
)
from fastsim_record.core.captured import LaneName
from fastsim_record.ports.sinks import PayloadEncoder
from fastsim_record.ports.sources import SourceSpec

__all__ = [
    "SOURCES",
    "EncodedStream",
    "EncoderFactory",
    "RenderStateEncoder",
    "SourceRow",
    "StreamContext",
    "row",
]


@attrs.frozen
class StreamContext:
    """What an encoder factory may read: the compiled config, the Run, the numeric channels."""

    config: RecordConfig
    run: RunContext
    numeric: tuple[ChannelDescriptor, ...] = ()


@attrs.frozen
class EncodedStream:
    """An encoder factory's answer: the worker-side encoder and the stream's attributes."""

    encoder: PayloadEncoder
    attributes: Mapping[str, object] = attrs.field(factory=dict)
    #: every record's fixed byte size when known up front (numeric ticks), else None
    record_bytes: int | None = None


EncoderFactory = Callable[[SourceSpec, StreamContext], EncodedStream]


@attrs.frozen
class SourceRow:
    """One row of the registry (module table)."""

    kind: str
    lane: LaneName
    contract_kinds: frozenset[SourceKind]
    carries_barriers: bool
    stream_kind: str
    codec: str  # the stream's ``payload_codec``
    encoder: EncoderFactory | None  # None: the camera stage encodes
    grant: str | None = None


@attrs.define(eq=False)
class RenderStateEncoder:
    """``render.state`` payloads: zlib level 1 of metadata plus buffers (worker only)."""

    codec: Mapping[str, object] = render_state.STREAM_CODEC
    _layout: render_state.Layout | None = None

    def encode(self, payload: object) -> bytes:
        """Encode one captured state mapping (the layout is validated once per shape)."""
        if not isinstance(payload, Mapping):
            raise render_state.RenderStatePayloadError(
                f"render.state: expected a mapping of arrays, got {type(payload).__name__}"
            )
        self._layout = layout = render_state.layout_for(payload, self._layout)
        return render_state.encode_with_layout(payload, layout)


def _json(spec: SourceSpec, ctx: StreamContext) -> EncodedStream:
    return EncodedStream(JsonEncoder(spec.name))


def _numeric(spec: SourceSpec, ctx: StreamContext) -> EncodedStream:
    encoder = NumericTickEncoder(spec.name, ctx.numeric)
    run = ctx.run
    attributes = {
        **encoder.attributes, "sensor_hz": run.sensor_hz, "rate_policy": run.rate_policy,
        "atomic_tick": True,
        # per-element names of each channel, in the channels' order (issue 13)
        "element_names": {c.name: list(c.attributes.get("element_names") or [])  # type: ignore[call-overload]
                          for c in ctx.numeric},
    }
    per_step = [c.name for c in ctx.numeric if c.attributes.get("per_step")]
    if per_step:  # one sample per step: the last tick of a generation holds a fill (docs/reading.md)
        attributes["per_step_channels"] = per_step
    return EncodedStream(encoder, attributes, encoder.record_bytes)


def _render_state(spec: SourceSpec, ctx: StreamContext) -> EncodedStream:
    attributes = {"rate_hz": ctx.config.streams.render_state.rate_hz, "schema": render_state.SCHEMA}
    return EncodedStream(RenderStateEncoder(), attributes)


def _geometry(spec: SourceSpec, ctx: StreamContext) -> EncodedStream:
    attributes = {"rate_hz": ctx.config.streams.geometry.rate_hz, "schema": geometry.SCHEMA}
    return EncodedStream(geometry.GeometryEncoder(), attributes)


def _fluid(spec: SourceSpec, ctx: StreamContext) -> EncodedStream:
    return EncodedStream(fluid.FluidEmissionEncoder(), {"schema": fluid.SCHEMA})


_K = SourceKind
_CRITICAL, _NUMERIC, _MEDIA = LaneName.CRITICAL, LaneName.NUMERIC, LaneName.MEDIA

_ROWS = (
    SourceRow("lifecycle", _CRITICAL, frozenset({_K.LIFECYCLE}), False, "lifecycle", "json", _json),
    SourceRow("events", _CRITICAL, frozenset({_K.PLUGIN_EVENT}), False, "events", "json", _json),
    SourceRow("control.audit", _CRITICAL, frozenset({_K.CONTROL_AUDIT}), False, "control", "json", _json),
    SourceRow("control.result", _CRITICAL, frozenset({_K.CONTROL_RESULT}), False, "control", "json", _json),
    SourceRow(
        "observations", _NUMERIC, frozenset({_K.OBSERVATION, _K.GENERATION_BARRIER}), True,
        "observations", "numeric-tick/1", _numeric, GRANT_OBSERVATION,
    ),
    SourceRow(
        "render.state", _NUMERIC, frozenset({_K.RENDER_STATE}), False, "render.state", "zlib",
        _render_state, GRANT_RENDER_STATE,
    ),
    SourceRow(
        "geometry", _NUMERIC, frozenset({_K.GEOMETRY}), False, "scene.geometry@2",
        "fastsim-scene-geometry/2", _geometry, GRANT_SCENE_GEOMETRY,
    ),
    SourceRow("fluid.emissions", _CRITICAL, frozenset({_K.FLUID_EMISSION}), False, "fluid.emissions", "json", _fluid),
    SourceRow("cameras", _MEDIA, frozenset({_K.CAMERA}), False, "camera", "jpeg|png", None, GRANT_CAMERA),
)

#: source kind -> its row (module table).
SOURCES: Final[Mapping[str, SourceRow]] = MappingProxyType({r.kind: r for r in _ROWS})


def row(kind: str) -> SourceRow:
    """The registry row of ``kind`` (a ``KeyError`` names an unregistered kind)."""
    return SOURCES[kind]
