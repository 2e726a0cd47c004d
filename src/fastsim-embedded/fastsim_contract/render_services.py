"""Optional render-side services and the payloads Core publishes for them.

Three optional capture sources serve "record once, render later" (README):

``render.state`` (``SourceKind.RENDER_STATE``)
    Captured only when ``CapturePlan.render_state_hz`` is set: Core samples the scene at
    that rate, *before* it reads backend state or allocates a global sequence.  The
    payload is a mapping ``"<group>/<entity>/<field>" -> read-only array`` (see
    ``fastsim_recording_format.codecs.render_state`` for the key table).

``geometry`` (``SourceKind.GEOMETRY``), read through the ``scene.geometry@2`` service
    Captured only when ``CapturePlan.geometry_hz`` is set.  Core then reads the scene's
    catalog once (:func:`select_catalog`: visual preferred, collision or planning only
    without a visual catalog), reads each referenced mesh resource, and publishes one
    ``{"assets": GeometryAssets}`` envelope first; afterwards one ``{"transforms":
    GeometryTransforms}`` envelope per ``1 / geometry_hz`` with the world poses of the
    dynamic and kinematic bodies only.  Without the source in the plan there is no catalog or resource read
    and no transform query.

``fluid.emissions`` (``SourceKind.FLUID_EMISSION``), when the ``fluid.audit`` service exists
    ``RunContext.services`` contains ``"fluid.audit"`` when the scene has a particle
    emitter.  Core then publishes one compact :class:`FluidEmissionBatch` (as its
    ``to_mapping()``) per tick that accepted or refused emissions.  Runs without the service have no such source.

Render Replay (``render.replay`` service)
    A camera-only Replay feeds a recorded ``render.state`` stream to the backend, which
    poses the scene from it and never steps physics.  Core then exposes
    ``"render.replay"`` in ``RunContext.services`` and a ``replay`` attribute holding a
    :class:`ReplaySource`; Record writes ``mode: render``, the source FSR's SHA-256 and
    the complete render-state source sequence (:meth:`ReplaySource.fence`).

Poses are ``(x, y, z, qx, qy, qz, qw)`` in the world frame, metres.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final, Protocol

import attrs

__all__ = [
    "CATALOG_KINDS",
    "FLUID_AUDIT_SERVICE",
    "GEOMETRY_SERVICE",
    "MOTIONS",
    "RENDER_REPLAY_SERVICE",
    "SHAPES",
    "FluidEmissionBatch",
    "GeometryAssets",
    "GeometryBody",
    "GeometryCatalog",
    "GeometryItem",
    "GeometryTransforms",
    "MeshResource",
    "ReplaySource",
    "SceneGeometryService",
    "select_catalog",
]

GEOMETRY_SERVICE: Final = "scene.geometry@2"
FLUID_AUDIT_SERVICE: Final = "fluid.audit"
RENDER_REPLAY_SERVICE: Final = "render.replay"

#: Catalog kinds in order of preference.
CATALOG_KINDS: Final = ("visual", "collision", "planning")
#: How a body moves: static bodies are posed once, the others sampled at ``geometry_hz``.
MOTIONS: Final = ("static", "kinematic", "dynamic")
#: Geometry shapes; ``size`` is the shape's MuJoCo-style size vector (half extents, radii).
SHAPES: Final = ("mesh", "box", "sphere", "capsule", "cylinder", "ellipsoid", "plane")


def select_catalog(available: frozenset[str] | Sequence[str]) -> str | None:
    """The catalog Record captures: visual if present, else collision, else planning."""
    for kind in CATALOG_KINDS:
        if kind in available:
            return kind
    return None


@attrs.frozen
class GeometryBody:
    """A body that carries geometry, with its motion class and world pose at read time."""

    name: str
    motion: str  # one of MOTIONS
    pose: tuple[float, ...]  # 7 values


@attrs.frozen
class GeometryItem:
    """One geometry element attached to a body.

    ``material`` is whatever the backend knows about appearance; Record excludes it.
    ``particles`` marks particle-fluid visuals, which never enter the asset set.
    """

    name: str
    body: str
    shape: str  # one of SHAPES
    size: tuple[float, ...]
    local_pose: tuple[float, ...]  # 7 values, relative to the body
    resource: str | None = None  # mesh resource id for shape == "mesh"
    material: Mapping[str, object] | None = None
    particles: bool = False


@attrs.frozen
class GeometryCatalog:
    """One catalog (visual, collision or planning) of a scene."""

    kind: str
    bodies: tuple[GeometryBody, ...]
    items: tuple[GeometryItem, ...]


@attrs.frozen
class MeshResource:
    """A triangle mesh: read-only ``float32 (V, 3)`` vertices, ``uint32 (F, 3)`` faces."""

    resource_id: str
    vertices: object
    faces: object


@attrs.frozen
class GeometryAssets:
    """The first ``geometry`` envelope: the selected catalog and its mesh resources."""

    available: frozenset[str]
    catalog: GeometryCatalog
    resources: tuple[MeshResource, ...]


@attrs.frozen
class GeometryTransforms:
    """World poses of the dynamic and kinematic bodies: read-only ``float64 (N, 7)``."""

    bodies: tuple[str, ...]
    poses: object


@attrs.frozen
class FluidEmissionBatch:
    """Particles one emitter accepted in one tick, in compact form.

    Particles ``first_particle .. first_particle + accepted - 1`` were emitted at
    ``origin`` with ``velocity`` (world frame, m and m/s) and a uniform ``spread`` (m);
    ``rejected`` counts particles refused by the emitter's capacity.
    """

    emitter: str
    batch: int
    first_particle: int
    accepted: int
    rejected: int
    origin: tuple[float, float, float]
    velocity: tuple[float, float, float]
    spread: float

    def to_mapping(self) -> Mapping[str, object]:
        """The envelope payload form (Core's envelopes carry read-only mappings)."""
        return MappingProxyType(attrs.asdict(self, recurse=False))


@attrs.frozen
class ReplaySource:
    """The recorded ``render.state`` a camera-only Replay consumes, and its source file.

    ``stream_first``/``stream_last`` and ``global_first``/``global_last`` bound the
    complete source sequence; ``records`` is its record count (contiguous, so
    ``records == stream_last - stream_first + 1``) and ``generations`` the generations it
    spans.
    """

    source_sha256: str
    source_name: str
    stream: str
    records: int
    stream_first: int
    stream_last: int
    global_first: int
    global_last: int
    generations: tuple[int, ...]

    def fence(self) -> dict[str, object]:
        """The terminal-fence entry naming the complete render-state source sequence."""
        return {
            "source_sha256": self.source_sha256,
            "source_name": self.source_name,
            "stream": self.stream,
            "records": self.records,
            "stream_sequence": {"first": self.stream_first, "last": self.stream_last},
            "global_sequence": {"first": self.global_first, "last": self.global_last},
            "generations": list(self.generations),
            "complete": self.records == self.stream_last - self.stream_first + 1,
        }


class SceneGeometryService(Protocol):
    """``scene.geometry@2``: what a backend exposes about its geometry."""

    def catalog_kinds(self) -> frozenset[str]:
        """The catalogs this scene has (a subset of ``CATALOG_KINDS``)."""
        ...

    def catalog(self, kind: str) -> GeometryCatalog: ...

    def read_resource(self, resource_id: str) -> MeshResource: ...

    def transforms(self, bodies: Sequence[str]) -> object:
        """Current world poses of ``bodies`` as a read-only ``float64 (N, 7)`` array."""
        ...
