"""``Dataset``: a map-style dataset over the ticks of many recordings (episodes) and their segments.

A sample is one tick of the numeric stream that carries the selected channels, in one
segment (Runtime generation) of one file (an episode).  Windows are relative tick offsets, in the
spirit of LeRobot's ``delta_timestamps``:

    | # | rule                                                                            |
    |---|---------------------------------------------------------------------------------|
    | 1 | ``window=None``: each key holds one sample (no window axis, no pad mask)        |
    | 2 | ``window=[-2, -1, 0]`` applies to every key; a mapping gives offsets per key    |
    |   | (keys it leaves out get ``[0]``)                                                |
    | 3 | an offset that falls outside the segment takes the segment's edge tick and sets |
    |   | ``<key>_is_pad[j]`` (never a tick of another segment or file)                   |
    | 4 | a camera key holds, for each tick, the latest frame at or before the tick's     |
    |   | simulation time in the same segment; with none, a zero image and a pad flag   |
    | 5 | when a selected channel is per-step (``Channel.per_step``), a segment's last    |
    |   | tick (its fill) is no sample: each sample has observation t with step t        |
    | 6 | windows in seconds, the ``action`` key and ``dtype``: ``_dataset_keys``          |

``__getitem__`` returns a dict of numpy arrays: each channel and camera, the pad masks,
and ``index``, ``file_index`` (the episode: position of the file in the dataset),
``segment_index`` (position of the segment in the dataset), ``generation``,
``frame_index`` (tick within the segment) and ``time_ns``.  ``episode_index`` (the old
name of ``segment_index``) and ``Dataset.episodes`` (of ``Dataset.segments``) are kept
for one release; ``Dataset.episodes`` warns (``DeprecationWarning``).
The dataset pickles without open files; each process opens the files it reads, so it
works as a ``torch.utils.data.Dataset`` (by duck typing) with DataLoader workers.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fastsim_recording_format.encoding import Array
from fastsim_recording_format.reading import _reuse
from fastsim_recording_format.reading._dataset_keys import ACTION, Windows, action_rows, float_dtype
from fastsim_recording_format.reading._errors import BadArgument, OutOfRange, unknown
from fastsim_recording_format.reading._recording import Recording, deprecated
from fastsim_recording_format.reading._sources import LeftOutWarning, select
from fastsim_recording_format.reading._tables import DATA

__all__ = ["Dataset"]

MAX_OPEN = 32  # files a process keeps open at once (each holds two descriptors)
Sample = dict[str, Any]
PathArg = str | os.PathLike[str]




class Dataset:
    """Ticks of many recordings as samples (see the module table for windows and padding)."""

    def __init__(
        self,
        paths_or_index: PathArg | Sequence[PathArg],
        *,
        channels: Sequence[str],
        cameras: Sequence[str] = (),
        window: Sequence[int] | Mapping[str, Sequence[int] | Mapping[str, Sequence[float]]] | None = None,
        transform: Callable[[Sample], Any] | None = None,
        action: bool | str = False,
        dtype: object = None,
        where: object = None,
        include: str | Sequence[str] | None = None,
    ) -> None:
        selection = select(paths_or_index, where, include)  # files, folders, indexes; the default filter
        self.paths = selection.paths
        self.left_out: dict[str, int] = dict(selection.left_out.counts)  # episodes left out, by reason
        if selection.left_out.total:
            warnings.warn(selection.left_out.line(), LeftOutWarning, stacklevel=2)
        if not self.paths:
            raise BadArgument(f"paths_or_index: no recording is left: {selection.left_out.line()}")
        if isinstance(channels, str) or not isinstance(channels, Sequence):
            raise BadArgument(f"channels must be a sequence of channel names, got {channels!r}")
        if isinstance(cameras, str) or not isinstance(cameras, Sequence):
            raise BadArgument(f"cameras must be a sequence of camera aliases, got {cameras!r}")
        if not channels:
            raise BadArgument("channels must name at least one numeric channel (it sets the sample clock)")
        if transform is not None and not callable(transform):
            raise BadArgument(f"transform must be callable, got {type(transform).__name__}")
        self.channels = tuple(channels)
        self.cameras = tuple(cameras)
        self.transform = transform
        if not isinstance(action, bool | str):
            raise BadArgument(f"action must be True, False or '<target>.<command>', got {action!r}")
        self.action: str | None = (None if action is True else action) if action else None
        self._action = bool(action)
        self.dtype = float_dtype(dtype)
        keys = (*self.channels, *self.cameras, *((ACTION,) if action else ()))
        if len(set(keys)) != len(keys):
            raise BadArgument(f"channels, cameras and action repeat a name: {list(keys)}")
        self.windows = Windows(window, keys)
        self.windowed = self.windows.windowed
        # the sample index: one row per segment (file, generation, first tick row, ticks)
        segments: list[tuple[int, int, int, int]] = []
        for f, path in enumerate(self.paths):
            with Recording(path) as rec:
                state = rec._file()
                streams = set()
                for name in self.channels:
                    if name not in state.channels:
                        raise unknown(f"numeric channel (in {path})", name, state.channels)
                    streams.add(state.channels[name][0].name)
                if len(streams) > 1:
                    raise BadArgument(f"channels come from several streams {sorted(streams)} in {path}")
                for alias in self.cameras:
                    if alias not in rec.cameras():
                        raise unknown(f"camera (in {path})", alias, rec.cameras())
                spec = state.channels[self.channels[0]][0]
                trim = int(any(state.channels[name][2].per_step for name in self.channels))  # rule 5
                rows = state.tables.rows(spec.stream_id)
                gens = rows["generation"][rows["kind"] == DATA].astype(np.int64)
                if len(gens):
                    cut = np.flatnonzero(np.diff(gens)) + 1
                    starts = np.concatenate(([0], cut))
                    stops = np.concatenate((cut, [len(gens)]))
                    segments.extend(
                        (f, int(gens[a]), int(a), int(b - a) - trim) for a, b in zip(starts, stops)
                        if b - a > trim
                    )
        self.segments = np.array(segments, np.int64).reshape(-1, 4)
        self._first = np.concatenate(([0], np.cumsum(self.segments[:, 3])))
        self._open: dict[int, _Cache] = {}

    @property
    def episodes(self) -> Array:
        """The old name of ``segments`` (kept for one release)."""
        deprecated("Dataset.episodes", "Dataset.segments")
        return self.segments

    # -- map-style dataset --------------------------------------------------------------
    def __len__(self) -> int:
        return int(self._first[-1])

    def __getitem__(self, index: int) -> Any:
        if isinstance(index, bool) or not isinstance(index, int | np.integer):
            raise BadArgument(f"index must be an integer, got {type(index).__name__}")
        n = len(self)
        i = int(index)
        if not -n <= i < n:
            raise OutOfRange(f"sample index {index} out of range: the dataset has {n} samples")
        i %= n
        e = int(np.searchsorted(self._first, i, side="right")) - 1
        f, generation, first_row, length = (int(x) for x in self.segments[e])
        pos = i - int(self._first[e])
        cache = self._cache(f)
        ticks = cache.ticks[first_row:first_row + length]
        times = ticks["time_ns"]
        sample: Sample = {}
        for name in self.channels:
            q, pad = self.windows.positions(name, pos, times)
            sample[name] = self._shape(self._cast(cache.values(name, ticks["payload_at"][q])))
            if self.windowed:
                sample[f"{name}_is_pad"] = pad
        if self._action:
            q, pad = self.windows.positions(ACTION, pos, times)
            values, issued, accepted = cache.actions(self.action, self.channels[0])
            rows = first_row + q
            sample[ACTION] = self._shape(self._cast(values[rows]))
            sample[f"{ACTION}_is_pad"] = self._shape(pad | ~issued[rows])
            sample[f"{ACTION}_accepted"] = self._shape(accepted[rows] & ~pad)
        for alias in self.cameras:
            q, pad = self.windows.positions(alias, pos, times)
            frames = cache.frame_rows(alias, first_row, length)[q]
            images = cache.images(alias, frames)
            pad = pad | (frames < 0)
            sample[alias] = self._shape(images)
            if self.windowed:
                sample[f"{alias}_is_pad"] = pad
        sample["index"] = np.int64(i)
        sample["file_index"] = np.int64(f)
        sample["segment_index"] = sample["episode_index"] = np.int64(e)  # episode_index: old name
        sample["generation"] = np.int64(generation)
        sample["frame_index"] = np.int64(pos)
        sample["time_ns"] = np.int64(ticks["time_ns"][pos])
        return self.transform(sample) if self.transform is not None else sample

    def _cast(self, values: Array) -> Array:
        return values if self.dtype is None else values.astype(self.dtype)

    def _shape(self, stacked: Array) -> Array:
        return stacked if self.windowed else stacked[0]

    def _cache(self, f: int) -> _Cache:
        """File ``f`` opened in this process; at most ``MAX_OPEN`` stay open (least recent closes)."""
        cache = self._open.pop(f, None)
        if cache is None or cache.pid != os.getpid():
            if any(c.pid != os.getpid() for c in self._open.values()):
                self._open.clear()  # inherited through a fork: the parent's, not ours to close
            cache = _Cache(Recording(self.paths[f]), self.channels[0])
            self.windows.check_period(cache.ticks["time_ns"], self.paths[f])
        self._open[f] = cache  # most recently used last
        while len(self._open) > MAX_OPEN:
            oldest = next(iter(self._open))
            self._open.pop(oldest).recording.close()
        return cache

    def close(self) -> None:
        """Close the files this process opened (they reopen on the next sample)."""
        for cache in self._open.values():
            if cache.pid == os.getpid():
                cache.recording.close()
        self._open.clear()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_open"] = {}
        return state

    def __repr__(self) -> str:
        return (
            f"Dataset({len(self.paths)} episodes, {len(self.segments)} segments, {len(self)} samples, "
            f"channels={list(self.channels)}, cameras={list(self.cameras)})"
        )


class _Cache:
    """One file opened in one process, with the row tables a sample needs."""

    def __init__(self, recording: Recording, clock_channel: str) -> None:
        self.recording = recording
        self.pid = os.getpid()
        state = recording._file()
        self.state = state
        spec = state.channels[clock_channel][0]
        rows = state.tables.rows(spec.stream_id)
        self.ticks: Array = rows[rows["kind"] == DATA]
        self._frames: dict[str, Array] = {}
        self._frame_rows: dict[tuple[str, int], Array] = {}
        self._actions: tuple[Array, Array, Array] | None = None

    def actions(self, command: str | None, clock: str) -> tuple[Array, Array, Array]:
        """This file's actions on the clock's ticks (``_dataset_keys`` rule 3), read once."""
        if self._actions is None:
            self._actions = action_rows(self.recording, command, clock)
        return self._actions

    def values(self, channel: str, starts: Array) -> Array:
        _, _, ch = self.state.channels[channel]
        raw = self.state.tables.gather(starts + ch.offset, ch.nbytes)
        return raw.view(ch.dtype).reshape(len(starts), *ch.shape)

    def _camera_rows(self, alias: str) -> Array:
        rows = self._frames.get(alias)
        if rows is None:
            spec = self.state.cameras[alias]["rgb"]
            every = self.state.tables.rows(spec.stream_id)
            rows = self._frames[alias] = every[every["kind"] == DATA]
        return rows

    def frame_rows(self, alias: str, first_row: int, length: int) -> Array:
        """For each tick of an episode, the camera row of its latest frame (or -1)."""
        key = (alias, first_row)
        known = self._frame_rows.get(key)
        if known is not None:
            return known
        frames = self._camera_rows(alias)
        ticks = self.ticks[first_row:first_row + length]
        generation = int(ticks["generation"][0])
        mine = np.flatnonzero(frames["generation"] == generation)
        k = np.searchsorted(frames["time_ns"][mine], ticks["time_ns"], side="right") - 1
        out = np.where(k >= 0, mine[np.maximum(k, 0)] if len(mine) else -1, -1).astype(np.int64)
        self._frame_rows[key] = out
        return out

    def images(self, alias: str, rows: Array) -> Array:
        """The frames at camera rows ``rows`` (zeros where a row is -1), decoded in place."""
        spec = self.state.cameras[alias]["rgb"]
        codec = self.recording._cameras.image_codec(spec)
        out = _reuse.frames(len(rows) * int(np.prod(codec.shape))).reshape((len(rows), *codec.shape))
        camera = self._camera_rows(alias)
        for j, row in enumerate(rows.tolist()):
            if row < 0:
                out[j] = 0
            else:
                self.recording._cameras.decode(spec, camera[row], out[j])
        return out
