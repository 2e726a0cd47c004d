"""``scene.geometry@2`` for a MuJoCo model: meshes and primitive geoms with body poses.

Reads only ``MjModel``/``MjData`` arrays, so importing this module never imports MuJoCo.
Every read is counted (``reads``), so a test can prove that a Run without
``streams.geometry`` never touches it.

Catalogs (:meth:`MujocoSceneGeometry.catalog_kinds`):

    | # | catalog   | geoms                                                            |
    |---|-----------|------------------------------------------------------------------|
    | 1 | visual    | ``geom_group`` in ``visual_groups`` (MuJoCo's default visible    |
    |   |           | groups 0, 1, 2) and alpha > 0                                    |
    | 2 | collision | ``contype`` or ``conaffinity`` non-zero                          |
    | 3 | planning  | never offered by MuJoCo scenes                                   |

Body motion: ``static`` when welded to the world (``body_weldid == 0``), ``kinematic``
for mocap bodies, ``dynamic`` otherwise.  Shapes follow MuJoCo's size conventions
(half extents, radius, half length); height fields and SDFs are skipped.  ``rgba`` is
reported as the item's material, which Record excludes.  Mesh resources are
``mesh:<name>`` with the model's (already scaled) vertices and faces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_contract.render_services import (
    GeometryBody,
    GeometryCatalog,
    GeometryItem,
    MeshResource,
)
from fastsim_recording_format.encoding import readonly

__all__ = ["MujocoSceneGeometry", "body_poses"]

# mjtGeom values -> (shape name, number of size entries used)
_SHAPES: Final = {
    0: ("plane", 3), 2: ("sphere", 1), 3: ("capsule", 2), 4: ("ellipsoid", 3),
    5: ("cylinder", 2), 6: ("box", 3), 7: ("mesh", 0),
}
_MESH: Final = 7
_XYZW: Final = np.array([1, 2, 3, 0], dtype=np.intp)


def body_poses(data: Any, ids: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """World poses ``(N, 7)`` (xyz, qx qy qz qw) of body ``ids``, as a new read-only array."""
    poses = np.empty((len(ids), 7), dtype=np.float64)
    poses[:, :3] = data.xpos[ids]
    poses[:, 3:] = data.xquat[ids][:, _XYZW]
    return readonly(poses)


@attrs.define(eq=False)
class MujocoSceneGeometry:
    """The ``scene.geometry@2`` service of one MuJoCo model and its live data."""

    model: Any
    data: Any
    visual_groups: tuple[int, ...] = (0, 1, 2)
    reads: dict[str, int] = attrs.field(
        factory=lambda: {"catalog_kinds": 0, "catalog": 0, "resource": 0, "transforms": 0}
    )
    _ids: dict[tuple[str, ...], npt.NDArray[np.intp]] = attrs.field(factory=dict, repr=False)

    def _visual(self, g: int) -> bool:
        m = self.model
        return int(m.geom_group[g]) in self.visual_groups and float(m.geom_rgba[g][3]) > 0.0

    def _collision(self, g: int) -> bool:
        m = self.model
        return int(m.geom_contype[g]) != 0 or int(m.geom_conaffinity[g]) != 0

    def catalog_kinds(self) -> frozenset[str]:
        """``visual`` and/or ``collision``, whichever the model has (table rows 1-2)."""
        self.reads["catalog_kinds"] += 1
        kinds = set()
        for g in range(self.model.ngeom):
            if self._visual(g):
                kinds.add("visual")
            if self._collision(g):
                kinds.add("collision")
        return frozenset(kinds)

    def _motion(self, b: int) -> str:
        m = self.model
        if int(m.body_mocapid[b]) >= 0:
            return "kinematic"
        return "static" if int(m.body_weldid[b]) == 0 else "dynamic"

    def _body_name(self, b: int) -> str:
        return str(self.model.body(b).name) or ("world" if b == 0 else f"body{b}")

    def catalog(self, kind: str) -> GeometryCatalog:
        """Every geom of ``kind`` with its body; bodies posed as they are now."""
        self.reads["catalog"] += 1
        m = self.model
        select = {"visual": self._visual, "collision": self._collision}.get(kind)
        if select is None:
            raise ValueError(f"scene.geometry@2: no {kind!r} catalog in a MuJoCo scene")
        items: list[GeometryItem] = []
        body_ids: list[int] = []
        for g in range(m.ngeom):
            shape = _SHAPES.get(int(m.geom_type[g]))
            if shape is None or not select(g):
                continue
            b = int(m.geom_bodyid[g])
            if b not in body_ids:
                body_ids.append(b)
            w, x, y, z = (float(v) for v in m.geom_quat[g])
            resource = None
            if int(m.geom_type[g]) == _MESH:
                resource = self._mesh_id(int(m.geom_dataid[g]))
            items.append(
                GeometryItem(
                    name=str(m.geom(g).name) or f"geom{g}",
                    body=self._body_name(b),
                    shape=shape[0],
                    size=tuple(float(v) for v in m.geom_size[g][: shape[1]]),
                    local_pose=(*(float(v) for v in m.geom_pos[g]), x, y, z, w),
                    resource=resource,
                    material={"rgba": [float(v) for v in m.geom_rgba[g]]},
                )
            )
        poses = body_poses(self.data, np.array(body_ids, dtype=np.intp))
        bodies = tuple(
            GeometryBody(self._body_name(b), self._motion(b), tuple(float(v) for v in poses[i]))
            for i, b in enumerate(body_ids)
        )
        return GeometryCatalog(kind=kind, bodies=bodies, items=tuple(items))

    def _mesh_id(self, mesh: int) -> str:
        return "mesh:" + (str(self.model.mesh(mesh).name) or str(mesh))

    def read_resource(self, resource_id: str) -> MeshResource:
        """The vertices and faces of mesh ``mesh:<name>``."""
        self.reads["resource"] += 1
        m = self.model
        for mesh in range(m.nmesh):
            if self._mesh_id(mesh) == resource_id:
                va, vn = int(m.mesh_vertadr[mesh]), int(m.mesh_vertnum[mesh])
                fa, fn = int(m.mesh_faceadr[mesh]), int(m.mesh_facenum[mesh])
                vertices = readonly(np.array(m.mesh_vert[va : va + vn], dtype=np.float32))
                faces = readonly(np.array(m.mesh_face[fa : fa + fn], dtype=np.uint32))
                return MeshResource(resource_id, vertices, faces)
        raise KeyError(f"scene.geometry@2: unknown resource {resource_id!r}")

    def transforms(self, bodies: Sequence[str]) -> npt.NDArray[np.float64]:
        """World poses ``(N, 7)`` of ``bodies`` now (a new read-only array)."""
        self.reads["transforms"] += 1
        key = tuple(bodies)
        ids = self._ids.get(key)
        if ids is None:
            names = {self._body_name(b): b for b in range(self.model.nbody)}
            ids = self._ids[key] = np.array([names[n] for n in key], dtype=np.intp)
        return body_poses(self.data, ids)
