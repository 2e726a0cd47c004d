"""Camera-only render Replay: pose a scene from a recorded ``render.state``, never step it.

``replay(SOURCE.fsr, RUN.yaml)`` runs RUN.yaml on the embedded host with its backend
wrapped in a :class:`ReplayBackend`; the Run's own Record instance (a second Record,
usually with explicit cameras) writes the new, camera-bearing FSR.

    | # | step                                                                           |
    |---|--------------------------------------------------------------------------------|
    | 1 | read SOURCE: its SHA-256, and the ``render.state`` stream's records (the index |
    |   | gives sequences without reading payloads)                                      |
    | 2 | prepare RUN with exactly one tick per recorded sample (duration = n / rate);   |
    |   | a Record output that would replace SOURCE is refused; the seed is RUN's        |
    |   | ``runtime.seed``, else the seed SOURCE recorded (so a randomized scene's       |
    |   | lights and camera poses match the live Run), else 0                            |
    | 3 | tick k carries sample k's recorded simulation time (``sim_time_ns``: the loop  |
    |   | uses the source's clock, not ``k / sensor_hz``); when sample k's generation    |
    |   | differs from the current one a new Runtime generation starts; then             |
    |   | ``step`` decodes sample k (bounded), writes its joint and rigid poses into the |
    |   | model exactly (``apply_state``) and runs ``mj_forward``; physics never steps  |
    | 4 | cameras and numeric channels are sampled from the posed scene as in a live Run |
    | 5 | Core exposes ``render.replay`` and a ``ReplaySource``: Record writes           |
    |   | ``mode: render``, the source SHA-256 and the complete source sequence          |

So every record of the new FSR lines up with the source in generation and simulation
time: the camera frame rendered from sample k has sample k's ``(generation,
sim_time_ns)``.  The source's generations must therefore start at 0 or 1 and rise by
one at a time (any embedded-host recording does); ``read_track`` refuses others.

Replay never issues control commands or plugin events of its own; the Run's lifecycle,
control and event streams are therefore the Replay's, not the source's.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_contract.render_services import RENDER_REPLAY_SERVICE, ReplaySource
from fastsim_contract.run import load_run
from fastsim_contract.run_errors import RunConfigError, RunIssue
from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.base import (
    CameraReading,
    ControlCommand,
    ControlOutcome,
    TickScript,
)
from fastsim_embedded.backends.gl_replay.scene import tick_name
from fastsim_embedded.backends.scene_schema import scene_issues
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.session.compile import PreparedRun, prepare_run
from fastsim_embedded.session.session import SessionResult, run_session
from fastsim_recording_format import FsrReader, Record
from fastsim_recording_format.codecs.render_state import RenderState, decode_render_state
from fastsim_recording_format.reading.decoded import Decoding, RenderStateRecord

__all__ = ["RenderTrack", "ReplayBackend", "read_track", "replay"]

STREAM = "render.state"


@attrs.frozen
class RenderTrack:
    """The recorded ``render.state`` samples of one source FSR, in stream order."""

    path: Path
    sha256: str
    records: tuple[Record, ...]  # payloads are read lazily through ``reader``
    rate_hz: float
    source: ReplaySource
    reader: FsrReader | None = attrs.field(default=None, eq=False, repr=False)
    #: the format package's decoder of this stream (its bounds and payload CRC check)
    decoding: Decoding | None = attrs.field(default=None, eq=False, repr=False)

    def state(self, index: int) -> RenderState:
        """The decoded state of record ``index`` (0-based), read now through ``decoding``."""
        record = self.records[index]
        decoded = self.decoding.decode(record) if self.decoding is not None else None
        if not isinstance(decoded, RenderStateRecord):
            raise ValueError(f"{self.path.name}: render.state record {record.stream_sequence} does not decode")
        return decode_render_state(decoded.payload)

    def close(self) -> None:
        """Close the source file (idempotent); payloads cannot be read afterwards."""
        if self.reader is not None:
            self.reader.close()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_track(path: str | os.PathLike[str]) -> RenderTrack:
    """Step 1: the source's render-state track (``RunConfigError`` when unusable)."""
    source = Path(path)
    try:
        reader = FsrReader(source)
    except Exception as exc:
        raise RunConfigError([RunIssue("SOURCE", f"{source}: {exc}")]) from None
    try:
        return _track(source, reader)
    except BaseException:
        reader.close()
        raise


def _track(source: Path, reader: FsrReader) -> RenderTrack:
    try:
        stream = reader.stream(STREAM)
    except Exception:
        raise RunConfigError(
            [RunIssue("SOURCE", f"{source} has no {STREAM!r} stream (record with streams.render_state)")]
        ) from None
    records = tuple(r for r in reader.records(STREAM) if r.kind.name == "DATA")
    if not records:
        raise RunConfigError([RunIssue("SOURCE", f"{source}: the {STREAM!r} stream is empty")])
    generation = 0
    for record in records:
        if record.generation not in (generation, generation + 1):
            raise RunConfigError([RunIssue("SOURCE", (
                f"{source}: render.state record {record.stream_sequence} is in generation "
                f"{record.generation} after {generation}; Replay needs generations 0, 1, 2 ..."
            ))])
        generation = record.generation
    rate = float(stream.attributes.get("rate_hz", 30.0))
    sha = _sha256(source)
    replay_source = ReplaySource(
        source_sha256=sha,
        source_name=source.name,
        stream=STREAM,
        records=len(records),
        stream_first=records[0].stream_sequence,
        stream_last=records[-1].stream_sequence,
        global_first=records[0].global_sequence,
        global_last=records[-1].global_sequence,
        generations=tuple(sorted({r.generation for r in records})),
    )
    return RenderTrack(source, sha, records, rate, replay_source, reader, Decoding(reader, [STREAM]))


@attrs.define(eq=False)
class ReplayBackend:
    """A backend that poses its inner scene from recorded states (module table, row 3)."""

    inner: Any
    track: RenderTrack
    applied: list[npt.NDArray[Any]] = attrs.field(factory=list)  # joint positions read back
    entity: str = "robot"
    _tick: int = attrs.field(init=False, default=0)
    _generation: int = attrs.field(init=False, default=0)  # the host boots in generation 0
    _render: Any = attrs.field(init=False, default=None)
    _forward: Any = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        factory = getattr(self.inner, "render_source", None)
        if factory is None:
            name = getattr(self.inner, "name", type(self.inner).__name__)
            raise RunConfigError([RunIssue("backend", f"backend {name!r} cannot be posed for Replay; use backend: mujoco")])
        self._render = factory()
        if not hasattr(self._render, "apply_state") and not hasattr(self._render, "pose_sample"):
            raise RunConfigError([RunIssue("backend", "the backend's render source cannot apply a recorded state")])
        try:
            self._render.check_state(self.track.state(0).arrays)
        except Exception as exc:
            raise RunConfigError([RunIssue("SOURCE", str(exc).splitlines()[0])]) from None
        self.entity = getattr(self.inner, "entity", self.entity)
        if hasattr(self._render, "pose_sample"):  # a renderer without physics poses itself
            return
        import mujoco  # the only simulator import, and only when a MuJoCo Replay runs

        first = self.track.state(0).arrays
        decorators = getattr(getattr(self.inner, "scene", None), "decorators", None)
        has_fluid = any(k.startswith("fluid/") for k in first)
        if has_fluid and decorators is not None and self._render.draw_particles not in decorators:
            decorators.append(self._render.draw_particles)  # recorded particles in every camera
        model, data = self._render.model, self._render.data
        self._forward = lambda: mujoco.mj_forward(model, data)

    @property
    def name(self) -> str:
        """``replay:<inner backend>``."""
        return f"replay:{getattr(self.inner, 'name', 'backend')}"

    def channels(self) -> Sequence[ChannelDescriptor]:
        """The inner scene's channels."""
        channels: Sequence[ChannelDescriptor] = self.inner.channels()
        return channels

    def reset(self, generation: int) -> None:
        """Nothing to reset: every tick's state comes from the recording."""

    def sim_time_ns(self, tick: int) -> int:
        """The recorded simulation time of sample ``tick`` (the loop's clock, row 3)."""
        return self.track.records[tick - 1].sim_time_ns

    def script(self, tick: int) -> TickScript:
        """A reset exactly where the recorded generation changes; no commands or events."""
        self._tick = tick
        generation = self.track.records[tick - 1].generation
        reset = generation != self._generation
        self._generation = generation
        return TickScript(reset=reset)

    def apply_control(self, command: ControlCommand) -> ControlOutcome:
        """Replay issues no control."""
        return ControlOutcome(False, {"error": "Replay applies no control"})

    def step(self, substeps: int) -> None:
        """Pose sample ``tick`` exactly and run forward kinematics; physics never steps."""
        record = self.track.records[self._tick - 1]
        state = self.track.state(self._tick - 1)
        for key, value in state.arrays.items():  # refused before either renderer sees it
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{self.track.path.name}: {tick_name(self._tick, record)}: render.state {key!r} is not finite")
        if self._forward is None:
            self._render.pose_sample(self._tick, record, state.arrays)
        else:
            self._render.apply_state(state.arrays)
            self._forward()
        self.applied.append(self._render.joint_positions(self.entity))

    def sample_numeric(self) -> Mapping[str, npt.NDArray[Any]]:
        """The inner scene's numeric channels of the posed state."""
        values: Mapping[str, npt.NDArray[Any]] = self.inner.sample_numeric()
        return values

    def sample_cameras(self) -> Sequence[CameraReading]:
        """The inner scene's cameras rendered from the posed state."""
        readings: Sequence[CameraReading] = self.inner.sample_cameras()
        return readings

    def describe(self) -> dict[str, object]:
        """The inner scene's description plus the Replay source."""
        inner = getattr(self.inner, "describe", None)
        described: dict[str, object] = dict(inner()) if callable(inner) else {}
        described.setdefault("renderer", {"renderer": "mujoco"})  # which renderer drew the frames
        described["replay_source"] = {"path": str(self.track.path), "sha256": self.track.sha256}
        return described

    def render_source(self) -> Any:
        """The posed scene's render source (a Replay may record render.state again)."""
        return self._render

    def close(self) -> None:
        """Close the inner backend and the Replay source file."""
        try:
            self.inner.close()
        finally:
            self.track.close()


def _recorded_seed(track: RenderTrack) -> int | None:
    """The seed the source's host recorded in its run metadata (``None`` if absent)."""
    attributes = track.reader.run.attributes if track.reader is not None else {}
    run = attributes.get("run") if isinstance(attributes, Mapping) else None
    seed = run.get("seed") if isinstance(run, Mapping) else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**63 else None


RENDERERS = ("mujoco", "moderngl")


def _renderer_backend(track: RenderTrack, run: str | os.PathLike[str], renderer: str) -> tuple[str | None, dict[str, object]]:
    """The backend name and options that draw ``track`` with ``renderer`` (``None``: the Run's)."""
    if renderer == "mujoco":
        return None, {}
    if renderer != "moderngl":
        raise RunConfigError([RunIssue("--renderer", f"unknown renderer {renderer!r} (known: {', '.join(RENDERERS)})")])
    from fastsim_embedded.backends.gl_replay.gl import MissingExtra, load_moderngl
    from fastsim_embedded.backends.gl_replay.scene import RecordedScene, SceneRefused

    try:
        load_moderngl()
        scene = RecordedScene.read(track.path, track.reader) if track.reader is not None else None
    except (MissingExtra, SceneRefused) as exc:
        raise RunConfigError([RunIssue("SOURCE" if isinstance(exc, SceneRefused) else "--renderer", str(exc))]) from None
    document = load_run(run)
    scene_problems = scene_issues(document.backend, document.scenario.get("scene"))
    if scene_problems:
        raise RunConfigError(scene_problems)
    return "moderngl", {"scene": scene, "scene_backend": document.backend}


def prepare_replay(
    source: str | os.PathLike[str],
    run: str | os.PathLike[str],
    *,
    backend: str | None = None,
    renderer: str = "mujoco",
) -> tuple[PreparedRun, ReplayBackend, RenderTrack]:
    """Steps 1-2; ``renderer`` ``moderngl`` draws the recorded geometry instead of the Run's scene."""
    track = read_track(source)
    try:
        document = load_run(run)
        sensor_hz = float(document.runtime.sensor_hz)
        duration = len(track.records) / sensor_hz
        seed = document.runtime.seed if document.runtime.seed is not None else _recorded_seed(track)
        drawn_by, options = _renderer_backend(track, run, renderer)
        prepared = prepare_run(
            run, backend=drawn_by or backend, duration_s=duration, seed=seed, backend_options=options or None
        )
        if math.floor(duration * sensor_hz + 1e-9) != len(track.records):  # pragma: no cover
            raise RunConfigError([RunIssue("runtime.sensor_hz", "cannot map one tick to each recorded sample")])
        wrapped = ReplayBackend(prepared.backend, track)
    except BaseException:
        track.close()
        raise
    return attrs.evolve(prepared, backend=wrapped), wrapped, track


def replay(
    source: str | os.PathLike[str],
    run: str | os.PathLike[str],
    output_dir: Path,
    *,
    backend: str | None = None,
    renderer: str = "mujoco",
    **session_options: Any,
) -> tuple[SessionResult, ReplayBackend]:
    """Run a camera-only Replay of ``source`` with ``run`` drawn by ``renderer``."""
    prepared, wrapped, track = prepare_replay(source, run, backend=backend, renderer=renderer)
    for component in prepared.compiled.components:  # never commit over the file being replayed
        output = component.config.to_mapping().get("output")
        name = output.get("name") if isinstance(output, Mapping) else None
        if isinstance(name, str) and (Path(output_dir) / name).resolve() == track.path.resolve():
            wrapped.close()
            raise RunConfigError([RunIssue(
                f"plugins.{component.alias}.config.output.name",
                f"{name!r} in {output_dir} would replace the Replay source {track.path}",
            )])

    also = session_options.pop("on_host", None)  # the caller's own hook (e.g. stop signals)

    def on_host(host: EmbeddedHost) -> None:
        host.context.services = host.context.services | {RENDER_REPLAY_SERVICE}
        host.context.replay = track.source
        if also is not None:
            also(host)

    return run_session(prepared, output_dir, on_host=on_host, **session_options), wrapped
