"""Triangle meshes for every shape the ``geometry`` stream carries, in MuJoCo's conventions.

Each function returns ``(vertices, normals, triangles)``: float32 ``(V, 3)`` positions
and unit normals in the item's local frame, uint32 ``(T, 3)`` indices.  Sizes follow
``scene.geometry@2`` (MuJoCo's): half extents, radii, half lengths along local z.

    | # | shape     | size                      | drawn as                                  |
    |---|-----------|---------------------------|-------------------------------------------|
    | 1 | plane     | (hx, hy[, spacing])       | a quad in local xy, normal +z; a zero     |
    |   |           |                           | half extent is infinite (``PLANE_FAR``)   |
    | 2 | sphere    | (r,)                      | a UV sphere                               |
    | 3 | capsule   | (r, half length)          | a cylinder and two hemispheres            |
    | 4 | ellipsoid | (rx, ry, rz)              | a UV sphere scaled per axis               |
    | 5 | cylinder  | (r, half length)          | a side and two flat caps                  |
    | 6 | box       | (hx, hy, hz)              | 6 faces, 4 vertices each (flat normals)   |
    | 7 | mesh      | () and the resource       | one vertex per face corner (flat normals) |

Curved shapes use ``SLICES`` x ``STACKS`` (MuJoCo draws them with 28 x 16 by default).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["PLANE_FAR", "SHAPES", "Tessellation", "UndrawableShape", "tessellate"]

F32 = npt.NDArray[np.float32]
U32 = npt.NDArray[np.uint32]
Tessellation = tuple[F32, F32, U32]

SLICES: Final = 32
STACKS: Final = 16
PLANE_FAR: Final = 50.0  # m: the half extent drawn for MuJoCo's infinite planes
SHAPES: Final = ("plane", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh")


def _f32(values: object) -> F32:
    return np.asarray(values, dtype=np.float32)


class UndrawableShape(ValueError):
    """An item whose shape, size or mesh cannot be drawn (one line, the caller adds names)."""


def _grid(rows: int, cols: int, offset: int = 0) -> U32:
    """Two triangles per cell of a (rows + 1) x (cols + 1) vertex grid, row major."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    a = (r * (cols + 1) + c).ravel() + offset
    b, d = a + 1, a + cols + 1
    return np.stack([np.stack([a, d, b], 1), np.stack([b, d, d + 1], 1)], 1).reshape(-1, 3).astype(np.uint32)


def _unit_sphere(z_from: float = -np.pi / 2, z_to: float = np.pi / 2, stacks: int = STACKS) -> F32:
    lat = np.linspace(z_from, z_to, stacks + 1)
    lon = np.linspace(0.0, 2 * np.pi, SLICES + 1)
    la, lo = np.meshgrid(lat, lon, indexing="ij")
    return np.stack([np.cos(la) * np.cos(lo), np.cos(la) * np.sin(lo), np.sin(la)], -1).reshape(-1, 3).astype(np.float32)


def _sphere(radii: Sequence[float]) -> Tessellation:
    unit = _unit_sphere()
    scale = np.asarray(radii, np.float32)
    normals = unit / scale  # the ellipsoid's normal is the gradient of sum((x / r)^2)
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    return unit * scale, normals.astype(np.float32), _grid(STACKS, SLICES)


def _capsule(radius: float, half: float) -> Tessellation:
    parts: list[Tessellation] = []
    for sign in (1.0, -1.0):
        cap = _unit_sphere(0.0, np.pi / 2, STACKS // 2)
        cap[:, 2] *= sign
        parts.append((cap * radius + _f32([0, 0, sign * half]), cap, _grid(STACKS // 2, SLICES)))
    ring = _unit_sphere(0.0, 0.0, 1)[: SLICES + 1]
    side = np.concatenate([ring * radius + _f32([0, 0, -half]), ring * radius + _f32([0, 0, half])])
    parts.append((side, np.concatenate([ring, ring]), _grid(1, SLICES)))
    return _merge(parts)


def _cylinder(radius: float, half: float) -> Tessellation:
    ring = _unit_sphere(0.0, 0.0, 1)[: SLICES + 1]
    side = np.concatenate([ring * radius + _f32([0, 0, -half]), ring * radius + _f32([0, 0, half])])
    parts: list[Tessellation] = [(side, np.concatenate([ring, ring]), _grid(1, SLICES))]
    for sign in (1.0, -1.0):
        rim = ring * radius + _f32([0, 0, sign * half])
        centre = _f32([[0, 0, sign * half]])
        fan = np.stack([np.zeros(SLICES), np.arange(1, SLICES + 1), np.arange(2, SLICES + 2)], 1)
        normal = np.tile(_f32([0, 0, sign]), (SLICES + 2, 1))
        parts.append((np.concatenate([centre, rim]), normal, fan.astype(np.uint32)))
    return _merge(parts)


def _box(half: Sequence[float]) -> Tessellation:
    h = np.asarray(half, np.float32)
    parts: list[Tessellation] = []
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        for sign in (1.0, -1.0):
            corners = np.zeros((4, 3), np.float32)
            corners[:, axis] = sign * h[axis]
            corners[:, u] = _f32([-1, 1, 1, -1]) * h[u]
            corners[:, v] = _f32([-1, -1, 1, 1]) * h[v]
            normal = np.zeros((4, 3), np.float32)
            normal[:, axis] = sign
            parts.append((corners, normal, np.array([[0, 1, 2], [0, 2, 3]], np.uint32)))
    return _merge(parts)


def _plane(size: Sequence[float]) -> Tessellation:
    hx, hy = (float(s) if s > 0 else PLANE_FAR for s in size[:2])
    corners = _f32([[-hx, -hy, 0], [hx, -hy, 0], [hx, hy, 0], [-hx, hy, 0]])
    normal = np.tile(_f32([0, 0, 1]), (4, 1))
    return corners, normal, np.array([[0, 1, 2], [0, 2, 3]], np.uint32)


def _mesh(vertices: npt.NDArray[np.float32], faces: npt.NDArray[np.uint32]) -> Tessellation:
    if faces.size == 0:
        raise UndrawableShape("the mesh has no faces")
    corners = vertices[faces.reshape(-1)].astype(np.float32)
    tri = corners.reshape(-1, 3, 3)
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    length = np.linalg.norm(normal, axis=1, keepdims=True)
    normal = np.where(length > 0, normal / np.maximum(length, 1e-30), _f32([0, 0, 1]))
    normals = np.repeat(normal.astype(np.float32), 3, axis=0)
    return corners, normals, np.arange(len(corners), dtype=np.uint32).reshape(-1, 3)


def _merge(parts: Sequence[Tessellation]) -> Tessellation:
    offsets = np.cumsum([0] + [len(p[0]) for p in parts[:-1]])
    return (
        np.concatenate([p[0] for p in parts]).astype(np.float32),
        np.concatenate([p[1] for p in parts]).astype(np.float32),
        np.concatenate([p[2] + np.uint32(o) for p, o in zip(parts, offsets)]).astype(np.uint32),
    )


_SIZES: Final = {"plane": 2, "sphere": 1, "capsule": 2, "ellipsoid": 3, "cylinder": 2, "box": 3}


def tessellate(
    shape: str,
    size: Sequence[float],
    mesh: tuple[npt.NDArray[np.float32], npt.NDArray[np.uint32]] | None = None,
) -> Tessellation:
    """The triangles of one item (table above); :class:`UndrawableShape` otherwise."""
    if shape == "mesh":
        if mesh is None:
            raise UndrawableShape("the mesh resource is not in the recording")
        vertices, faces = mesh
        if not np.all(np.isfinite(vertices)):
            raise UndrawableShape("the mesh has non-finite vertices")
        return _mesh(vertices, faces)
    need = _SIZES.get(shape)
    if need is None:
        raise UndrawableShape(f"shape {shape!r} is not one of {', '.join(SHAPES)}")
    values = [float(v) for v in size]
    if len(values) < need or not all(np.isfinite(values)) or any(v < 0 for v in values[:need]):
        raise UndrawableShape(f"{shape} size {values} needs {need} finite non-negative values")
    positive = values[:1] if shape == "capsule" else values[:need]
    if shape != "plane" and not all(v > 0 for v in positive):
        raise UndrawableShape(f"{shape} size {values} has a zero extent")
    if shape == "plane":
        return _plane(values)
    if shape in ("sphere", "ellipsoid"):
        return _sphere([values[0]] * 3 if shape == "sphere" else values[:3])
    if shape == "capsule":
        return _capsule(values[0], values[1])
    if shape == "cylinder":
        return _cylinder(values[0], values[1])
    return _box(values[:3])
