"""The optional render-side sources: ``render.state``, ``geometry`` and ``fluid.emissions``.

The composition root (``plugin.py``) asks this module which of them a config selects,
for their worker-side encoders and stream declarations, and which grants they need.
Nothing here runs on the capture path.

Selection (``render_specs``):

    | # | source          | selected when                               | lane    | FSR stream kind  |
    |---|-----------------|---------------------------------------------|---------|------------------|
    | 1 | render.state    | ``streams.render_state.enabled``            | numeric | render.state     |
    | 2 | geometry        | ``streams.geometry.enabled``                | numeric | scene.geometry@2 |
    | 3 | fluid.emissions | ``"fluid.audit" in RunContext.services``    | critical| fluid.emissions  |

All three streams are required.  Disabled sources get no spec, so no pump, no
subscription and no grant: Core then never samples state, reads a catalog or queries a
transform for Record.  A Run without ``fluid.audit`` keeps exactly the previous stream
set.  The sampling rate is not Record's to apply: Core compiled it into the capture
plan (``render_state_hz``/``geometry_hz``) before anything was read or sequenced;
Record only checks that the plan matches its config.

Render Replay (``replay_identity``): when Core runs a camera-only Replay it exposes the
``render.replay`` service and a ``replay`` attribute on the run context
(:class:`~fastsim_contract.render_services.ReplaySource`); the artifact is then written
with ``mode: render``, the source FSR's SHA-256, and the complete render-state source
sequence in its terminal fence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from fastsim_contract.protocols import RunContext
from fastsim_contract.render_services import FLUID_AUDIT_SERVICE, ReplaySource
from fastsim_record.adapters import fluid, geometry, render_state
from fastsim_record.config.model import GRANT_RENDER_STATE, GRANT_SCENE_GEOMETRY, RecordConfig
from fastsim_record.errors import ConfigError, ConfigIssue
from fastsim_record.ports.sinks import PayloadEncoder, StreamDecl
from fastsim_record.ports.sources import SOURCE_LANES, SourceSpec

__all__ = [
    "RENDER_KINDS",
    "RenderStateEncoder",
    "render_grants",
    "render_specs",
    "render_stream",
    "replay_identity",
]

RENDER_KINDS: Final = frozenset({"render.state", "geometry", "fluid.emissions"})
_CONFIG = "plugins.record.config.streams"


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


def _check_rate(name: str, configured: float, planned: float | None) -> None:
    if planned is None or abs(planned - configured) > 1e-9 * max(1.0, configured):
        raise ConfigError([ConfigIssue(
            f"{_CONFIG}.{name}.rate_hz",
            f"Core's capture plan samples {name} at {planned} Hz, the config asks {configured} Hz",
        )])


def render_specs(config: RecordConfig, run: RunContext) -> list[SourceSpec]:
    """Rows 1-3: the selected render-side sources (empty when all are off)."""
    streams = config.streams
    plan = run.capture
    specs: list[SourceSpec] = []
    if streams.render_state.enabled:
        _check_rate("render_state", streams.render_state.rate_hz, plan.render_state_hz)
        specs.append(SourceSpec("render.state", "render.state", SOURCE_LANES["render.state"]))
    if streams.geometry.enabled:
        _check_rate("geometry", streams.geometry.rate_hz, plan.geometry_hz)
        specs.append(SourceSpec("geometry", "geometry", SOURCE_LANES["geometry"]))
    if FLUID_AUDIT_SERVICE in run.services:
        specs.append(SourceSpec("fluid.emissions", "fluid.emissions", SOURCE_LANES["fluid.emissions"]))
    return specs


def render_grants(specs: tuple[SourceSpec, ...] | list[SourceSpec]) -> list[str]:
    """Grants the selected render-side sources need."""
    kinds = {s.kind for s in specs}
    grants = []
    if "render.state" in kinds:
        grants.append(GRANT_RENDER_STATE)
    if "geometry" in kinds:
        grants.append(GRANT_SCENE_GEOMETRY)
    return grants


def render_stream(
    spec: SourceSpec, config: RecordConfig
) -> tuple[PayloadEncoder, StreamDecl]:
    """The worker-side encoder and the FSR stream declaration of one render source."""
    streams = config.streams
    if spec.kind == "render.state":
        return RenderStateEncoder(), StreamDecl(
            spec.name, "render.state", render_state.STREAM_CODEC,
            {"rate_hz": streams.render_state.rate_hz, "schema": render_state.SCHEMA},
            spec.required,
        )
    if spec.kind == "geometry":
        return geometry.GeometryEncoder(), StreamDecl(
            spec.name, "scene.geometry@2", geometry.STREAM_CODEC,
            {"rate_hz": streams.geometry.rate_hz, "schema": geometry.SCHEMA},
            spec.required,
        )
    return fluid.FluidEmissionEncoder(), StreamDecl(
        spec.name, "fluid.emissions", fluid.STREAM_CODEC, {"schema": fluid.SCHEMA}, spec.required
    )


def replay_identity(run: RunContext) -> tuple[str, str | None, dict[str, Any]]:
    """``(mode, source_sha256, fence extra)`` of the artifact this Run writes."""
    replay = getattr(run, "replay", None)
    if not isinstance(replay, ReplaySource):
        return "record", None, {}
    return "render", replay.source_sha256, {"render_source": replay.fence()}
