"""The registered ``gymnasium`` backend: a Gymnasium MuJoCo env as a scene that Replay poses.

A recording made with ``fastsim_record.gym`` and ``render_state=True`` replays with
``fsr replay SOURCE.fsr RUN.yaml`` where RUN.yaml names this backend and the env:

    backend: gymnasium
    scenario:
      scene:
        gymnasium: {id: HalfCheetah-v5, width: 320, height: 240, kwargs: {}}

    | # | key     | default  | meaning                                                   |
    |---|---------|----------|-----------------------------------------------------------|
    | 1 | id      | required | the env id (``gym.make``), a MuJoCo env                    |
    | 2 | width,  | 480, 480 | the render size of the camera ``render``                   |
    |   | height  |          |                                                           |
    | 3 | kwargs  | ``{}``   | more ``gym.make`` keyword arguments (as recorded in spec)  |

Channels: ``robot.joint_position``/``robot.joint_velocity`` (the env's hinge and slide
joints) and the camera ``render`` (``cameras.render.*``), calibrated as in a recording
(``gymnasium_mujoco``).  Replay writes each recorded state into the model and renders it;
this backend never steps physics on its own (a live ``fsr record`` of it is refused at
its first tick: record Gymnasium envs with ``fastsim_record.gym``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.base import Array, BackendSpec, CameraReading, PosedScene
from fastsim_embedded.backends.gymnasium_env import JOINT_POSITION, JOINT_VELOCITY, camera_channels
from fastsim_embedded.gymnasium_host.mujoco import (
    calibration_of,
    joints_of,
    release_renderers,
    render_source_of,
)

__all__ = ["GymnasiumScene", "create_backend"]

CAMERA = "render"


class GymnasiumScene(PosedScene):
    """A Gymnasium MuJoCo env, reset with the Run's seed, posed by Replay (module table)."""

    #: the registry name
    name: ClassVar[str] = "gymnasium"

    no_control = "a Gymnasium scene takes no commands"

    def __init__(self, env: Any, spec: BackendSpec) -> None:
        self.env = env
        self.spec = spec
        self.entity = "robot"
        env.reset(seed=spec.seed)
        joints = joints_of(env)
        calibration = calibration_of(env, CAMERA)
        source = render_source_of(env)
        if joints is None or calibration is None or source is None:
            env.close()
            raise ValueError(f"gymnasium: {env.spec.id if env.spec else env!r} is not a MuJoCo env with joints")
        self.joints, self.calibration, self.source = joints, calibration, source
        frame = env.render()
        h, w = int(frame.shape[0]), int(frame.shape[1])
        n = len(joints.names)
        rgb, k, t, q = self.camera = camera_channels(CAMERA)
        names = {"element_names": list(joints.names), "joint_names": list(joints.names)}
        self._declared = (
            ChannelDescriptor(JOINT_POSITION, "numeric", "float64", (n,), ("rad",) * n, "robot", attributes=names),
            ChannelDescriptor(JOINT_VELOCITY, "numeric", "float64", (n,), ("rad/s",) * n, "robot", attributes=names),
            ChannelDescriptor(rgb, "rgb", "uint8", (h, w, 3), entity=CAMERA),
            ChannelDescriptor(k, "intrinsics", "float64", (3, 3), ("px",), CAMERA),
            ChannelDescriptor(t, "translation", "float64", (3,), ("m", "m", "m"), CAMERA),
            ChannelDescriptor(q, "quaternion_xyzw", "float64", (4,), ("1",) * 4, CAMERA),
        )

    def channels(self) -> Sequence[ChannelDescriptor]:
        """The joints and the camera ``render``."""
        return self._declared

    def step(self, substeps: int) -> None:
        """Refused: this scene is posed by Replay, never stepped (module header)."""
        raise RuntimeError("the gymnasium backend only poses recorded states (fsr replay); "
                           "record Gymnasium envs with fastsim_record.gym")

    def sample_numeric(self) -> Mapping[str, Array]:
        """The posed joints."""
        position, velocity = self.joints.sample()
        return {JOINT_POSITION: position, JOINT_VELOCITY: velocity}

    def sample_cameras(self) -> Sequence[CameraReading]:
        """The posed scene rendered by the env, with its calibration."""
        # Gymnasium's off-screen viewer makes its GL context current only when it is
        # created; another context freed or made current on this thread since (an env
        # collected by the GC, a second renderer) would leave it drawing black frames.
        viewer = getattr(getattr(self.env.unwrapped, "mujoco_renderer", None), "viewer", None)
        if viewer is not None:
            viewer.make_context_current()
        frame = np.ascontiguousarray(self.env.render(), dtype=np.uint8)
        return self.calibration.readings(frame, self.camera)

    def render_source(self) -> Any:
        """``render.state`` access to the env's model and data (Replay applies states through it)."""
        return self.source

    def describe(self) -> dict[str, object]:
        """The env id and render size."""
        return {"gymnasium": dict(self.spec.knobs("gymnasium")[1]), "seed": self.spec.seed}

    def close(self) -> None:
        """Close the env (and its renderer: its GL objects first, under its own context)."""
        release_renderers(self.env)
        self.env.close()


def create_backend(spec: BackendSpec) -> GymnasiumScene:
    """Build the env the Run's ``scenario.scene.gymnasium`` names (``ValueError``: one line)."""
    import gymnasium as gym  # only when a Run chooses this backend

    _, knobs = spec.knobs("gymnasium")
    unknown = sorted(set(knobs) - {"id", "width", "height", "kwargs"})
    if unknown:
        raise ValueError(f"gymnasium.{unknown[0]}: unknown key (keys: id, width, height, kwargs)")
    env_id, kwargs = knobs.get("id"), knobs.get("kwargs") or {}
    if not isinstance(env_id, str) or not env_id:
        raise ValueError("gymnasium.id: the env id to make (e.g. HalfCheetah-v5) is required")
    if not isinstance(kwargs, Mapping):
        raise ValueError("gymnasium.kwargs: must be a mapping of gym.make keyword arguments")
    size: dict[str, Any] = {}
    for key in ("width", "height"):
        value = knobs.get(key, 480)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"gymnasium.{key}: must be a positive integer (got {value!r})")
        size[key] = value
    try:
        env = gym.make(env_id, render_mode="rgb_array", **size, **dict(kwargs))
    except gym.error.Error as exc:
        raise ValueError(f"gymnasium.id: {exc}".splitlines()[0]) from None
    return GymnasiumScene(env, spec)
