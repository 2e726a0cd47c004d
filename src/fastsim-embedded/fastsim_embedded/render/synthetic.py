"""The synthetic backend's render source: render.state from its numeric channels, fluid.

Lets the render-side capture (and ``fluid.audit``) run without a simulator SDK:

    | # | render.state key                          | from                                 |
    |---|-------------------------------------------|--------------------------------------|
    | 1 | ``articulation/<entity>/joint_position``  | ``<entity>.joint_position``          |
    | 2 | ``articulation/<entity>/joint_velocity``  | ``<entity>.joint_velocity``          |
    | 3 | ``articulation/<entity>/root_pose``       | ``<entity>.base_pose`` (optional)    |
    | 4 | ``fluid/<emitter>/positions``             | the scene's ``fluid:`` emitter       |

An entity contributes only when both its joint channels exist.

``scene.geometry@2`` (:class:`SyntheticGeometry`): one visual catalog with a static
``world`` body (a floor plane) and one dynamic body per entity that has a
``<entity>.base_pose`` channel, carrying a box and a shared tetrahedron mesh
(``mesh:marker``); transforms come from the base pose channels.  Every read is counted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_contract.render_services import (
    GeometryBody,
    GeometryCatalog,
    GeometryItem,
    MeshResource,
)
from fastsim_embedded.render.fluid import ParticleEmitter
from fastsim_recording_format.encoding import readonly

__all__ = ["SyntheticGeometry", "SyntheticRenderSource"]

_IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


@attrs.define(eq=False)
class SyntheticGeometry:
    """``scene.geometry@2`` of the synthetic scene (module docstring)."""

    sample: Callable[[], Mapping[str, npt.NDArray[Any]]]
    reads: dict[str, int] = attrs.field(
        factory=lambda: {"catalog_kinds": 0, "catalog": 0, "resource": 0, "transforms": 0}
    )

    def _entities(self, values: Mapping[str, npt.NDArray[Any]]) -> list[str]:
        return [n.rpartition(".")[0] for n in values if n.endswith(".base_pose")]

    def catalog_kinds(self) -> frozenset[str]:
        """Only a visual catalog."""
        self.reads["catalog_kinds"] += 1
        return frozenset({"visual"})

    def catalog(self, kind: str) -> GeometryCatalog:
        """The floor and one box + marker mesh per entity."""
        self.reads["catalog"] += 1
        if kind != "visual":
            raise ValueError(f"scene.geometry@2: no {kind!r} catalog in the synthetic scene")
        values = self.sample()
        bodies = [GeometryBody("world", "static", _IDENTITY)]
        items = [GeometryItem("floor", "world", "plane", (3.0, 3.0, 0.05), _IDENTITY,
                              material={"rgba": [0.8, 0.8, 0.8, 1.0]})]
        for entity in self._entities(values):
            pose = tuple(float(v) for v in values[f"{entity}.base_pose"])
            bodies.append(GeometryBody(entity, "dynamic", pose))
            items.append(GeometryItem(f"{entity}.base", entity, "box", (0.1, 0.1, 0.05), _IDENTITY))
            items.append(GeometryItem(f"{entity}.marker", entity, "mesh", (), _IDENTITY,
                                      resource="mesh:marker"))
        return GeometryCatalog("visual", tuple(bodies), tuple(items))

    def read_resource(self, resource_id: str) -> MeshResource:
        """The shared tetrahedron marker."""
        self.reads["resource"] += 1
        if resource_id != "mesh:marker":
            raise KeyError(f"scene.geometry@2: unknown resource {resource_id!r}")
        vertices = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]], dtype=np.float32)
        faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], dtype=np.uint32)
        return MeshResource(resource_id, readonly(vertices), readonly(faces))

    def transforms(self, bodies: Sequence[str]) -> npt.NDArray[np.float64]:
        """Base poses of ``bodies`` now, ``(N, 7)``."""
        self.reads["transforms"] += 1
        values = self.sample()
        poses = np.array([values[f"{b}.base_pose"] for b in bodies], dtype=np.float64).reshape(-1, 7)
        return readonly(poses)


@attrs.define(eq=False)
class SyntheticRenderSource:
    """Render-side access to a synthetic scene (module table)."""

    sample: Callable[[], Mapping[str, npt.NDArray[Any]]]
    emitter: ParticleEmitter | None = None
    _geometry: SyntheticGeometry | None = None

    def render_state(self) -> dict[str, npt.NDArray[Any]]:
        """Rows 1-4 now (the backend's fresh read-only arrays, untouched)."""
        values = self.sample()
        state: dict[str, npt.NDArray[Any]] = {}
        for name, value in values.items():
            entity, _, family = name.rpartition(".")
            if family == "joint_position" and f"{entity}.joint_velocity" in values:
                state[f"articulation/{entity}/joint_position"] = value
                state[f"articulation/{entity}/joint_velocity"] = values[f"{entity}.joint_velocity"]
                pose = values.get(f"{entity}.base_pose")
                if pose is not None:
                    state[f"articulation/{entity}/root_pose"] = pose
        if self.emitter is not None:
            state[f"fluid/{self.emitter.name}/positions"] = self.emitter.positions()
        return state

    def scene_geometry(self) -> SyntheticGeometry:
        """The ``scene.geometry@2`` service (building it reads nothing)."""
        if self._geometry is None:
            self._geometry = SyntheticGeometry(self.sample)
        return self._geometry

    def fluid_emitter(self) -> ParticleEmitter | None:
        """The scene's particle emitter, if it declares ``fluid:``."""
        return self.emitter
