"""Recording Gymnasium episodes on the embedded host: one ``Session`` per (sub-)env episode.

``fastsim_record.gym`` reaches this module through the ``fastsim.hosts`` entry point
``gymnasium`` (``HOST``); the plugin never imports the host.  Each env episode is one Run of
the embedded host with the ``gymnasium`` backend (``backends.gymnasium_env``), recorded by
the Record plugin (``fastsim.plugins``): its lanes, worker, writer, transaction, validation.

    | # | call (env thread)      | what the host does                                            |
    |---|------------------------|---------------------------------------------------------------|
    | 1 | ``begin``              | a new ``EpisodeWriter``: its ``Session`` opens in the opening |
    |   |                        | pool when a slot is free (``gymnasium_host.episode``)         |
    | 2 | ``step``               | checked copies of action t, reward, flags, then obs t + 1 and |
    |   |                        | frame t + 1's camera readings, appended to the episode's chunk|
    |   |                        | (``gymnasium_host.capture``); a full chunk is handed over (a  |
    |   |                        | rendered frame's is held until ``release``, before the next)  |
    | 3 | ``step`` that ends it  | then the final observation (the fill row); the episode goes   |
    |   |                        | to the commit pool                                            |
    | 4 | ``end``, ``fail``      | an open episode: final row, close as stopped (reset/close) or |
    |   |                        | failed, kept (the env raised or broke its space; FR2)         |
    | 5 | ``close``              | end every open episode, wait for every commit                 |

Both pools have ``writers`` threads; at most ``2 * writers`` finished episodes wait for their commit, then
``step`` waits (``flow_waits`` counts it); with ``durable`` the call that ends an episode waits for its commit
(so a ``kill -9`` finds every ended episode committed), and the call that starts one waits for its file to
open when it has a slot (so the open episode is recoverable from its first step, and no open runs beside its
steps).  With the lanes' bounds, the queued rows (``EpisodeWriter.hand``: spilled to disk past their bound) and
the open slots, memory grows neither with episode length nor with sub-envs beyond their kept rows.  At interpreter exit
(Python >= 3.12 starts no thread then) a commit runs on the calling thread.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends.base import ScenePluginEvent
from fastsim_embedded.backends.gymnasium_env import GymnasiumBackend, StepRow, camera_channels
from fastsim_embedded.gymnasium_host.cameras import camera_frame, camera_note, plan_cameras
from fastsim_embedded.gymnasium_host.capture import RowLayout, step_type_error
from fastsim_embedded.gymnasium_host.episode import EpisodeWriter, WriterPool, run_here
from fastsim_embedded.gymnasium_host.mujoco import (
    RenderSnapshots,
    StagedRenderSource,
    joints_of,
    release_renderers,
    render_source_of,
)
from fastsim_embedded.gymnasium_host.options import EpisodeFile, RecordingOptions
from fastsim_embedded.gymnasium_host.runs import EpisodeRuns
from fastsim_embedded.gymnasium_host.spaces import plain_value, space_leaves
from fastsim_embedded.session.compile import prepare_built
from fastsim_embedded.session.plugins import one_line
from fastsim_embedded.session.session import Session

__all__ = ["HOST", "EpisodeFile", "GymnasiumHost", "GymRecording", "RecordingOptions"]

_NO_FRAMES: dict[str, Any] = {}
_NDARRAY = np.ndarray
CHUNK_ROWS = 128  # numeric rows the env thread collects before handing them to the publisher
CHUNK_SECONDS = 0.25  # ... or after this long (read every 16 steps): a slow env streams too (what kill -9 loses)


class GymRecording:
    """The recording of one wrapped env (``n`` sub-envs; 1 for a single env)."""

    def __init__(
        self, directory: Path, observation_space: Any, action_space: Any, envs: Sequence[Any],
        description: Mapping[str, object], options: RecordingOptions, *, vector: bool,
    ) -> None:
        self.directory, self.options, self.vector = Path(directory), options, vector
        self.description = dict(description)
        self._envs = list(envs)
        # a MuJoCo env's joints (its robot state) and actuators, when the env is in this process
        self._joints = [joints_of(env) if env is not None else None for env in self._envs]
        first = self._joints[0] if self._joints and all(j is not None for j in self._joints) else None
        self.sources, observation = plan_cameras(
            space_leaves(observation_space, "observation"), self._envs[0] if self._envs else None,
            render_frames=options.cameras, render_alias=options.camera, images=options.images,
        )
        self.row = StepRow(
            observation, space_leaves(action_space, "action"), options.info_keys,
            joints=len(first.names) if first is not None else 0,
        )
        actions = self.row.action
        self._actuators = first.actuators if first is not None and len(actions) == 1 and actions[0].shape == (
            len(first.actuators),) and actions[0].dtype.kind == "f" else ()
        if first is None:
            self._joints = [None] * len(self._envs)
        self._cameras: list[dict[str, Any]] = []  # per sub-env: alias -> its source of K and pose
        self._render: list[Any] = []
        for i, env in enumerate(self._envs):
            wanted = options.camera_envs is None or i in options.camera_envs  # render() frames only
            self._cameras.append({
                src.alias: src.calibrator(env) for src in self.sources
                if not src.render or wanted  # an env in another process: its frames come from call("render")
            })
            inner = render_source_of(env) if (options.render_state or options.geometry) and env is not None else None
            self._render.append(None if inner is None else RenderSnapshots(
                inner, state=options.render_state, geometry=options.geometry,
            ))
        self._renders = [any(src.leaf is None and src.alias in cams for src in self.sources) for cams in self._cameras]
        self.layout = RowLayout(self.row)
        self._ready = (self.layout.action_scalar, *self.layout.observation_array)
        self._limit = options.max_episode_bytes
        self._keys = bool(options.info_keys)
        self._chunk_rows = [1 if cams else CHUNK_ROWS for cams in self._cameras]  # frames: handed over at once
        self._due = [0.0] * len(self._envs)
        self._extras = [bool(cams) or self._joints[i] is not None or self._render[i] is not None or bool(
            self._keys or self._actuators or self._limit is not None) for i, cams in enumerate(self._cameras)]  # when each sub-env's chunk is handed over at the latest
        self.runs = EpisodeRuns(options)  # catalogs, plugin factory, compiled Runs: once per recording
        self._open: dict[int, EpisodeWriter] = {}
        self._next = options.first_episode
        workers = max(1, options.writers)
        self.pool = WriterPool(workers, self.directory)
        self._closers = concurrent.futures.ThreadPoolExecutor(workers, "fsr-gym-commit")
        self._waiting: list[tuple[EpisodeWriter, int, concurrent.futures.Future[EpisodeFile]]] = []
        self._slots = threading.BoundedSemaphore(2 * workers)
        self.flow_waits = 0  # times the env thread waited for a commit slot
        self.files: list[EpisodeFile] = []

    def wants_render(self, index: int) -> bool:
        """Whether the wrapper must call ``render()`` for sub-env ``index`` (frames not in the observation)."""
        return self._renders[index]

    def name(self, number: int, index: int) -> str:
        """The episode's file name: sorts in episode order, carries the sub-env index."""
        sub = f"-env{index:03d}" if self.vector else ""
        return f"{self.options.prefix}-{number:06d}{sub}.fsr"

    def begin(
        self, index: int, seed: int | None, reset_options: object, observation: Any, frame: Any = None,
        *, how: str = "reset",
    ) -> None:
        """Row 1: a new episode of sub-env ``index`` starts with ``observation`` (opened off this thread)."""
        frames = self._frames(index, observation, frame)
        if index in self._open:
            self.end(index, CompletionKind.STOPPED, "truncated: reset() started a new episode")
        o = self.options
        first = self.layout.observation(observation)  # ValueError: nothing opened
        number, self._next = self._next, self._next + 1
        shapes = {alias: (int(f.shape[0]), int(f.shape[1]), int(f.shape[2])) for alias, f in frames.items()}
        reset = {"seed": seed, "options": plain_value(reset_options), "sub_env": index if self.vector else None,
                 "how": how}
        described = {**self.description, "sub_env": reset["sub_env"], "episode": number, "reset": reset,
                     "camera": camera_note({a: c for a, c in self._cameras[index].items() if a in shapes}, o.cameras, shapes)}
        name, render = self.name(number, index), self._render[index]

        def opener() -> Session:  # in the opening pool: the backend's channel declarations are built there too
            backend = GymnasiumBackend(
                self.row.packer, cameras=tuple(shapes.items()),
                render_source=None if render is None else StagedRenderSource(render),
                description=described, actuators=self._actuators, per_step=self.row.step_names,
            )
            compiled = self.runs.compiled(name, cameras=shapes, render_state=render is not None)
            episode = Session.open(prepare_built(compiled, backend, seed=seed, episode=number), self.directory,
                                   factories=self.runs.factories)
            if episode.failure is not None:
                episode.close()
                raise RuntimeError(episode.failure)
            return episode

        pending = o.media_queue_items if shapes else None  # rows queued while no file is open: frames are big
        writer = EpisodeWriter(self.pool, opener, self.layout, number=number, seed=seed, max_pending=pending)
        writer.cameras = tuple(shapes)
        writer.bytes = self.row.packer.nbytes + sum(int(f.nbytes) for f in frames.values())
        writer.chunk.events[0] = (ScenePluginEvent("gym.reset", reset, "gymnasium"),)
        self._observe(index, writer, first, frames)
        self._due[index] = time.monotonic() + CHUNK_SECONDS
        self._open[index] = writer
        self.pool.admit(writer)
        if o.durable:  # its file exists before the env goes on: recoverable from the first step
            writer.wait_opened()

    def _observe(self, index: int, writer: EpisodeWriter, observation: Any, frames: Mapping[str, Any]) -> None:
        """Observation t (already checked and copied) and what is read with it: its row's start."""
        chunk = writer.chunk
        chunk.obs.append(observation)
        joints = self._joints[index]
        if joints is not None:
            chunk.joints.append(joints.sample())
        if writer.cameras:
            chunk.readings.append(self._readings(index, {a: f for a, f in frames.items() if a in writer.cameras}))
        if self._render[index] is not None:
            chunk.snapshots.append(self._render[index].take())

    def _frames(self, index: int, observation: Any, rendered: Any) -> dict[str, Any]:
        """This observation's frame of each camera of sub-env ``index`` (uint8 ``(H, W, C)``: ``camera_frame``)."""
        out: dict[str, Any] = {}
        if not self._cameras[index]:
            return out
        for src in self.sources:
            if src.alias in self._cameras[index]:
                frame = camera_frame(src.frame(observation, rendered))
                if frame is not None:
                    out[src.alias] = frame
        return out

    def _readings(self, index: int, frames: Mapping[str, Any]) -> Sequence[Any]:
        cameras = self._cameras[index]
        if not frames:
            return ()
        return tuple(r for alias, frame in frames.items() for r in cameras[alias].readings(frame, camera_channels(alias)))

    def is_open(self, index: int) -> bool:
        """Whether sub-env ``index`` has an episode being recorded."""
        return index in self._open

    def step(
        self, index: int, action: Any, observation: Any, reward: float, terminated: bool, truncated: bool,
        info: Mapping[str, Any] | None = None, frame: Any = None,
    ) -> None:
        """Rows 2-3: one transition of sub-env ``index`` (ignored when no episode is open): checked copies
        appended to its chunk (``gymnasium_host.capture``).  Numeric-only: the checks are inline."""
        writer = self._open.get(index)
        if writer is None:
            return
        if self._extras[index]:  # cameras, a byte limit, info keys, actuators, joints or the render side
            self._step_extras(index, writer, action, observation, reward, terminated, truncated, info, frame)
            return
        scalar, dtype, shape = self._ready  # the types that need no call (``RowLayout.action_scalar``, ...)
        steps = writer.chunk.steps
        try:
            steps.append((action if type(action) is scalar else self.layout.action(action),
                          float(reward), terminated, truncated))
        except (TypeError, ValueError) as exc:
            self._refuse_step(index, exc, reward)
        if (n := len(steps)) >= CHUNK_ROWS or (not n & 15 and time.monotonic() >= self._due[index]):
            writer.hand()  # complete rows only (obs t + 1 starts the next chunk); the clock is read every 16th step
            self._due[index] = time.monotonic() + CHUNK_SECONDS
        if type(observation) is _NDARRAY and observation.dtype is dtype and observation.shape == shape:
            writer.chunk.obs.append(observation.tobytes())  # already the channel's dtype and shape: the copy
        else:
            writer.chunk.obs.append(self._observation(index, writer, observation))
        if terminated or truncated:
            self._finish(index, bool(terminated), bool(truncated), CompletionKind.NORMAL,
                         "terminated" if terminated else "truncated")

    def _step_extras(
        self, index: int, writer: EpisodeWriter, action: Any, observation: Any, reward: float, terminated: bool,
        truncated: bool, info: Mapping[str, Any] | None, frame: Any,
    ) -> None:
        """``step`` of a sub-env with cameras, a byte limit, info keys, actuators, joints or the render side."""
        frames = self._frames(index, observation, frame) if self._cameras[index] else _NO_FRAMES
        if self._limit is not None and self._over_limit(index, writer, frames):
            return
        layout, chunk = self.layout, writer.chunk
        try:
            chunk.steps.append((layout.action(action), float(reward), terminated, truncated))
        except (TypeError, ValueError) as exc:
            self._refuse_step(index, exc, reward)
        if self._keys:
            chunk.infos.append(layout.info(info))
        if self._actuators:
            chunk.targets.append(np.array(action, dtype=np.float64).reshape(-1))
        if (steps := len(chunk.steps)) >= self._chunk_rows[index] or (not steps & 15 and time.monotonic() >= self._due[index]):
            writer.hand(hold=bool(writer.cameras) and self._renders[index])  # a rendered frame: ``release`` queues it
            self._due[index] = time.monotonic() + CHUNK_SECONDS
        self._observe(index, writer, self._observation(index, writer, observation), frames)
        if terminated or truncated:
            self._finish(index, bool(terminated), bool(truncated), CompletionKind.NORMAL,
                         "terminated" if terminated else "truncated")

    def _refuse_step(self, index: int, exc: TypeError | ValueError, reward: Any) -> NoReturn:
        """The env broke its own space: keep what was recorded, raise one line naming the channel."""
        error = exc if isinstance(exc, ValueError) else step_type_error(exc, reward)
        self._fail_one(index, error)
        raise error from None

    def _observation(self, index: int, writer: EpisodeWriter, observation: Any) -> Any:
        """Observation t + 1 checked and copied; a wrong one ends the episode on a fill row (step t is recorded)."""
        try:
            return self.layout.observation(observation)
        except ValueError as exc:
            self._observe(index, writer, self.layout.fill_observation(), {})
            self._fail_one(index, exc)
            raise

    def _over_limit(self, index: int, writer: EpisodeWriter, frames: Mapping[str, Any]) -> bool:
        """``max_episode_bytes``: rows and frames as staged (before JPEG/PNG), the final row included;
        the transition that would pass it is not recorded and the file ends on observation t."""
        added = self.row.packer.nbytes + sum(int(f.nbytes) for f in frames.values())
        if writer.bytes + added > (limit := self._limit or 0):
            self._finish(index, False, True, CompletionKind.STOPPED, f"truncated: max_episode_bytes {limit} reached after {writer.steps} steps")
            return True
        writer.bytes += added
        return False

    def _fail_one(self, index: int, exc: ValueError) -> None:
        line = str(exc).splitlines()[0]
        self._finish(index, False, False, CompletionKind.FAILED, line, line)

    def _finish(
        self, index: int, terminated: bool, truncated: bool, kind: CompletionKind, reason: str, error: str | None = None,
    ) -> None:
        writer = self._open.pop(index)
        end = ScenePluginEvent("gym.episode_end", {
            "steps": writer.steps, "terminated": terminated, "truncated": truncated, "return": writer.ret,
            "reason": reason, "error": error, "sub_env": index if self.vector else None,
        }, "gymnasium")
        trailing: tuple[ScenePluginEvent, ...] = (end,)  # no final row to carry it
        chunk = writer.chunk
        try:
            if len(chunk.obs) > len(chunk.steps):  # observation t waits for no action: the final row
                chunk.final = (terminated, truncated)
                chunk.add_events(len(chunk.obs) - 1, (end,))
                trailing = ()
            if len(chunk):
                writer.hand()
            writer.release()
        finally:
            if not self._slots.acquire(blocking=False):  # at most 2 * writers episodes wait for their commit
                self.flow_waits += 1
                self._slots.acquire()
            try:
                future = self._closers.submit(self._commit, writer, index, kind, reason, trailing)
            except RuntimeError:  # at interpreter exit (module docstring): commit here
                future = run_here(self._commit, writer, index, kind, reason, trailing)
            future.add_done_callback(lambda _: self._slots.release())
            self._waiting.append((writer, index, future))
            self._collect(block=self.options.durable)  # durable: committed before the env goes on

    def release(self) -> None:
        """Row 2: the frames held since the last step go to their publishers (the wrappers: before a render)."""
        for writer in self._open.values():
            writer.release()

    def end(self, index: int, kind: CompletionKind, reason: str) -> None:
        """Row 4: end sub-env ``index``'s open episode as truncated (by reset or close)."""
        if index in self._open:
            self._finish(index, False, True, kind, reason)

    def fail(self, exc: BaseException) -> None:
        """Row 4: the env raised.  Every open episode commits what it recorded, completion ``failed`` (the data
        source failed: contract FR2); the reason ``the env raised <its one line>``, ``gym.episode_end``'s ``error``."""
        line = one_line(exc)
        for index in list(self._open):
            self._finish(index, False, False, CompletionKind.FAILED, f"the env raised {line}", line)

    def _commit(
        self, writer: EpisodeWriter, index: int, kind: CompletionKind, reason: str,
        trailing: tuple[ScenePluginEvent, ...],
    ) -> EpisodeFile:
        """In the commit pool: the commit and its ``EpisodeFile`` (the Session is freed there, not on the env thread)."""
        try:
            result = writer.finish(kind, reason, trailing)
        except Exception as exc:  # the commit itself broke: reported, never raised into the env
            result, writer.failure = None, writer.failure or one_line(exc)
        completion, committed = (result.outcome.completion, result.outcome.committed) if result is not None else (None, ())
        return EpisodeFile(
            Path(committed[0]) if committed else None, index if self.vector else None, writer.number,
            writer.steps, writer.seed, completion.kind.value if completion else "failed",
            (completion.reason if completion else "") or (writer.failure or ""),
        )

    def _collect(self, *, block: bool) -> None:
        keep = []
        for writer, index, future in self._waiting:
            if not block and not future.done():
                keep.append((writer, index, future))
                continue
            try:
                self.files.append(future.result())
            except Exception as exc:  # _commit itself broke: reported as not committed
                self.files.append(EpisodeFile(None, index if self.vector else None, writer.number, writer.steps, writer.seed, "failed", one_line(exc)))
        self._waiting = keep

    def close(self, reason: str = "truncated: the env was closed") -> list[EpisodeFile]:
        """Row 5: end every open episode as truncated (``reason``), wait for every commit."""
        for index in list(self._open):
            self.end(index, CompletionKind.STOPPED, reason)
        self._collect(block=True)
        self.pool.shutdown()
        self._closers.shutdown(wait=True)
        for env in self._envs:  # the wrapper closes them next: their GL objects go first
            if env is not None:
                release_renderers(env)
        return sorted(self.files, key=lambda f: f.episode)


class GymnasiumHost:
    """The ``fastsim.hosts`` entry ``gymnasium``: what ``fastsim_record.gym`` calls."""

    Options = RecordingOptions

    def open(
        self, directory: Path, observation_space: Any, action_space: Any, envs: Sequence[Any],
        description: Mapping[str, object], options: RecordingOptions, *, vector: bool,
    ) -> GymRecording:
        """A recording; ``ValueError`` (one line naming the space path) for an unmappable space."""
        return GymRecording(directory, observation_space, action_space, envs, description, options, vector=vector)


HOST = GymnasiumHost()
