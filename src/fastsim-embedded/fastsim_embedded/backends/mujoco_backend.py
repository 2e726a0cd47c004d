"""The ``mujoco`` backend: the DROID-like scene behind the embedded host's Backend protocol.

Channels (``<robot>`` is the first ``scenario.scene.robots`` key, default ``robot``):

    | # | channel                                         | kind            | dtype, shape     | units      |
    |---|-------------------------------------------------|-----------------|------------------|------------|
    | 1 | ``<robot>.joint_position``                      | numeric         | float64 (13,)    | rad        |
    | 2 | ``<robot>.joint_velocity``                      | numeric         | float64 (13,)    | rad/s      |
    | 3 | ``sensors.<cam>.camera.rgb``                    | rgb             | uint8 (H, W, 3)  | -          |
    | 4 | ``sensors.<cam>.camera.intrinsics``             | intrinsics      | float64 (3, 3)   | px         |
    | 5 | ``sensors.<cam>.camera.extrinsics.translation`` | translation     | float64 (3,)     | m          |
    | 6 | ``sensors.<cam>.camera.extrinsics.quaternion_xyzw`` | quaternion_xyzw | float64 (4,) | 1          |

for ``<cam>`` in ``exterior_left``, ``exterior_right``, ``wrist``.  Every camera sample
carries the digest of the camera's pinhole calibration profile
(``fastsim_contract.calibration.pinhole_profile``, plus ``renderer``: MuJoCo's version,
GL backend, MSAA samples and shadow map size); intrinsics samples also carry the
profile.  Extrinsics are sampled from the simulated pose at every tick.

Options (``BackendSpec.options``, or ``scenario.scene.mujoco``):

    | # | key            | default  | meaning                                                  |
    |---|----------------|----------|----------------------------------------------------------|
    | 1 | width, height  | 320, 240 | render size of every camera                              |
    | 2 | cameras        | all 3    | which cameras to declare and render                      |
    | 3 | control_hz     | 15       | rate of the scripted ``set_joint_targets`` commands      |
    | 4 | reset_every_s  | 4.0      | a reset (new Runtime generation) period; null: never     |
    | 5 | randomize      | defaults | seeded ranges (``mujoco_randomize``); false: none        |
    | 6 | extra_cameras  | none     | cameras added to the model, declared after ``cameras``   |
    |   |                |          | (``fastsim_embedded.render.camera_mounts``)                     |

``scenario.scene.task`` declares ``pick`` or ``reach`` (``fastsim_embedded.backends.tasks``):
the scene then adds the ``task.*`` numeric channels after the joint state (end effector:
the gripper's ``grasp_site``; a reach target without ``target`` is drawn from the seed).
``controls()`` declares what a driver may command: ``set_joint_targets`` with the position
targets of ``joint1..joint7`` and of the gripper's driven ``finger_joint``: named and in the
units (rad) of ``<robot>.joint_position``, within the joints' ranges from the model
(``MujocoDroidScene.command_range``); the scene maps them to the actuators' ctrl.

``scenario.scene.fluid`` adds a particle emitter (``fastsim_embedded.render.fluid``): the scene
then exposes ``fluid.audit`` and its particles enter ``render.state``.

Each generation replays the scripted pick from the initial state: a command
``set_joint_targets`` (``args.targets``: the same 8 joint targets in rad) every
``1 / control_hz`` s, applied only through ``apply_control`` after Core audits it, and a
``pick.phase`` plugin event when a phase starts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

import attrs
import numpy as np

from fastsim_contract.calibration import calibration_digest, pinhole_profile
from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.base import (
    Array,
    BackendSpec,
    ControlCommand,
    ControlOutcome,
    ControlSpec,
    ScenePluginEvent,
    TickScript,
)
from fastsim_embedded.backends.cameras import CameraSample, RenderedCameras, camera_channels
from fastsim_embedded.backends.mujoco_gl import renderer_facts
from fastsim_embedded.backends.mujoco_randomize import parse_randomization
from fastsim_embedded.backends.mujoco_scene import (
    CAMERA_NAMES,
    COMMAND_NAMES,
    COMMAND_UNITS,
    JOINT_NAMES,
    JOINT_UNITS,
    MujocoDroidScene,
)
from fastsim_embedded.backends.tasks import TaskTracker, parse_task
from fastsim_embedded.render.camera_mounts import parse_mounts
from fastsim_embedded.render.fluid import emitter_from_scene
from fastsim_embedded.render.mujoco import MujocoRenderSource
from fastsim_recording_format.encoding import readonly

__all__ = ["COMMAND_NAME", "MujocoBackend", "create_backend"]

COMMAND_NAME: Final = "set_joint_targets"
_MAX_PHYSICS_STEP_S: Final = 0.002


@attrs.define(eq=False)
class MujocoBackend(RenderedCameras):
    """The DROID-like MuJoCo scene, stepped by the embedded host."""

    #: the registry name
    name: ClassVar[str] = "mujoco"

    spec: BackendSpec
    scene: MujocoDroidScene
    entity: str
    cameras: tuple[str, ...]
    control_every: int
    reset_every: int | None
    _mj_steps_per_substep: int = attrs.field(init=False, default=1)
    _declared: tuple[ChannelDescriptor, ...] = attrs.field(init=False, default=())
    _profiles: dict[str, tuple[Mapping[str, object], str]] = attrs.field(init=False, factory=dict)
    _generation: int = attrs.field(init=False, default=0)
    _generation_tick: int = attrs.field(init=False, default=0)
    _commands: int = attrs.field(init=False, default=0)
    _render_source: MujocoRenderSource | None = attrs.field(init=False, default=None)
    _actuators: list[str] = attrs.field(init=False, factory=list)  # the MJCF's actuator names
    task: TaskTracker | None = None

    def __attrs_post_init__(self) -> None:
        substep_s = 1.0 / self.spec.physics_hz
        self._mj_steps_per_substep = max(1, math.ceil(substep_s / _MAX_PHYSICS_STEP_S - 1e-9))
        self.scene.model.opt.timestep = substep_s / self._mj_steps_per_substep
        self._actuators = [self.scene.model.actuator(i).name for i in range(self.scene.model.nu)]
        w, h = self.scene.width, self.scene.height
        declared = [
            ChannelDescriptor(
                name=f"{self.entity}.joint_position", kind="numeric", dtype="float64",
                shape=(len(JOINT_NAMES),), units=JOINT_UNITS, entity=self.entity,
                attributes={"joint_names": list(JOINT_NAMES), "element_names": list(JOINT_NAMES)},
            ),
            ChannelDescriptor(
                name=f"{self.entity}.joint_velocity", kind="numeric", dtype="float64",
                shape=(len(JOINT_NAMES),), units=("rad/s",) * len(JOINT_NAMES),
                entity=self.entity,
                attributes={"joint_names": list(JOINT_NAMES), "element_names": list(JOINT_NAMES)},
            ),
        ]
        if self.task is not None:
            declared += self.task.channels()
        for cam in self.cameras:
            fovy = float(self.scene.model.camera(cam).fovy[0])
            profile = {**pinhole_profile(cam, w, h, fovy), "renderer": renderer_facts(self.scene.model)}
            self._profiles[cam] = (profile, calibration_digest(profile))
            declared += camera_channels(cam, w, h)
        self._declared = tuple(declared)
        if self.task is not None:
            self.reset(0)  # the task's target is known before the first tick

    def channels(self) -> Sequence[ChannelDescriptor]:
        """The joint-state channels and the four channels of every camera."""
        return self._declared

    def controls(self) -> tuple[ControlSpec, ...]:
        """``set_joint_targets``: the targets of joint1..joint7 and finger_joint (rad), within
        the joints' ranges from the model."""
        low, high = self.scene.command_range()
        return (ControlSpec(
            command=COMMAND_NAME, target=self.entity, arg="targets", element_names=tuple(COMMAND_NAMES),
            units=tuple(COMMAND_UNITS), low=tuple(float(v) for v in low), high=tuple(float(v) for v in high),
        ),)

    def reset(self, generation: int) -> None:
        """Restore the initial state; the scripted pick restarts with the generation."""
        self.scene.reset()
        self._generation = generation
        if self.task is not None:
            spec = self.task.spec
            if spec.kind == "pick":
                self.task.reset(self.scene.object_position(spec.target_object))
            else:
                rng = np.random.default_rng([self.spec.seed, 24])
                drawn = np.array([0.45, 0.0, 0.3]) + rng.uniform([-0.1, -0.15, -0.05], [0.1, 0.15, 0.1])
                self.task.reset(np.array(spec.target) if spec.target is not None else drawn)

    def script(self, tick: int) -> TickScript:
        """Periodic resets, the pick's commands at ``control_hz`` and phase events."""
        reset = self.reset_every is not None and tick > 1 and (tick - 1) % self.reset_every == 0
        if reset or tick == 1:
            self._generation_tick = tick
        local = tick - self._generation_tick
        commands: tuple[ControlCommand, ...] = ()
        events: tuple[ScenePluginEvent, ...] = ()
        if local % self.control_every == 0:
            k = local // self.control_every
            control_dt = self.control_every / self.spec.sensor_hz
            targets = self.scene.scripted_command(k, control_dt)
            self._commands += 1
            commands = (
                ControlCommand(
                    command_id=f"pick-{self._commands}", name=COMMAND_NAME, target=self.entity,
                    args={"targets": [float(v) for v in targets]},
                ),
            )
        phase = self.scene.phase_starting_at(local, 1.0 / self.spec.sensor_hz)
        if phase is not None:
            events = (ScenePluginEvent("pick.phase", {"phase": phase, "tick": tick}),)
        return TickScript(reset=reset, commands=commands, events=events)

    def apply_control(self, command: ControlCommand) -> ControlOutcome:
        """``set_joint_targets`` with 8 finite targets sets the actuators; else rejected."""
        targets = command.args.get("targets")
        if command.name != COMMAND_NAME:
            return ControlOutcome(False, {"error": f"unsupported command {command.name!r}"})
        if command.target != self.entity:
            return ControlOutcome(False, {"error": f"unknown target {command.target!r}"})
        try:
            values = np.asarray(targets, dtype=np.float64)
            self.scene.apply_command(values)
        except (TypeError, ValueError) as exc:
            return ControlOutcome(False, {"error": str(exc)})
        ctrl = [float(v) for v in self.scene.data.ctrl]
        return ControlOutcome(True, {"actuators": list(self._actuators), "ctrl": ctrl})

    def step(self, substeps: int) -> None:
        """Advance physics by ``substeps`` host substeps of ``1 / physics_hz`` each."""
        self.scene.step(substeps * self._mj_steps_per_substep)
        if self.task is not None:
            ee = np.array(self.scene.data.site("grasp_site").xpos, dtype=np.float64)
            obj = self.scene.object_position(self.task.spec.target_object) if self.task.spec.kind == "pick" else None
            self.task.update(ee, obj, self.scene.gripper_closure())

    def sample_numeric(self) -> Mapping[str, Array]:
        """Joint position and velocity now (then the task's channels), as new read-only
        float64 arrays."""
        samples = {
            f"{self.entity}.joint_position": self.scene.joint_position(),
            f"{self.entity}.joint_velocity": self.scene.joint_velocity(),
        }
        if self.task is not None:
            values = self.task.values
            for d, part in zip(self.task.channels(), (values[:1], values[1:4], values[4:7]), strict=True):
                samples[d.name] = part
        return samples

    def numeric_packing(self) -> Sequence[tuple[str, str, tuple[int, ...]]]:
        """``PackedSampling``: joint position then joint velocity, float64, in one buffer."""
        return tuple((d.name, np.dtype(d.dtype).str, d.shape) for d in self._declared if d.kind == "numeric")

    def sample_numeric_packed(self) -> Array:
        """``PackedSampling``: this tick's joint state (then the task's values) as one new
        read-only buffer."""
        state = self.scene.joint_state()
        if self.task is None:
            return state
        return readonly(np.concatenate((state, self.task.values)))

    def camera_sample(self, camera: str) -> CameraSample:
        """RGB, K and the simulated pose of ``camera`` now, with its calibration."""
        profile, digest = self._profiles[camera]
        pose = self.scene.extrinsics(camera)
        return (
            self.scene.render(camera), self.scene.intrinsics(camera), pose.translation, pose.quaternion_xyzw,
            profile, digest,
        )

    def describe(self) -> dict[str, object]:
        """The scene as recorded with the Run: model, cameras, render size, and what the
        seed varied (``mujoco_randomize``)."""
        return {
            "model": "droid_like.xml (a 7-DoF arm with a parallel gripper picking a cube)",
            "entity": self.entity,
            "cameras": list(self.cameras),
            "render_size": [self.scene.width, self.scene.height],
            "seed": self.spec.seed,
            "randomized": self.scene.randomized or None,
            "mjcf": {"name": "droid_like.xml", "text": self.scene.mjcf},  # as authored; randomized: above
        }

    def render_source(self) -> MujocoRenderSource:
        """render.state and scene.geometry access to the same model and data."""
        if self._render_source is None:
            self._render_source = MujocoRenderSource(
                self.scene.model, self.scene.data, articulations={self.entity: JOINT_NAMES},
                emitter=emitter_from_scene(self.spec.scene, self.spec.seed),  # fluid.audit
            )
            if self._render_source.emitter is not None:  # draw the particles in every camera
                self.scene.decorators.append(self._render_source.draw_particles)
        return self._render_source

    def close(self) -> None:
        """Release the renderers."""
        self.scene.close()


def _positive(knobs: Mapping[str, Any], key: str, default: float) -> float:
    value = knobs.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"mujoco: {key} must be a positive number (got {value!r})")
    return float(value)


def create_backend(spec: BackendSpec) -> MujocoBackend:
    """Build the DROID-like scene from the Run's scene and the backend options."""
    scene_cfg, knobs = spec.knobs("mujoco")
    robots = scene_cfg.get("robots")
    entity = next(iter(robots)) if isinstance(robots, Mapping) and robots else "robot"
    width = int(_positive(knobs, "width", 320))
    height = int(_positive(knobs, "height", 240))
    cameras = knobs.get("cameras", list(CAMERA_NAMES))
    if not isinstance(cameras, Sequence) or isinstance(cameras, str) or any(
        c not in CAMERA_NAMES for c in cameras
    ):
        raise ValueError(f"mujoco: cameras must be a list drawn from {list(CAMERA_NAMES)}")
    mounts = parse_mounts(knobs.get("extra_cameras"), "mujoco.extra_cameras")  # declared after ``cameras``
    control_hz = _positive(knobs, "control_hz", 15.0)
    reset_s = knobs.get("reset_every_s", 4.0)
    reset_every = None if reset_s is None else max(
        1, round(_positive(knobs, "reset_every_s", 4.0) * spec.sensor_hz)
    )
    task = parse_task(scene_cfg, ("pick", "reach"))
    return MujocoBackend(
        spec=spec,
        scene=MujocoDroidScene(
            width=width, height=height, seed=spec.seed,
            randomization=parse_randomization(knobs.get("randomize")), extra_cameras=mounts,
        ),
        entity=str(entity),
        cameras=tuple(str(c) for c in cameras) + tuple(m.name for m in mounts),
        control_every=max(1, round(spec.sensor_hz / control_hz)),
        reset_every=reset_every,
        task=None if task is None else TaskTracker.create(task, spec.sensor_hz),
    )
