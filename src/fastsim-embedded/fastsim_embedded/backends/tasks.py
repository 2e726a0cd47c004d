"""Tasks a scene may declare (``scenario.scene.task``): a dense reward, success and failure.

A task is authored as one key under ``scenario.scene.task`` (``fsr check`` validates it
with the scene schema, ``scene_schema.TASK``):

    | # | task  | succeeds when                                   | fails when                   |
    |---|-------|-------------------------------------------------|------------------------------|
    | 1 | reach | the end effector stays within ``tolerance_m`` of | never                        |
    |   |       | the target for ``hold_s``                        |                              |
    | 2 | pick  | the object stays ``height_m`` above its start    | the object falls ``fall_m``  |
    |   |       | for ``hold_s`` (lifted and held)                 | below its start (off the     |
    |   |       |                                                 | table)                       |

Dense rewards, per tick, after the tick's physics step:

    reach: 1 - tanh(5 d)                                  (+1 on success), d = |ee - target|
    pick:  1 - tanh(5 d) + grasped * (1 + lift)           (+2 on success), d = |ee - object|,
           grasped = gripper closure >= 0.5 and d < 0.04, lift = clip(rise / height_m, 0, 1);
           the closure is measured: the gripper's driven joint as a fraction of its range
           (0 open, 1 closed; not the commanded target)

The scene declares the task's numeric channels (entity ``task``): ``task.reward`` (the
tick's reward), ``task.end_effector`` (m) and ``task.target`` (reach) or
``task.object_position`` (pick), so Record writes the reward of every tick beside the
joint state.  ``TaskTracker.result()`` is the episode's result (success, return, steps),
recorded as a ``task.result`` event when the episode ends.  The return and the steps are
Gymnasium's: the first tick of each generation (the reset's observation, which no action
led to) is scored and recorded in ``task.reward``, but it is not a step, so its reward is
not part of the return; a ``FastSimRun-v0`` episode's return is the sum of the rewards
its ``step()`` calls returned; ``TaskSpec.to_json()`` is the
task spec in the run metadata.  ``success`` is sticky over an episode: a Run whose script
resets (a new generation) keeps it once any generation succeeded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_contract.values import ChannelDescriptor

__all__ = ["TASK_KINDS", "TASK_RESULT_EVENT", "TaskSpec", "TaskTracker", "parse_task"]

F64 = npt.NDArray[np.float64]

#: task -> its numeric channels after ``task.reward``
TASK_KINDS: Final = {"reach": ("end_effector", "target"), "pick": ("end_effector", "object_position")}
#: the event that carries the episode's result
TASK_RESULT_EVENT: Final = "task.result"
_GRASP_DISTANCE_M: Final = 0.04


@attrs.frozen
class TaskSpec:
    """One declared task with every default filled in."""

    kind: str  # "reach" | "pick"
    tolerance_m: float = 0.05
    hold_s: float = 0.5
    target: tuple[float, ...] | None = None  # reach: None draws one from the seed
    target_object: str = "cube"  # pick: authored as ``object``
    height_m: float = 0.1
    fall_m: float = 0.1

    def to_json(self) -> dict[str, object]:
        """The spec as recorded in the run metadata (only the keys the task uses)."""
        common: dict[str, object] = {"kind": self.kind, "hold_s": self.hold_s}
        if self.kind == "reach":
            target = None if self.target is None else list(self.target)
            return {**common, "tolerance_m": self.tolerance_m, "target": target}
        return {**common, "object": self.target_object, "height_m": self.height_m, "fall_m": self.fall_m}


def parse_task(scene: Mapping[str, object], kinds: tuple[str, ...]) -> TaskSpec | None:
    """The scene's task (``None`` when it declares none); ``ValueError`` names the key."""
    declared = scene.get("task")
    if declared is None:
        return None
    if not isinstance(declared, Mapping) or len(declared) != 1:
        raise ValueError(f"task: must name exactly one task of {list(kinds)}")
    ((kind, params),) = declared.items()
    if kind not in kinds:
        raise ValueError(f"task: this scene has no {kind!r} task (it has {', '.join(kinds)})")
    params = dict(params or {}) if isinstance(params, Mapping) else {}
    target = params.get("target")
    return TaskSpec(
        kind=str(kind),
        tolerance_m=float(params.get("tolerance_m", 0.05)),
        hold_s=float(params.get("hold_s", 0.5)),
        target=None if not isinstance(target, list | tuple) else tuple(float(v) for v in target),
        target_object=str(params.get("object", "cube")),
        height_m=float(params.get("height_m", 0.1)),
        fall_m=float(params.get("fall_m", 0.1)),
    )


def _vector(name: str, elements: list[str], units: tuple[str, ...]) -> ChannelDescriptor:
    return ChannelDescriptor(
        name=f"task.{name}", kind="numeric", dtype="float64", shape=(len(elements),), units=units,
        entity="task", attributes={"element_names": elements},
    )


@attrs.define(eq=False)
class TaskTracker:
    """One episode's task state, updated once per tick by the scene after it steps."""

    spec: TaskSpec
    hold_ticks: int
    target: F64 = attrs.field(factory=lambda: np.zeros(3))  # reach target, or the object's start
    reward: float = 0.0
    success: bool = False  # the condition holds now (held long enough)
    failure: bool = False
    succeeded: bool = False  # sticky over the episode
    total: float = 0.0
    steps: int = 0
    _held: int = 0
    _start: bool = True  # the next update scores a generation's first tick (not a step)
    #: this tick's values: reward, end effector (3), target or object (3)
    values: F64 = attrs.field(factory=lambda: np.zeros(7))

    @classmethod
    def create(cls, spec: TaskSpec, sensor_hz: float) -> TaskTracker:
        """A tracker whose hold time is a whole number of ticks (at least one)."""
        return cls(spec, max(1, round(spec.hold_s * sensor_hz)))

    def channels(self) -> tuple[ChannelDescriptor, ...]:
        """``task.reward`` then the task's two position channels (module docstring)."""
        xyz = ["x", "y", "z"]
        second = TASK_KINDS[self.spec.kind][1]
        return (
            _vector("reward", ["reward"], ("1",)),
            _vector("end_effector", xyz, ("m",) * 3),
            _vector(second, xyz, ("m",) * 3),
        )

    def reset(self, target: F64) -> None:
        """A new generation: the hold restarts; ``target`` is the reach target or the
        object's start position."""
        self.target = np.asarray(target, dtype=np.float64).copy()
        self._held = 0
        self.success = self.failure = False
        self.reward = 0.0
        self._start = True

    def _hold(self, condition: bool) -> bool:
        self._held = self._held + 1 if condition else 0
        return self._held >= self.hold_ticks

    def update(self, end_effector: F64, obj: F64 | None = None, gripper: float = 0.0) -> float:
        """Score this tick (reach: ``end_effector`` vs the target; pick: vs ``obj``)."""
        if self.spec.kind == "reach":
            d = float(np.linalg.norm(end_effector - self.target))
            self.success = self._hold(d <= self.spec.tolerance_m)
            reward = 1.0 - math.tanh(5.0 * d) + float(self.success)
            shown = self.target
        else:
            assert obj is not None  # noqa: S101 - a pick scene passes its object
            d = float(np.linalg.norm(end_effector - obj))
            rise = float(obj[2] - self.target[2])
            grasped = gripper >= 0.5 and d < _GRASP_DISTANCE_M
            lift = min(1.0, max(0.0, rise / self.spec.height_m))
            self.success = self._hold(rise >= self.spec.height_m)
            self.failure = rise <= -self.spec.fall_m
            reward = 1.0 - math.tanh(5.0 * d) + float(grasped) * (1.0 + lift) + 2.0 * float(self.success)
            shown = obj
        self.reward = reward
        self.succeeded = self.succeeded or self.success
        if self._start:  # the reset's tick: recorded, not a step of the return
            self._start = False
        else:
            self.total += reward
            self.steps += 1
        values = np.empty(7)
        values[0] = reward
        values[1:4] = end_effector
        values[4:7] = shown
        values.flags.writeable = False
        self.values = values
        return reward

    def result(self) -> dict[str, object]:
        """The episode's result: task, success, failure, return and steps."""
        return {
            "task": self.spec.kind, "success": self.succeeded, "failure": self.failure,
            "return": self.total, "steps": self.steps,
        }
