"""One episode's rows as the env thread captures them: checked copies appended to a chunk,
packed into recorded rows in bulk off the env thread.

    | # | where          | what happens                                                         |
    |---|----------------|----------------------------------------------------------------------|
    | 1 | env thread     | ``RowLayout.observation``/``action``: each leaf cast to its channel's |
    |   | (``step()``)   | dtype in a new array (a copy: the env may reuse its buffers) and its  |
    |   |                | shape checked; ``ValueError`` naming the channel, raised by ``step()`` |
    | 2 | env thread     | the copies, reward, flags and whitelisted ``info`` scalars are        |
    |   |                | appended to the episode's ``Chunk`` (lists; no packing, no bytes)      |
    | 3 | publisher      | ``RowLayout.pack``: one structured array for the chunk, one column     |
    |   | (off the env   | assignment per channel (``np.stack``), viewed as read-only ``uint8``   |
    |   | thread)        | rows: byte for byte the ``RowPacker`` layout (``gymnasium_spaces``)    |

Row t holds observation t (and the joint state read with it), the action chosen from it,
the reward it earned, the flags and info of that step.  A chunk's last observation may be
the episode's final one: its row is the *fill* (``Chunk.final``: the flags the episode
ended with, zeros/NaN elsewhere), as the module table of ``backends.gymnasium_env`` spells it.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fastsim_embedded.backends.base import Array, CameraReading, ScenePluginEvent
from fastsim_embedded.backends.gymnasium_env import JOINT_POSITION, StepRow
from fastsim_embedded.gymnasium_host.spaces import Leaf, cast, leaf_value

__all__ = ["Chunk", "RowLayout", "step_type_error"]

_NAN = float("nan")
_F64 = struct.Struct("=d")  # the reward field (float64, native order: the structured path's)
_NEVER = type("_NEVER", (), {})  # the scalar type of a channel with a shape: no value has it
_Spec = tuple[str, np.dtype[Any], tuple[int, ...], Leaf, type]  # channel, dtype, shape, leaf, numpy scalar type


class Chunk:
    """Consecutive rows of one episode, from row ``first`` on (the env thread appends)."""

    __slots__ = ("events", "final", "first", "infos", "joints", "obs", "readings", "snapshots", "steps", "targets")

    def __init__(self, first: int) -> None:
        self.first = first
        self.obs: list[Any] = []  # observation t per row (one array, or a tuple of one per leaf)
        self.joints: list[tuple[Array, Array] | None] = []  # with obs (MuJoCo envs)
        self.readings: list[Sequence[CameraReading]] = []  # with obs (an episode with cameras)
        self.snapshots: list[Any] = []  # with obs (render side of a MuJoCo env)
        self.steps: list[tuple[Any, float, Any, Any]] = []  # per step: (action copies, reward, terminated, truncated)
        self.targets: list[Array | None] = []  # per step: the action as float64 actuator targets (MuJoCo)
        self.infos: list[tuple[float, ...]] = []
        self.events: dict[int, tuple[ScenePluginEvent, ...]] = {}  # row in this chunk -> its events
        self.final: tuple[bool, bool] | None = None  # the last obs is the final row: its flags

    def __len__(self) -> int:
        """The rows this chunk publishes (its observations)."""
        return len(self.obs)

    def add_events(self, row: int, events: tuple[ScenePluginEvent, ...]) -> None:
        """``events`` ride with row ``row`` of this chunk (after any already there)."""
        self.events[row] = self.events.get(row, ()) + events


class RowLayout:
    """Checks and copies on the env thread, bulk packing off it (module table)."""

    def __init__(self, row: StepRow) -> None:
        self.row = row
        fields = row.packer.fields
        self.nbytes = row.packer.nbytes
        self.dtype = np.dtype({
            "names": [f"f{i}" for i in range(len(fields))],
            "formats": [dtype if not shape else (dtype, shape) for _, dtype, shape in fields],
            "offsets": list(row.packer.offsets), "itemsize": self.nbytes,
        })
        index = row.packer.index
        self._obs = tuple(self._checked(leaf) for leaf in row.observation)
        self._act = tuple(self._checked(leaf) for leaf in row.action)
        self._obs_at = tuple(f"f{index[leaf.name]}" for leaf in row.observation)
        self._act_at = tuple(f"f{index[leaf.name]}" for leaf in row.action)
        self._joints_at = (f"f{index[JOINT_POSITION]}", f"f{index[JOINT_POSITION] + 1}") if JOINT_POSITION in index else None
        self._reward_at = f"f{index['reward']}"
        self._flags_at = (f"f{index['terminated']}", f"f{index['truncated']}")
        self._info_at = tuple(f"f{index['info.' + key]}" for key in row.info_keys)
        self.info_keys = row.info_keys
        self._whole = (len(row.observation) == 1 and not row.observation[0].path,
                       len(row.action) == 1 and not row.action[0].path)
        self._fast = tuple(  # a one-leaf space: its value is the leaf (no path to walk)
            (specs[0][1], specs[0][2], specs[0][4] if not specs[0][2] else _NEVER) if whole else None
            for specs, whole in ((self._obs, self._whole[0]), (self._act, self._whole[1])))
        # the env thread's cheapest case (``GymRecording.step`` checks it inline): an action that is
        # already its one-value channel's NumPy scalar; an observation that is already its one-leaf
        # channel's array (dtype and a non-empty shape).  Anything else goes through the methods.
        self.action_scalar: type = self._fast[1][2] if self._fast[1] is not None else _NEVER
        obs = self._fast[0]
        self.observation_array: tuple[Any, Any] = (obs[0], obs[1]) if obs is not None and obs[1] else (None, None)
        self._fill_obs = tuple(_stored(_fill(leaf)) for leaf in row.observation)
        self._fill_act = tuple(_fill(leaf) for leaf in row.action)
        self._one = self._one_row_plan(row)

    def _one_row_plan(self, row: StepRow) -> tuple[int, int, int, int, int, int | None] | None:
        """Byte offsets for ``pack``'s one-row chunk (a camera episode hands one per step): one
        array leaf each for observation and action, kept as bytes of the field's very dtype, no
        info keys; else ``None`` (the structured path)."""
        fields, offsets, index = row.packer.fields, row.packer.offsets, row.packer.index
        if not (all(self._whole) and self._obs[0][2] and self._act[0][2] and not row.info_keys):
            return None
        obs, act = self._obs[0], self._act[0]
        if fields[index[obs[0]]][1:] != obs[1:3] or fields[index[act[0]]][1:] != act[1:3]:
            return None
        joints = offsets[index[JOINT_POSITION]] if JOINT_POSITION in index else None
        if joints is not None and offsets[index[JOINT_POSITION] + 1] != joints + fields[index[JOINT_POSITION]][1].itemsize * int(
                np.prod(fields[index[JOINT_POSITION]][2])):
            return None  # the two joint fields are written as one run of bytes
        return (offsets[index[obs[0]]], offsets[index[act[0]]], offsets[index["reward"]],
                offsets[index["terminated"]], offsets[index["truncated"]], joints)

    @staticmethod
    def _checked(leaf: Leaf) -> _Spec:
        dtype = np.dtype(np.dtype(leaf.dtype).newbyteorder("=").str)  # a builtin dtype: its singleton
        return leaf.name, dtype, tuple(leaf.shape), leaf, dtype.type

    # -- env thread -----------------------------------------------------------------------
    def observation(self, value: Any) -> Any:
        """Observation ``value`` in its channel's dtype: its bytes, or a NumPy scalar for a
        one-value channel (``ValueError`` naming a channel whose shape is wrong); a tuple of
        one per leaf for a Dict or Tuple space."""
        fast = self._fast[0]  # one leaf: (dtype, shape, its scalar type for a one-value channel)
        if fast is not None:
            if type(value) is np.ndarray and value.dtype is fast[0] and value.shape == fast[1] and fast[1]:
                return value.tobytes()  # already the channel's dtype and shape: the copy is the bytes
            if type(value) is fast[2]:
                return value  # a NumPy scalar of the one-value channel's dtype: immutable, kept as it is
            return _copy(value, self._obs[0])
        return tuple(_copy(leaf_value(value, spec[3]), spec) for spec in self._obs)

    def fill_observation(self) -> Any:
        """A final observation the env did not give (it broke its space): NaN, or 0 for integers."""
        return self._fill_obs[0] if self._whole[0] else self._fill_obs

    def action(self, value: Any) -> Any:
        """Action ``value`` in its channel's dtype, as ``observation``."""
        fast = self._fast[1]
        if fast is not None:
            if type(value) is fast[2]:
                return value
            if type(value) is np.ndarray and value.dtype is fast[0] and value.shape == fast[1] and fast[1]:
                return value.tobytes()  # (a 0-d array of a one-value channel is kept as its scalar, by _copy)
            return _copy(value, self._act[0])
        return tuple(_copy(leaf_value(value, spec[3]), spec) for spec in self._act)

    def info(self, info: Mapping[str, Any] | None) -> tuple[float, ...]:
        """The whitelisted scalar ``info`` entries (NaN when absent or not a number)."""
        return tuple(_scalar(info, key) for key in self.info_keys)

    # -- off the env thread ---------------------------------------------------------------
    def pack(self, chunk: Chunk) -> Array:
        """The chunk's rows: ``(rows, nbytes)`` read-only ``uint8``, one row per observation."""
        n, k = len(chunk.obs), len(chunk.steps)
        if n == 1 and k == 1 and self._one is not None and type(chunk.obs[0]) is bytes and type(chunk.steps[0][0]) is bytes:
            return self._pack_one(chunk, self._one)
        table = np.zeros(n, self.dtype)
        if n:
            self._columns(table, self._obs_at, chunk.obs, self._whole[0], self._obs)
            if self._joints_at is not None:
                table[self._joints_at[0]] = np.stack([j[0] for j in chunk.joints])  # type: ignore[index]
                table[self._joints_at[1]] = np.stack([j[1] for j in chunk.joints])  # type: ignore[index]
        if k:
            actions, rewards, terminated, truncated = zip(*chunk.steps, strict=True)
            self._columns(table[:k], self._act_at, list(actions), self._whole[1], self._act)
            table[self._reward_at][:k] = rewards
            table[self._flags_at[0]][:k] = [bool(flag) for flag in terminated]
            table[self._flags_at[1]][:k] = [bool(flag) for flag in truncated]
            for j, at in enumerate(self._info_at):
                table[at][:k] = [info[j] for info in chunk.infos]
        if k < n:  # the final row: the fill (module table of ``backends.gymnasium_env``)
            for at, fill in zip(self._act_at, self._fill_act, strict=True):
                table[at][k:] = fill
            table[self._reward_at][k:] = _NAN
            final = chunk.final or (False, False)
            table[self._flags_at[0]][k:] = final[0]
            table[self._flags_at[1]][k:] = final[1]
            for at in self._info_at:
                table[at][k:] = _NAN
        rows = table.view(np.uint8).reshape(n, self.nbytes)
        rows.flags.writeable = False
        return rows

    def _pack_one(self, chunk: Chunk, at: tuple[int, int, int, int, int, int | None]) -> Array:
        """``pack`` of one complete row, byte for byte the structured path's (zeros elsewhere)."""
        obs, (action, reward, terminated, truncated) = chunk.obs[0], chunk.steps[0]
        row = bytearray(self.nbytes)
        row[at[0]:at[0] + len(obs)] = obs
        row[at[1]:at[1] + len(action)] = action
        if at[5] is not None:
            position, velocity = chunk.joints[0]  # type: ignore[misc]
            joints = np.concatenate((position, velocity)).astype(np.float64, copy=False).tobytes()
            row[at[5]:at[5] + len(joints)] = joints  # the two joint fields are adjacent (StepRow)
        _F64.pack_into(row, at[2], reward)
        row[at[3]], row[at[4]] = bool(terminated), bool(truncated)
        return np.frombuffer(bytes(row), np.uint8).reshape(1, self.nbytes)  # read-only: immutable bytes

    def _columns(self, table: Any, names: tuple[str, ...], values: list[Any], whole: bool, specs: tuple[_Spec, ...]) -> None:
        """Each leaf's column from what was kept per row: scalars in one array, bytes in one join."""
        n = len(values)
        for j, (name, spec) in enumerate(zip(names, specs, strict=True)):
            column = values if whole else [v[j] for v in values]
            if not spec[2]:
                table[name] = np.array(column, dtype=spec[1])
            else:
                table[name] = np.frombuffer(b"".join(column), dtype=spec[1]).reshape((n, *spec[2]))


def _copy(value: Any, spec: _Spec) -> Any:
    """``value`` cast to the channel's dtype, its shape checked (``spaces.cast``, as
    ``RowPacker.encode``): kept."""
    return _stored(cast(spec[:3], value))


def _stored(array: Array) -> Any:
    """What a chunk keeps of a value: a NumPy scalar (one value) or its bytes (a copy)."""
    return array[()] if array.ndim == 0 else array.tobytes()


def _fill(leaf: Leaf) -> Array:
    return np.full(leaf.shape, np.nan if leaf.dtype.kind == "f" else 0, dtype=np.dtype(leaf.dtype).newbyteorder("="))


def _scalar(info: Mapping[str, Any] | None, key: str) -> float:
    if info is None or key not in info:
        return _NAN
    try:
        return float(np.asarray(info[key], dtype=np.float64).reshape(()))
    except (TypeError, ValueError):
        return _NAN


def step_type_error(exc: TypeError, reward: Any) -> ValueError:
    """A step value of the wrong type as one line naming it: the reward, else the action."""
    try:
        float(reward)
    except (TypeError, ValueError):
        return ValueError(f"reward: the env returned {type(reward).__name__} of shape {np.shape(reward)}, not one number")
    return ValueError(f"action: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
