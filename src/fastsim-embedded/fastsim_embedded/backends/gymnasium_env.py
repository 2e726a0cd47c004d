"""The ``gymnasium`` backend: one Gymnasium env (or one sub-env of a vector env) as a Core backend.

The env's own thread is the simulation thread, and the env steps itself: the driver
(``fastsim_embedded.gymnasium_host.recorder``) calls ``env.step``/``env.reset``, stages what
they returned with ``stage`` and then runs one host tick, which publishes the staged row
through the ordinary observation and camera paths.  Nothing here steps physics, so
``step`` and ``reset`` only keep the contract; there is no script and no command.

Channels (one recorded row per tick, in this order, packed in one buffer):

    | # | channel                     | dtype, shape                 | row t holds                          |
    |---|-----------------------------|------------------------------|--------------------------------------|
    | 1 | ``observation[.<path>]``    | the space's (``gymnasium_spaces``) | observation t (t = 0: the reset's) |
    | 1b| ``robot.joint_position``,   | float64 (J,)                 | MuJoCo envs: hinge and slide joints  |
    |   | ``robot.joint_velocity``    |                              | with observation t (``data``)        |
    | 2 | ``action[.<path>]``         | the space's                  | the action chosen from observation t |
    | 3 | ``reward``                  | float64 ()                   | the reward that action earned        |
    | 4 | ``terminated``, ``truncated`` | uint8 ()                   | the flags that step returned         |
    | 5 | ``info.<key>``              | float64 ()                   | a whitelisted scalar ``info`` entry  |
    |   |                             |                              | (NaN when absent)                    |
    | 6 | ``cameras.<cam>.rgb`` + K,  | uint8 (H, W, C), ...         | each camera's frame of observation t |
    |   | translation, quaternion     | (C 3 RGB, 1 grey, 4 RGBA)    | (``gymnasium_host.cameras``)         |

The render side (``render.state``, ``scene.geometry@2`` transforms) of a MuJoCo env is a
snapshot read with observation t and staged with its row (``gymnasium_mujoco.StagedRenderSource``):
the row is published one ``step()`` later, when the env's ``data`` already holds t + 1.

A MuJoCo env's action (one ``Box`` of one value per actuator) is also published as the
control command ``gym.action`` of its tick, applied with the actuators' names: the
audited control target that ``fsr export --to lerobot`` and Replay read as the action.

An episode of T steps has T + 1 rows: the last row holds the final observation, and its
rows 2-5 are the *fill* (zeros, NaN reward; ``terminated``/``truncated`` repeat how the
episode ended).  Rows 2-5 are declared per-step (channel attribute ``per_step``, recorded
as the stream's ``per_step_channels``), so the reading API drops the fill:
``rec.numeric("action")`` has T rows, ``rec.numeric("observation")`` T + 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.base import (
    Array,
    CameraReading,
    ControlCommand,
    ControlOutcome,
    TickScript,
)
from fastsim_embedded.gymnasium_host.spaces import Leaf, RowPacker
from fastsim_recording_format import names

__all__ = ["ACTION_COMMAND", "JOINT_POSITION", "JOINT_VELOCITY", "GymnasiumBackend", "StepRow", "camera_channels"]

JOINT_POSITION = "robot.joint_position"
JOINT_VELOCITY = "robot.joint_velocity"
ACTION_COMMAND = "gym.action"  # a MuJoCo env's action as an applied control target

_NO_SCRIPT = TickScript()


def camera_channels(alias: str) -> tuple[str, str, str, str]:
    """The four channels of camera ``alias``: rgb, intrinsics, translation, quaternion_xyzw."""
    return (names.rgb_stream(alias), names.intrinsics_stream(alias), names.translation_stream(alias),
            names.quaternion_stream(alias))


class StepRow:
    """The packed row's fields (module table rows 1-5) and which of them are per step
    (``gymnasium_host.capture`` fills and packs the rows)."""

    def __init__(
        self, observation: Sequence[Leaf], action: Sequence[Leaf], info_keys: Sequence[str], joints: int = 0,
    ) -> None:
        self.observation = tuple(observation)
        self.action = tuple(action)
        self.info_keys = tuple(info_keys)
        f64 = np.dtype(np.float64)
        fields: list[tuple[str, np.dtype[Any], tuple[int, ...]]] = [
            (leaf.name, leaf.dtype, leaf.shape) for leaf in self.observation
        ]
        if joints:  # a MuJoCo env's robot state (row 1b of the module table)
            fields += [(JOINT_POSITION, f64, (joints,)), (JOINT_VELOCITY, f64, (joints,))]
        step_at = len(fields)
        fields += [(leaf.name, leaf.dtype, leaf.shape) for leaf in self.action]
        fields += [("reward", np.dtype(np.float64), ()), ("terminated", np.dtype(np.uint8), ()),
                   ("truncated", np.dtype(np.uint8), ())]
        fields += [(f"info.{key}", np.dtype(np.float64), ()) for key in self.info_keys]
        self.packer = RowPacker(fields)
        self.step_names = tuple(name for name, _, _ in fields[step_at:])  # rows 2-5: per-step


class GymnasiumBackend:
    """One (sub-)env presented as a backend for one recorded episode (module table)."""

    #: the registry name
    name: ClassVar[str] = "gymnasium"

    def __init__(
        self,
        packer: RowPacker,
        *,
        cameras: Sequence[tuple[str, tuple[int, int, int]]] = (),
        render_source: Any = None,
        description: Mapping[str, object] | None = None,
        actuators: Sequence[str] = (),
        per_step: Sequence[str] = (),
    ) -> None:
        self.packer = packer
        self.actuators = list(actuators)
        self.render = render_source
        self._description = dict(description or {})
        self._staged: Array | None = None
        self._frames: Sequence[CameraReading] = ()
        steps = frozenset(per_step)  # one sample per step: the last tick's values are a fill
        declared = [
            ChannelDescriptor(name, "numeric", np.dtype(dtype).name, shape, entity=name.split(".", 1)[0],
                              attributes={"per_step": True} if name in steps else {})
            for name, dtype, shape in packer.fields
        ]
        for camera, (h, w, c) in cameras:  # each recorded camera's four channels
            rgb, k, t, q = camera_channels(camera)
            declared += [
                ChannelDescriptor(rgb, "rgb", "uint8", (h, w, c), entity=camera),
                ChannelDescriptor(k, "intrinsics", "float64", (3, 3), ("px",), camera),
                ChannelDescriptor(t, "translation", "float64", (3,), ("m", "m", "m"), camera,
                                  attributes={"element_names": ["x", "y", "z"]}),
                ChannelDescriptor(q, "quaternion_xyzw", "float64", (4,), ("1",) * 4, camera,
                                  attributes={"element_names": ["qx", "qy", "qz", "qw"]}),
            ]
        self._declared = tuple(declared)

    def stage(self, row: Array, frames: Sequence[CameraReading] = (), snapshot: Any = None) -> None:
        """What the next tick publishes: one packed row, its frame's camera readings and its
        render-side snapshot (all read on the env thread with the observation: ``gymnasium_mujoco``)."""
        self._staged = row
        self._frames = frames
        if self.render is not None:
            self.render.current = snapshot

    def channels(self) -> Sequence[ChannelDescriptor]:
        """The packed step channels, then the camera's four channels (when recorded)."""
        return self._declared

    def reset(self, generation: int) -> None:
        """The env was reset by its driver: nothing to do."""

    def script(self, tick: int) -> TickScript:
        """The env's driver sends everything itself: no script."""
        return _NO_SCRIPT

    def apply_control(self, command: ControlCommand) -> ControlOutcome:
        """A MuJoCo env's action, audited as the control target its actuators were given
        (the env already applied it in ``step``); any other command is refused."""
        targets = command.args.get("targets")
        if command.name != ACTION_COMMAND or not self.actuators or not isinstance(targets, list):
            return ControlOutcome(False, {"error": "a Gymnasium env takes actions through step(), not commands"})
        return ControlOutcome(True, {"actuators": self.actuators, "ctrl": targets})

    def step(self, substeps: int) -> None:
        """The env already stepped (its driver called ``env.step``)."""

    def numeric_packing(self) -> Sequence[tuple[str, str, tuple[int, ...]]]:
        """``PackedSampling``: the module table's rows 1-5 in buffer order."""
        return self.packer.packing()

    def sample_numeric_packed(self) -> Array:
        """``PackedSampling``: the staged row (new and read-only each tick)."""
        if self._staged is None:
            raise RuntimeError("gymnasium backend: a tick ran with no staged row")
        return self._staged

    def sample_numeric(self) -> Mapping[str, Array]:
        """The staged row by channel (the host prefers the packed path)."""
        return dict(self.packer.unpack(self.sample_numeric_packed()))

    def sample_cameras(self) -> Sequence[CameraReading]:
        """The staged frame's readings (``()`` when none is recorded)."""
        return self._frames

    def render_source(self) -> Any:
        """``render.state`` of a MuJoCo env's model and data (``None`` otherwise)."""
        return self.render

    def describe(self) -> dict[str, object]:
        """The env as recorded with the episode (spec, wrappers, versions, seed, ...)."""
        return self._description

    def close(self) -> None:
        """The env belongs to its user: nothing is closed here."""
