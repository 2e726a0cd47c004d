"""The ``synthetic`` backend: a deterministic scene with no simulator SDK.

Scene (``scenario.scene``) and options (``BackendSpec.options``):

    | # | key                 | default | meaning                                            |
    |---|---------------------|---------|----------------------------------------------------|
    | 1 | scene.robots        | {robot} | entity names, used first                           |
    | 2 | numeric_channels    | 3/robot | total numeric channels: <entity>.joint_position,   |
    |   |                     |         | .joint_velocity, .base_pose for each entity, then  |
    |   |                     |         | extra entities robot_1, robot_2 ... as needed      |
    | 3 | dof                 | 7       | joint vector length                                |
    | 4 | command_every_s     | 0.5     | a scripted ``set_joint_offset`` command period     |
    | 5 | event_every_s       | 1.0     | a scripted ``scene.marker`` plugin event period    |
    | 6 | reset_every_s       | none    | a reset (new Runtime generation) period            |
    | 7 | scene.fluid         | none    | a particle emitter (``fastsim_embedded.render.fluid``):    |
    |   |                     |         | the scene then exposes ``fluid.audit``             |
    | 8 | scene.task          | none    | ``reach`` (``fastsim_embedded.backends.tasks``):   |
    |   |                     |         | adds the ``task.*`` channels after the others      |

Joint positions follow seeded sinusoids of the simulation time plus the last commanded
offset; velocities are their exact derivative; poses circle the origin.  Everything is a
pure function of (seed, tick, generation, commands), so two runs with the same spec
produce identical samples.  A driver may also command the first entity's joints with
``set_joint_targets`` (``controls()``; ``synthetic_arm``): from the first such command
in a generation they servo toward the targets instead of following the sinusoids.  Numbers in the scene may also be given under
``scenario.scene.synthetic``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import attrs
import numpy as np

from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends import synthetic_arm
from fastsim_embedded.backends.base import (
    Array,
    BackendSpec,
    CameraReading,
    ControlCommand,
    ControlOutcome,
    ControlSpec,
    ReadOnlySamples,
    ScenePluginEvent,
    TickScript,
)
from fastsim_embedded.backends.tasks import TaskTracker, parse_task
from fastsim_embedded.render.fluid import emitter_from_scene
from fastsim_embedded.render.synthetic import SyntheticRenderSource
from fastsim_recording_format.encoding import readonly

__all__ = ["SyntheticBackend", "create_backend"]

_FAMILIES = ("joint_position", "joint_velocity", "base_pose")


def _period_ticks(value: object, sensor_hz: float) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"synthetic: periods must be positive seconds (got {value!r})")
    return max(1, round(float(value) * sensor_hz))


@attrs.define(eq=False)
class SyntheticBackend:
    """A seeded, SDK-free scene."""

    #: the registry name
    name: ClassVar[str] = "synthetic"

    spec: BackendSpec
    entities: tuple[str, ...]
    n_channels: int
    dof: int
    command_every: int | None
    event_every: int | None
    reset_every: int | None
    _declared: tuple[ChannelDescriptor, ...] = ()
    _names: tuple[str, ...] = ()
    _flat_index: tuple[int, ...] = ()
    _state: tuple[tuple[Array, ...], Array] | None = None  # (family blocks, packed buffer)
    _packed_size: int = 0
    _amp: Array = attrs.field(factory=lambda: np.zeros(0))
    _omega: Array = attrs.field(factory=lambda: np.zeros(0))
    _phase: Array = attrs.field(factory=lambda: np.zeros(0))
    _offset: float = 0.0
    _steps: int = 0
    _generation: int = 0
    _commands: int = 0
    _events: int = 0
    _render: SyntheticRenderSource | None = None
    task: TaskTracker | None = None
    _targets: Array | None = None  # the driven arm's joint targets (None: it follows the sinusoids)
    _q: Array = attrs.field(factory=lambda: np.zeros(0))
    _qd: Array = attrs.field(factory=lambda: np.zeros(0))

    def __attrs_post_init__(self) -> None:
        rng = np.random.default_rng(self.spec.seed)
        n_entities = len(self.entities)
        self._amp = rng.uniform(0.1, 1.0, size=(n_entities, self.dof))
        self._omega = rng.uniform(0.5, 3.0, size=(n_entities, self.dof))
        self._phase = rng.uniform(0.0, 2 * math.pi, size=(n_entities, self.dof))
        declared: list[ChannelDescriptor] = []
        for index in range(self.n_channels):
            entity = self.entities[index // len(_FAMILIES)]
            family = _FAMILIES[index % len(_FAMILIES)]
            if family == "base_pose":
                shape: tuple[int, ...] = (7,)
                units: tuple[str, ...] = ("m", "m", "m", "1", "1", "1", "1")
                elements = ["x", "y", "z", "qx", "qy", "qz", "qw"]
            else:
                shape = (self.dof,)
                units = ("rad" if family == "joint_position" else "rad/s",) * self.dof
                elements = [f"joint{k + 1}" for k in range(self.dof)]
            declared.append(
                ChannelDescriptor(
                    name=f"{entity}.{family}", kind="numeric", dtype="float64",
                    shape=shape, units=units, entity=entity,
                    attributes={"element_names": elements},
                )
            )
        self._declared = tuple(declared)
        n_entities = len(self.entities)
        self._names = tuple(d.name for d in declared)
        self._packed_size = sum(math.prod(d.shape) for d in declared)
        self._flat_index = tuple(
            (index % len(_FAMILIES)) * n_entities + index // len(_FAMILIES) for index in range(len(declared))
        )
        if self.task is not None:
            self.reset(0)  # the task's target is known before the first tick

    def channels(self) -> Sequence[ChannelDescriptor]:
        """The declared numeric channels (no cameras), then the task's."""
        return self._declared + (self.task.channels() if self.task is not None else ())

    def controls(self) -> tuple[ControlSpec, ...]:
        """What a driver may command: the first entity's joint position targets."""
        return (synthetic_arm.control_spec(self.entities[0], self.dof),)

    def reset(self, generation: int) -> None:
        """Start a generation: time restarts from the same seeded state, offsets clear."""
        self._generation = generation
        self._steps = 0
        self._offset = 0.0
        self._state = None
        self._targets = None
        if self.task is not None:
            target = self.task.spec.target
            self.task.reset(
                np.array(target) if target is not None else synthetic_arm.seeded_target(self.spec.seed, self.dof)
            )

    def script(self, tick: int) -> TickScript:
        """Resets, commands and events on their fixed tick periods."""
        reset = self.reset_every is not None and tick > 1 and (tick - 1) % self.reset_every == 0
        commands: tuple[ControlCommand, ...] = ()
        events: tuple[ScenePluginEvent, ...] = ()
        if self.command_every is not None and tick % self.command_every == 0:
            self._commands += 1
            offset = round(0.05 * ((self._commands % 7) - 3), 6)
            commands = (
                ControlCommand(
                    command_id=f"cmd-{self._commands}", name="set_joint_offset",
                    target=self.entities[0], args={"offset": offset},
                ),
            )
        if self.event_every is not None and tick % self.event_every == 0:
            self._events += 1
            events = (ScenePluginEvent("scene.marker", {"index": self._events, "tick": tick}),)
        return TickScript(reset=reset, commands=commands, events=events)

    def apply_control(self, command: ControlCommand) -> ControlOutcome:
        """``set_joint_offset`` shifts every joint target; ``set_joint_targets`` servos the
        first entity's joints (``synthetic_arm``); anything else is rejected."""
        if command.name == "set_joint_targets":
            return self._set_targets(command)
        offset = command.args.get("offset")
        if command.name != "set_joint_offset" or not isinstance(offset, int | float):
            return ControlOutcome(False, {"error": f"unsupported command {command.name!r}"})
        self._offset = float(offset)
        self._state = None
        return ControlOutcome(True, {"offset": self._offset})

    def _set_targets(self, command: ControlCommand) -> ControlOutcome:
        if command.target != self.entities[0]:
            return ControlOutcome(False, {"error": f"unknown target {command.target!r}"})
        try:
            targets = np.asarray(command.args.get("targets"), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            return ControlOutcome(False, {"error": f"targets: {exc}"})
        limit = synthetic_arm.JOINT_LIMIT_RAD
        if targets.shape != (self.dof,) or not np.all(np.abs(targets) <= limit):
            return ControlOutcome(False, {"error": f"targets: expected {self.dof} numbers within +-{limit:g} rad"})
        if self._targets is None:  # the arm takes over from where the sinusoids left it
            self._q = self._current()[0][0][0].copy() - self._offset
            self._qd = np.zeros(self.dof)
        self._targets = targets
        return ControlOutcome(True)  # the audit holds the targets; the result adds nothing

    def step(self, substeps: int) -> None:
        """Advance physics: the state (closed-form in the step count, or servoed toward the
        driver's targets) is computed here, whether or not anyone samples it, as a
        simulator's step would; then the task scores it."""
        self._steps += substeps
        if self._targets is not None:
            self._q, self._qd = synthetic_arm.track(self._q, self._targets, substeps / self.spec.physics_hz)
        self._state = self._compute_state()
        if self.task is not None:
            self.task.update(synthetic_arm.end_effector(self._state[0][0][0]))
            self._state = self._with_task(self._state)

    def _time(self) -> float:
        return self._steps / self.spec.physics_hz

    def numeric_layout(self) -> Mapping[str, tuple[int, int]]:
        """Channel -> (block, row): blocks are joint position, joint velocity, base pose
        (then one block per task channel)."""
        layout = {
            d.name: (index % len(_FAMILIES), index // len(_FAMILIES))
            for index, d in enumerate(self._declared)
        }
        extra = self.task.channels() if self.task is not None else ()
        return {**layout, **{d.name: (len(_FAMILIES) + k, 0) for k, d in enumerate(extra)}}

    def numeric_packing(self) -> Sequence[tuple[str, str, tuple[int, ...]]]:
        """Every declared channel in packed-buffer order (the declared order)."""
        return tuple((d.name, np.dtype(d.dtype).str, d.shape) for d in self.channels())

    def sample_numeric_packed(self) -> Array:
        """The current state's read-only packed buffer (``PackedSampling``), made by the last step."""
        return self._current()[1]

    def sample_numeric_blocks(self) -> tuple[Array, ...]:
        """The current state's read-only (entities x n) blocks: views of the packed state."""
        return self._current()[0]

    def _current(self) -> tuple[tuple[Array, ...], Array]:
        if self._state is None:
            self._state = self._with_task(self._compute_state())
        return self._state

    def _with_task(self, state: tuple[tuple[Array, ...], Array]) -> tuple[tuple[Array, ...], Array]:
        """The state with the task's values appended (packed) and as three 1-row blocks."""
        if self.task is None:
            return state
        values = self.task.values
        packed = readonly(np.concatenate((state[1], values)))
        tail = packed[-len(values):]
        return (*state[0], tail[:1].reshape(1, 1), tail[1:4].reshape(1, 3), tail[4:7].reshape(1, 3)), packed

    def _compute_state(self) -> tuple[tuple[Array, ...], Array]:
        """The state as one fresh read-only (entities x (2 dof + 7)) array, one row per
        entity holding its joint position, joint velocity and base pose back to back --
        the declared channel order, so its flat prefix is the packed tick -- plus the
        three family blocks as views of it.  One sin/cos for all entities."""
        t = self._time()
        dof = self.dof
        angle = self._omega * t + self._phase
        state = np.zeros((len(self.entities), 2 * dof + 7))
        state[:, :dof] = self._amp * np.sin(angle) + self._offset
        state[:, dof:2 * dof] = self._amp * self._omega * np.cos(angle)
        if self._targets is not None:  # the driven arm (first entity)
            state[0, :dof] = self._q + self._offset
            state[0, dof:2 * dof] = self._qd
        rows = np.arange(len(self.entities), dtype=np.float64)
        yaw = 0.5 * t + rows
        pose = 2 * dof
        state[:, pose] = np.cos(yaw)
        state[:, pose + 1] = np.sin(yaw)
        state[:, pose + 2] = 0.1 * rows
        state[:, pose + 5] = np.sin(yaw / 2)
        state[:, pose + 6] = np.cos(yaw / 2)
        readonly(state)
        blocks = (state[:, :dof], state[:, dof:pose], state[:, pose:])
        return blocks, state.reshape(-1)[: self._packed_size]

    def sample_numeric(self) -> Mapping[str, Array]:
        """Every declared channel: a read-only row view of this tick's blocks."""
        position, velocity, poses, *task = self.sample_numeric_blocks()
        flat = [*position, *velocity, *poses]  # row views, created in C
        samples = ReadOnlySamples(zip(self._names, map(flat.__getitem__, self._flat_index)))
        if self.task is not None:
            samples.update((d.name, block[0]) for d, block in zip(self.task.channels(), task, strict=True))
        return samples

    def sample_cameras(self) -> Sequence[CameraReading]:
        """The synthetic scene has no cameras."""
        return ()

    def describe(self) -> dict[str, object]:
        """The scene as recorded with the Run: entities, joint count, and the seed that
        drew every joint's amplitude, frequency and phase."""
        return {
            "model": "synthetic seeded sinusoids (no simulator)",
            "entities": list(self.entities),
            "dof": self.dof,
            "numeric_channels": self.n_channels,
            "seed": self.spec.seed,
        }

    def render_source(self) -> SyntheticRenderSource:
        """render.state (joint channels) and the scene's fluid emitter (``fluid:``)."""
        if self._render is None:
            emitter = emitter_from_scene(self.spec.scene, self.spec.seed)
            self._render = SyntheticRenderSource(self.sample_numeric, emitter)
        return self._render

    def close(self) -> None:
        """Nothing to release."""


def create_backend(spec: BackendSpec) -> SyntheticBackend:
    """Build the synthetic scene from the Run's scene and the backend options."""
    scene, knobs = spec.knobs("synthetic")
    robots = scene.get("robots")
    entities = [str(k) for k in robots] if isinstance(robots, Mapping) and robots else ["robot"]
    n_channels = int(knobs.get("numeric_channels", 3 * len(entities)))
    if n_channels < 0:
        raise ValueError(f"synthetic: numeric_channels must be >= 0 (got {n_channels})")
    needed = max(1, math.ceil(n_channels / len(_FAMILIES)))
    k = 1
    while len(entities) < needed:
        if f"robot_{k}" not in entities:
            entities.append(f"robot_{k}")
        k += 1
    dof = int(knobs.get("dof", 7))
    if dof < 1:
        raise ValueError(f"synthetic: dof must be >= 1 (got {dof})")
    task = parse_task(scene, ("reach",))
    return SyntheticBackend(
        spec=spec,
        entities=tuple(entities),
        n_channels=n_channels,
        dof=dof,
        command_every=_period_ticks(knobs.get("command_every_s", 0.5), spec.sensor_hz),
        event_every=_period_ticks(knobs.get("event_every_s", 1.0), spec.sensor_hz),
        reset_every=_period_ticks(knobs.get("reset_every_s"), spec.sensor_hz),
        task=None if task is None else TaskTracker.create(task, spec.sensor_hz),
    )
