"""Render-side capture on the simulation thread: render.state, geometry, fluid emissions.

The host builds one :class:`RenderCapture` per Run with :meth:`RenderCapture.build`.
It returns ``None`` (and the run loop then does no render-side work at all) unless the
compiled capture plan selects ``render.state`` or ``geometry``, or the backend exposes
``fluid.audit``.  Rates are fixed by the plan before anything is read or sequenced: a
sample that is not due reads no state and allocates no global sequence.

Per tick, after physics (``after_step``):

    | # | step                                                                         |
    |---|------------------------------------------------------------------------------|
    | 1 | new generation: reset the emitter and both rate gates                        |
    | 2 | emitter step; its batch is published on ``fluid.emissions`` if captured      |
    | 3 | ``render.state`` gate due: sample the backend's state, publish it untouched  |
    | 4 | ``geometry`` gate due: first time read the preferred catalog and its mesh    |
    |   | resources and publish ``GeometryAssets``; later query and publish the        |
    |   | dynamic/kinematic transforms only (none when every body is static)           |

Rate gate: a tick at ``t`` ns lies in slot ``floor(t * rate_hz / 1e9)`` (with a
1e-6-slot tolerance for rounded tick times); it is due when its slot is larger than the
previous due tick's slot in the same generation, and the first tick of a generation is
always due.  A 120 Hz loop sampled at 30 Hz therefore publishes at ticks 1, 4, 8, 12 ...
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Protocol

import attrs
import numpy.typing as npt

from fastsim_contract.render_services import (
    FLUID_AUDIT_SERVICE,
    GeometryAssets,
    GeometryTransforms,
    SceneGeometryService,
    select_catalog,
)
from fastsim_contract.values import SourceKind
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.render.fluid import ParticleEmitter

__all__ = ["RateGate", "RenderCapture", "RenderSource", "render_source_of"]


class RenderSource(Protocol):
    """The optional render-side capability of a backend (``backend.render_source()``)."""

    def render_state(self) -> Mapping[str, npt.NDArray[Any]]:
        """The scene's state now, as new read-only arrays (render.state key table)."""
        ...

    def scene_geometry(self) -> SceneGeometryService | None: ...

    def fluid_emitter(self) -> ParticleEmitter | None: ...


def render_source_of(backend: object) -> RenderSource | None:
    """The backend's render source, or ``None`` when it has none."""
    factory = getattr(backend, "render_source", None)
    if factory is None:
        return None
    source: RenderSource | None = factory()
    return source


@attrs.define(eq=False)
class RateGate:
    """Decides, before any read, whether a tick is due at ``rate_hz`` (module header)."""

    rate_hz: float
    _per_ns: float = attrs.field(init=False)
    _generation: int = attrs.field(init=False, default=-1)
    _last_slot: int = attrs.field(init=False, default=-1)

    def __attrs_post_init__(self) -> None:
        if not self.rate_hz > 0:
            raise ValueError(f"rate_hz must be positive, got {self.rate_hz}")
        self._per_ns = self.rate_hz / 1e9

    def due(self, generation: int, sim_time_ns: int) -> bool:
        """Whether the tick at ``sim_time_ns`` of ``generation`` takes a sample."""
        slot = math.floor(sim_time_ns * self._per_ns + 1e-6)
        if generation != self._generation:
            self._generation = generation
            self._last_slot = slot
            return True
        if slot > self._last_slot:
            self._last_slot = slot
            return True
        return False


@attrs.define(eq=False)
class RenderCapture:
    """Render-side publication for one Run (module table)."""

    host: EmbeddedHost
    source: RenderSource
    state_gate: RateGate | None = None
    geometry_gate: RateGate | None = None
    emitter: ParticleEmitter | None = None
    geometry: SceneGeometryService | None = None
    fluid_captured: bool = False
    counts: dict[str, int] = attrs.field(
        factory=lambda: {"state_samples": 0, "geometry_assets": 0, "transform_queries": 0, "fluid_batches": 0}
    )
    _generation: int = attrs.field(init=False, default=0)
    _moving: tuple[str, ...] | None = attrs.field(init=False, default=None)

    @classmethod
    def build(cls, host: EmbeddedHost, backend: object) -> RenderCapture | None:
        """The Run's render capture, or ``None`` when there is nothing to do."""
        plan = host.context.capture
        state_hz = plan.render_state_hz if plan.captures(SourceKind.RENDER_STATE.value) else None
        geometry_hz = plan.geometry_hz if plan.captures(SourceKind.GEOMETRY.value) else None
        source = render_source_of(backend)
        if source is None:
            if state_hz or geometry_hz:
                name = getattr(backend, "name", type(backend).__name__)
                raise ValueError(
                    f"backend {name!r} exposes no render state or scene.geometry@2; "
                    "disable streams.render_state/streams.geometry or choose backend: mujoco"
                )
            return None
        emitter = source.fluid_emitter()
        if state_hz is None and geometry_hz is None and emitter is None:
            return None
        geometry = None
        if geometry_hz is not None:
            geometry = source.scene_geometry()
            if geometry is None:
                raise ValueError("streams.geometry: the backend exposes no scene.geometry@2")
        return cls(
            host=host,
            source=source,
            state_gate=RateGate(state_hz) if state_hz else None,
            geometry_gate=RateGate(geometry_hz) if geometry_hz else None,
            emitter=emitter,
            geometry=geometry,
            fluid_captured=plan.captures(SourceKind.FLUID_EMISSION.value),
        )

    @staticmethod
    def services_of(backend: object) -> frozenset[str]:
        """Optional Core services the backend brings (``fluid.audit`` with an emitter)."""
        source = render_source_of(backend)
        if source is not None and source.fluid_emitter() is not None:
            return frozenset({FLUID_AUDIT_SERVICE})
        return frozenset()

    def _publish(self, source: SourceKind, payload: object, size: int) -> None:
        self.host.events.publish_now(source, payload, portable_size=size)

    def after_step(self, dt_s: float) -> None:
        """Rows 1-4 of the module table for the tick the host just stepped."""
        ctx = self.host.context
        if ctx.generation != self._generation:
            self._generation = ctx.generation
            if self.emitter is not None:
                self.emitter.reset()
        if self.emitter is not None:
            batch = self.emitter.step(dt_s)
            if batch is not None and self.fluid_captured:
                self.counts["fluid_batches"] += 1
                self._publish(SourceKind.FLUID_EMISSION, batch.to_mapping(), 256)
        gate = self.state_gate
        if gate is not None and gate.due(ctx.generation, ctx.sim_time_ns):
            self.counts["state_samples"] += 1
            state = self.source.render_state()
            size = 64 * len(state) + sum(int(getattr(a, "nbytes", 0)) for a in state.values())
            self._publish(SourceKind.RENDER_STATE, MappingProxyType(dict(state)), size)
        gate = self.geometry_gate
        if gate is not None and self.geometry is not None and gate.due(ctx.generation, ctx.sim_time_ns):
            if self._moving is None:
                assets = self._assets(self.geometry)
                size = 4096 + sum(
                    int(getattr(r.vertices, "nbytes", 0)) + int(getattr(r.faces, "nbytes", 0))
                    for r in assets.resources
                )
                self._publish(SourceKind.GEOMETRY, MappingProxyType({"assets": assets}), size)
            elif self._moving:
                self.counts["transform_queries"] += 1
                poses = self.geometry.transforms(self._moving)
                value = GeometryTransforms(self._moving, poses)
                size = 64 * (len(self._moving) + 1) + 56 * len(self._moving)
                self._publish(SourceKind.GEOMETRY, MappingProxyType({"transforms": value}), size)

    def _assets(self, service: SceneGeometryService) -> GeometryAssets:
        available = service.catalog_kinds()
        kind = select_catalog(available)
        if kind is None:
            raise ValueError("scene.geometry@2: the scene has no geometry catalog")
        catalog = service.catalog(kind)
        ids = sorted({i.resource for i in catalog.items if i.resource and not i.particles})
        resources = tuple(service.read_resource(r) for r in ids)
        self._moving = tuple(b.name for b in catalog.bodies if b.motion != "static")
        self.counts["geometry_assets"] += 1
        return GeometryAssets(available=available, catalog=catalog, resources=resources)
