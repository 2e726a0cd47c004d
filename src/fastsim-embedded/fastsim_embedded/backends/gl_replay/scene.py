"""The recorded scene the second renderer draws: geometry, body poses and cameras.

Everything comes from the source FSR through the format's bounded readers: the
``geometry`` stream through ``codecs.geometry`` (``decode_assets``/``decode_transforms``:
bounded manifests, chunk offsets checked before any slice, content ids verified), and
camera calibration through the reading API (``reading.open(...).calibration``).
``render.state`` itself is decoded by Replay (``codecs.render_state``), which hands
each tick's arrays to :meth:`RecordedScene.pose`.

    | # | what                  | from                                                      |
    |---|-----------------------|-----------------------------------------------------------|
    | 1 | items                 | the latest assets record: shape, size, local pose, body,  |
    |   |                       | mesh resource (a later assets record replaces the items)  |
    | 2 | body poses at a tick  | the assets record's poses, then every transforms record   |
    |   |                       | at or before the tick's (generation, sim time), then the  |
    |   |                       | tick's ``render.state`` ``rigid/<body>/pose`` (exact)     |
    | 3 | cameras               | each recorded camera's K, resolution and extrinsics at or |
    |   |                       | before the tick (the latest sample of the same generation)|

An item that cannot be drawn (unknown shape, bad size, missing or broken mesh) is one
:class:`SceneRefused` line naming the item and its body: nothing is silently left out.
A pose that is not finite is one line naming the tick.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_embedded.backends.gl_replay.camera import pose_matrix
from fastsim_embedded.backends.gl_replay.shapes import Tessellation, UndrawableShape, tessellate
from fastsim_recording_format import FsrReader, Record
from fastsim_recording_format.codecs.geometry import (
    STREAM_NAME,
    DecodedAssets,
    decode_assets,
    decode_transforms,
    record_kind,
)
from fastsim_recording_format.reading import CalibrationSeries, ReadError
from fastsim_recording_format.reading import open as open_recording
from fastsim_recording_format.reading.decoded import Decoding, GeometryRecord

__all__ = ["CameraPose", "RecordedScene", "SceneItem", "SceneRefused", "tick_name"]

F64 = npt.NDArray[np.float64]
_IDENTITY: Final = np.array([0.0, 0, 0, 0, 0, 0, 1])


class SceneRefused(ValueError):
    """The recording cannot be drawn: one line naming the stream, item, body or tick."""


def tick_name(tick: int, record: Record) -> str:
    """``tick 17 (generation 0, sim time 1.133 s)``."""
    return f"tick {tick} (generation {record.generation}, sim time {record.sim_time_ns / 1e9:.3f} s)"


@attrs.frozen
class SceneItem:
    """One drawable item: its body, its local transform and its triangles."""

    name: str
    body: str
    local: F64  # 4x4
    tessellation: Tessellation = attrs.field(eq=False, repr=False)


@attrs.frozen
class CameraPose:
    """A camera at one tick: K for its recorded size, and camera-to-world extrinsics."""

    k: F64
    size: tuple[int, int]  # (width, height) the K is for
    translation: F64
    quaternion_xyzw: F64


def _key(record: Record) -> tuple[int, int]:
    return record.generation, record.sim_time_ns


@attrs.define(eq=False)
class RecordedScene:
    """Items, body poses and cameras of one source FSR (module table)."""

    path: Path
    reader: FsrReader
    items: tuple[SceneItem, ...] = ()
    version: int = 0  # bumped whenever an assets record replaces the items
    poses: dict[str, F64] = attrs.field(factory=dict)
    static: frozenset[str] = frozenset()  # bodies the assets record declares static
    cameras: dict[str, CalibrationSeries] = attrs.field(factory=dict)
    _blobs: dict[str, bytes] = attrs.field(factory=dict, repr=False)
    _geometry: tuple[Record, ...] = attrs.field(default=(), repr=False)
    _next: int = 0
    _camera_cursor: dict[str, int] = attrs.field(factory=dict, repr=False)
    #: the format package's decoder of the geometry stream (its bounds and payload CRC check)
    _decoding: Decoding | None = attrs.field(default=None, repr=False)

    @classmethod
    def read(cls, path: Path, reader: FsrReader) -> RecordedScene:
        """Index the geometry stream and apply its first record (it must be an assets record)."""
        try:
            reader.stream(STREAM_NAME)
        except Exception:
            raise SceneRefused(
                f"{path} has no {STREAM_NAME!r} stream (record it with streams.geometry: {{enabled: true}})"
            ) from None
        records = tuple(r for r in reader.records(STREAM_NAME) if r.kind.name == "DATA")
        if not records:
            raise SceneRefused(f"{path}: the {STREAM_NAME!r} stream is empty")
        scene = cls(path, reader, geometry=records, decoding=Decoding(reader, [STREAM_NAME]))
        if scene._kind(records[0]) != "assets":
            raise SceneRefused(f"{path}: geometry record 1 is not an assets record")
        scene._apply(records[0], None)
        scene._next = 1
        scene.cameras = scene._read_cameras()
        return scene

    def _payload(self, record: Record) -> bytes:
        decoded = self._decoding.decode(record) if self._decoding is not None else None
        return decoded.payload if isinstance(decoded, GeometryRecord) else record.payload

    def _kind(self, record: Record, payload: bytes | None = None) -> str:
        try:
            return record_kind(self._payload(record) if payload is None else payload)
        except ValueError as exc:
            raise SceneRefused(f"{self.path}: geometry record {record.stream_sequence}: {exc}") from None

    def _read_cameras(self) -> dict[str, CalibrationSeries]:
        try:
            recording = open_recording(self.path)
            try:
                cameras = {c: recording.calibration(c) for c in recording.cameras()}
            finally:
                recording.close()
        except (ReadError, ValueError) as exc:
            raise SceneRefused(f"{self.path}: camera calibration: {str(exc).splitlines()[0]}") from None
        for alias, series in cameras.items():
            if any(e.profile.get("model") == "uncalibrated" for e in series.epochs):
                raise SceneRefused(f"{self.path}: camera {alias!r} is uncalibrated (no K, no pose): "
                                   "replay needs K to render it")
        return cameras

    # -- geometry -------------------------------------------------------------------
    def _apply(self, record: Record, tick: str | None) -> None:
        where = f"{self.path}: geometry record {record.stream_sequence}"
        payload = self._payload(record)
        try:
            if self._kind(record, payload) == "transforms":
                for body, pose in decode_transforms(payload).items():
                    self.poses[body] = self._finite(pose, f"{where}: body {body!r}", tick)
                return
            self._assets(decode_assets(payload), where)
        except ValueError as exc:
            if isinstance(exc, SceneRefused):
                raise
            raise SceneRefused(f"{where}: {str(exc).splitlines()[0]}") from None

    def _assets(self, assets: DecodedAssets, where: str) -> None:
        self._blobs.update(assets.blobs)
        manifest: Mapping[str, Any] = assets.manifest
        static = set()
        for body in manifest.get("bodies", []):
            name = str(body.get("name"))
            self.poses[name] = self._finite(body.get("pose"), f"{where}: body {name!r}", None)
            if body.get("motion") == "static":
                static.add(name)
        self.static = frozenset(static)
        items: list[SceneItem] = []
        for raw in manifest.get("items", []):
            name, body = str(raw.get("name")), str(raw.get("body"))
            resource = raw.get("resource")
            try:
                local = pose_matrix(self._finite(raw.get("local_pose"), "local pose", None))
                mesh = self._mesh(assets, resource) if isinstance(resource, str) else None
                tess = tessellate(str(raw.get("shape")), list(raw.get("size") or ()), mesh)
            except (UndrawableShape, SceneRefused, ValueError, TypeError) as exc:
                raise SceneRefused(
                    f"{where}: item {name!r} on body {body!r} cannot be drawn: {str(exc).splitlines()[0]}"
                ) from None
            if body not in self.poses:
                raise SceneRefused(f"{where}: item {name!r} is on body {body!r}, which has no pose")
            items.append(SceneItem(name, body, local, tess))
        self.items = tuple(items)
        self.version += 1

    def _mesh(self, assets: DecodedAssets, resource: str) -> tuple[Any, Any]:
        ids = {str(r.get("id")) for r in assets.manifest.get("resources", [])}
        if resource not in ids or resource not in self._blobs:
            raise UndrawableShape(f"mesh resource {resource!r} is not stored in the recording")
        stored = DecodedAssets(manifest=assets.manifest, blobs={resource: self._blobs[resource]})
        return stored.mesh(resource)

    @staticmethod
    def _finite(value: object, what: str, tick: str | None) -> F64:
        try:
            pose = np.asarray(value, dtype=np.float64).reshape(7)
        except (TypeError, ValueError):
            raise SceneRefused(f"{what}: a pose must be 7 numbers, got {value!r}"[:300]) from None
        if not np.all(np.isfinite(pose)):
            at = f"{tick}: " if tick else ""
            raise SceneRefused(f"{at}{what}: the pose is not finite ({pose.tolist()})")
        if not np.linalg.norm(pose[3:]) > 0:
            raise SceneRefused(f"{tick + ': ' if tick else ''}{what}: the pose's quaternion is zero")
        return pose

    # -- one tick -------------------------------------------------------------------
    def pose(self, tick: int, record: Record, state: Mapping[str, npt.NDArray[Any]]) -> dict[str, F64]:
        """Row 2: every body's world 4x4 at render.state sample ``record`` (tick ``tick``)."""
        where = tick_name(tick, record)
        while self._next < len(self._geometry) and _key(self._geometry[self._next]) <= _key(record):
            self._apply(self._geometry[self._next], where)
            self._next += 1
        poses = dict(self.poses)
        for key, value in state.items():
            group, _, rest = key.partition("/")
            body, _, field = rest.rpartition("/")
            if group == "rigid" and field == "pose":
                poses[body] = self._finite(value, f"render.state {key!r}", where)
        return {name: pose_matrix(p) for name, p in poses.items()}

    def camera(self, alias: str, record: Record) -> CameraPose | None:
        """Row 3: ``alias``'s recorded calibration at ``record`` (``None`` before its first sample)."""
        series = self.cameras[alias]
        i = self._camera_cursor.get(alias, -1)
        key = _key(record)
        while i + 1 < len(series.time_ns) and (int(series.generation[i + 1]), int(series.time_ns[i + 1])) <= key:
            i += 1
        self._camera_cursor[alias] = i
        if i < 0:
            return None
        digest = series.digest[i]
        profile = next((e.profile for e in series.epochs if e.digest == digest), None)
        if profile is None:
            raise SceneRefused(f"{self.path}: camera {alias!r} sample {i + 1} has no calibration profile")
        size = (int(profile["width"]), int(profile["height"]))
        return CameraPose(series.k[i], size, series.translation[i], series.quaternion_xyzw[i])

    def run_attributes(self) -> Mapping[str, Any]:
        """The source's recorded run metadata (channels with their units, the scene)."""
        attributes = self.reader.run.attributes
        return attributes if isinstance(attributes, Mapping) else {}
