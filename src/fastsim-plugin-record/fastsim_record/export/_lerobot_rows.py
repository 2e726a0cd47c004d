"""The LeRobot exporter's plan (checked before anything is written) and its frame rows.

Everything is read one record at a time through ``_stream``: a frame row holds one
decoded frame per camera and the values sampled at its time (rule 3 of ``to_lerobot``:
the latest sample at or before the frame in the same generation; before the first, the
first), so memory does not grow with the episode.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, TypeVar

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_record.export._port import ExportError, ExportOptions
from fastsim_record.export._source import POSITION_SUFFIX, VELOCITY_SUFFIX
from fastsim_record.export._stream import (
    Channel,
    calibration_samples,
    decoded_frames,
    frame_times,
    numeric_channels,
    numeric_ticks,
    stream_times,
)
from fastsim_recording_format import FsrReader
from fastsim_recording_format import names as fsr_names
from fastsim_recording_format.reading import Actions, Recording, UnknownName

__all__ = ["ENV_STATE", "FrameRow", "Plan", "action_samples", "frame_rows", "numeric_features", "state_channels"]

Array = npt.NDArray[Any]
T = TypeVar("T")
#: a Gymnasium observation's ``environment_state`` leaf, and LeRobot's feature for it
ENV_STATE = "observation.environment_state"


def recorded_actions(rec: Recording) -> Actions | None:
    """The file's commanded actions (``Recording.actions``: the control audit, or a
    Gymnasium recording's ``action`` channel), aligned with its observation ticks;
    ``None`` when it commands nothing (no command, no declared control)."""
    state = state_channels(rec.path, _channels(rec.path))
    try:  # no state (an image-only Gymnasium observation): the action channel's own ticks
        return rec.actions(clock=state[0].name if state else None)
    except UnknownName:
        return None


def action_samples(actions: Actions) -> Iterator[tuple[int, int, Array]]:
    """``(generation, time_ns, action)`` of every tick whose command the scene accepted."""
    keep = np.flatnonzero(actions.issued & actions.accepted)
    values = actions.values.astype(np.float32)
    for k, g, t in zip(keep.tolist(), actions.generation[keep].tolist(), actions.time_ns[keep].tolist()):
        yield g, t, values[k]


def _channels(path: str) -> dict[str, Channel]:
    with FsrReader(path) as reader:
        return numeric_channels(reader)


class Hold(Generic[T]):
    """Zero-order hold over ``(generation, time_ns, value)`` samples in recording order."""

    def __init__(self, samples: Iterator[tuple[int, int, T]]) -> None:
        self._it = samples
        self._cur: tuple[int, int, T] | None = None
        self._next = next(samples, None)

    def at(self, generation: int, time_ns: int) -> T | None:
        """The latest sample at or before ``time_ns`` in ``generation``; before the first, the first."""
        nxt = self._next
        while nxt is not None and (nxt[0] < generation or (nxt[0] == generation and nxt[1] <= time_ns)):
            self._cur, nxt = nxt, next(self._it, None)
        self._next = nxt
        if self._cur is not None and self._cur[0] == generation:
            return self._cur[2]
        if nxt is not None and nxt[0] == generation:
            return nxt[2]
        return None


@attrs.frozen
class Source:
    """One FSR file's facts for the plan: episodes as ``(generation, frames)``, task."""

    path: str
    episodes: tuple[tuple[int, int], ...]
    task: str


class Plan:
    """What the sources hold, checked against ``to_lerobot``'s rules 1 and 4."""

    def __init__(self, recs: list[Recording], options: ExportOptions) -> None:
        first = recs[0]
        self.cameras = first.cameras()  # none (a numeric-only recording): the frames are the state's ticks
        self.fps: int | None = None
        self.sources: list[Source] = []
        self.action_names: list[str] = []
        self.actions: dict[str, Actions] = {}
        self.has_action: dict[tuple[str, int], bool] = {}
        with FsrReader(first.path) as reader:
            self.features = numeric_features(first.path, numeric_channels(reader))
            self.sizes = {c: (int(reader.stream(fsr_names.rgb_stream(c)).codec.get("height", 0)),
                              int(reader.stream(fsr_names.rgb_stream(c)).codec.get("width", 0))) for c in self.cameras}
        if not self.features and not self.cameras:
            raise ExportError(f"{first.path}: no camera, no numeric channel ending in {POSITION_SUFFIX!r} and "
                              f"no Gymnasium 'observation' channel: nothing to export")
        self.names = {key: [n for ch in chs for n in ch.names] for key, chs in self.features.items()}
        self.calibrated = _calibrated(first.path, self.cameras)  # uncalibrated: no K/pose columns
        for rec in recs:
            self._add(rec, options)
        missing = [f"{p} generation {g}" for (p, g), has in self.has_action.items() if not has]
        if self.action_names and missing:
            raise ExportError(f"{missing[0]}: no accepted command, but other episodes have 'action'")
        self.tasks = list(dict.fromkeys(s.task for s in self.sources))

    def _add(self, rec: Recording, options: ExportOptions) -> None:
        if rec.cameras() != self.cameras:
            raise ExportError(f"{rec.path}: cameras {list(rec.cameras())} differ from {list(self.cameras)}")
        with FsrReader(rec.path) as reader:
            channels = numeric_channels(reader)
            sizes = {c: (int(reader.stream(fsr_names.rgb_stream(c)).codec.get("height", 0)),
                         int(reader.stream(fsr_names.rgb_stream(c)).codec.get("width", 0))) for c in self.cameras}
        features = numeric_features(rec.path, channels)
        if _shape(features) != _shape(self.features):
            raise ExportError(f"{rec.path}: state channels {[c.name for v in features.values() for c in v]} differ "
                              f"from {[c.name for v in self.features.values() for c in v]}")
        if sizes != self.sizes:
            raise ExportError(f"{rec.path}: camera sizes {sizes} differ from {self.sizes}")
        calibrated = _calibrated(rec.path, self.cameras)
        if calibrated != self.calibrated:
            raise ExportError(f"{rec.path}: calibrated cameras {list(calibrated)} differ from {list(self.calibrated)}")
        spans: dict[int, list[int]] = {}  # generation -> [frames, first, last]
        its = [frame_times(rec.path, c) for c in self.cameras] or [stream_times(rec.path, self.clock)]
        for times in zip(*its, strict=False):
            if len(set(times)) != 1:
                cam = self.cameras[[t == times[0] for t in times].index(False)]
                raise ExportError(f"{rec.path}: camera {cam!r} has a frame at {times} where camera "
                                  f"{self.cameras[0]!r} has {times[0]}; LeRobot needs one frame time for all cameras")
            t, g = times[0]
            span = spans.setdefault(g, [0, t, t])
            span[0], span[2] = span[0] + 1, t
        if any(next(it, None) is not None for it in its):
            raise ExportError(f"{rec.path}: the cameras {list(self.cameras)} have different frame counts; "
                              "LeRobot needs one frame time for all cameras")
        for g, (n, t0, t1) in spans.items():
            self._rate(rec.path, g, n, t0, t1)
        actions = recorded_actions(rec)
        if actions is not None and (actions.issued & actions.accepted).any():
            if self.action_names and list(actions.names) != self.action_names:
                raise ExportError(f"{rec.path}: action elements {list(actions.names)} differ from {self.action_names}")
            self.action_names = list(actions.names)
            self.actions[rec.path] = actions
            for g in np.unique(actions.generation[actions.issued & actions.accepted]).tolist():
                self.has_action[(rec.path, g)] = True
        for g in spans:
            self.has_action.setdefault((rec.path, g), False)
        task = options.task or rec.info.name or rec.path
        self.sources.append(Source(rec.path, tuple((g, s[0]) for g, s in spans.items()), task))

    def _rate(self, path: str, g: int, n: int, t0: int, t1: int) -> None:
        if n < 2:
            return
        rate = (n - 1) * 1e9 / float(t1 - t0)
        fps = round(rate)
        if fps < 1 or abs(rate - fps) > 1e-3:
            raise ExportError(f"{path}: generation {g}: camera rate {rate:.6f} Hz is not an integer; "
                              "LeRobot's fps must be one")
        if self.fps is None:
            self.fps = fps
        elif fps != self.fps:
            raise ExportError(f"{path}: generation {g}: camera rate {fps} Hz differs from {self.fps} Hz "
                              "of the first episode")

    @property
    def clock(self) -> str:
        """The stream whose ticks are the frames of a recording without camera."""
        return next(iter(self.features.values()))[0].stream

    @property
    def total_frames(self) -> int:
        """Frames of every episode."""
        return sum(n for s in self.sources for _, n in s.episodes)


def _calibrated(path: str, cameras: tuple[str, ...]) -> tuple[str, ...]:
    """The cameras whose first calibration sample has a K (rule 5 of ``to_lerobot``): an
    uncalibrated camera's K and pose are all NaN, so it gets no calibration columns."""
    out = []
    for cam in cameras:
        first = next(calibration_samples(path, cam, need_k=False), None)  # the generator ends here (its file closed)
        if first is not None and first.calibrated:
            out.append(cam)
    return tuple(out)


def _shape(features: dict[str, tuple[Channel, ...]]) -> list[tuple[str, str, int]]:
    return [(key, c.name, c.count) for key, chs in features.items() for c in chs]


def numeric_features(path: str, channels: dict[str, Channel]) -> dict[str, tuple[Channel, ...]]:
    """The float32 vector features and their channels (rule 4 of ``to_lerobot``): ``observation.state``
    and, from a Gymnasium observation's ``environment_state`` leaf, ``observation.environment_state``,
    kept apart as LeRobot's own gym envs present them (``lerobot.envs.utils.preprocess_observation``:
    gym-pusht's ``environment_state_agent_pos`` is state ``agent_pos`` [2] and environment state [16])."""
    state = state_channels(path, channels)
    env = tuple(c for c in state if c.name == ENV_STATE)
    split = (("observation.state", tuple(c for c in state if c.name != ENV_STATE)), (ENV_STATE, env))
    return {key: chs for key, chs in split if chs}


def state_channels(path: str, channels: dict[str, Channel]) -> tuple[Channel, ...]:
    """``observation.state``'s channels (rule 4 of ``to_lerobot``): the joint position (then
    velocity); without joints, a Gymnasium recording's numeric ``observation`` channels
    (not its image-like uint8 arrays, which stay out of the state vector); none when the
    observation is an image only (``Plan`` refuses a recording with no camera either)."""
    pos = [c for c in channels.values() if c.name.endswith(POSITION_SUFFIX)]
    if pos:
        vel = channels.get(pos[0].name[: -len(POSITION_SUFFIX)] + VELOCITY_SUFFIX)
        return (pos[0], *((vel,) if vel is not None else ()))
    observed = tuple(c for c in channels.values() if c.name.split(".")[0] == "observation"
                     and not (c.dtype.endswith("u1") and len(c.shape) >= 2))
    return observed


@attrs.frozen(eq=False)
class FrameRow:
    """One frame of one episode: every camera's image and the values at its time."""

    generation: int
    time_ns: int
    images: dict[str, Array]
    values: dict[str, Array]


def frame_rows(plan: Plan, path: str) -> Iterator[FrameRow]:
    """The frames of one source in order, with state, action and calibration sampled at each."""
    frames = {c: decoded_frames(path, c) for c in plan.cameras}
    cals = {c: calibration_samples(path, c) for c in plan.calibrated}
    streams = {ch.stream for chs in plan.features.values() for ch in chs}
    holds = {s: Hold((t.generation, t.time_ns, t.values) for t in numeric_ticks(path, s)) for s in streams}
    acts = plan.actions.get(path)
    action = Hold(action_samples(acts)) if plan.action_names and acts is not None else None
    clock: Iterator[tuple[Any, ...]] = (
        zip(*frames.values(), *cals.values(), strict=False) if plan.cameras
        else (((t.time_ns, t.generation, None),) for t in numeric_ticks(path, plan.clock)))
    for items in clock:
        images = items[:len(plan.cameras)]
        t, g, _ = items[0]
        values: dict[str, Array] = {}
        for key, chs in plan.features.items():
            parts = []
            for ch in chs:
                got = holds[ch.stream].at(g, t)
                if got is None:
                    raise ExportError(f"{path}: generation {g}: no {ch.name} sample")
                parts.append(np.reshape(got[ch.name], -1))
            values[key] = np.concatenate(parts).astype(np.float32)
        if plan.action_names:
            a = action.at(g, t) if action is not None else None
            if a is None:
                raise ExportError(f"{path}: generation {g}: no accepted command for 'action'")
            values["action"] = a
        for cam, cal in zip(plan.calibrated, items[len(plan.cameras):]):
            if cal.time_ns != t:
                raise ExportError(f"{path}: camera {cam!r} calibration at {cal.time_ns} for the frame at {t}")
            values[f"observation.cameras.{cam}.intrinsics"] = cal.k.reshape(-1)
            values[f"observation.cameras.{cam}.extrinsics"] = np.concatenate([cal.translation, cal.quaternion_xyzw])
        yield FrameRow(g, t, {c: im for c, (_, _, im) in zip(plan.cameras, images)}, values)
