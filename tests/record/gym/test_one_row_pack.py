"""The one-row ``RowLayout.pack`` (a rendering env hands one row a chunk): byte for byte the
structured path's.  Compared, never timed."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from tests.record.gym.envs import DictEnv

from fastsim_embedded.backends.gymnasium_env import StepRow
from fastsim_embedded.gymnasium_host.capture import Chunk, RowLayout
from fastsim_embedded.gymnasium_host.mujoco import joints_of
from fastsim_embedded.gymnasium_host.spaces import space_leaves


def test_one_row_chunks_pack_byte_for_byte_as_the_structured_path() -> None:
    """A MuJoCo env's one-row chunks (observation, joints, action, reward, flags) take the byte path, byte for byte the structured one's; a Dict env has none."""
    env = gym.make("HalfCheetah-v5")
    joints = joints_of(env)
    assert joints is not None
    row = StepRow(space_leaves(env.observation_space, "observation"), space_leaves(env.action_space, "action"), (),
                  joints=len(joints.names))
    layout = RowLayout(row)
    plan = layout._one
    assert plan is not None
    env.action_space.seed(1)
    observation, _ = env.reset(seed=1)
    for t in range(40):
        chunk = Chunk(t)
        chunk.obs.append(layout.observation(observation))
        chunk.joints.append(joints.sample())
        action = env.action_space.sample()
        observation, reward, _, _, _ = env.step(action)
        chunk.steps.append((layout.action(action), float("nan") if t % 9 == 0 else float(reward), t % 5 == 0,
                            np.bool_(t % 3 == 0)))
        fast = layout.pack(chunk)
        layout._one = None
        try:
            slow = layout.pack(chunk)
        finally:
            layout._one = plan
        assert fast.shape == slow.shape == (1, row.packer.nbytes)
        assert fast.tobytes() == slow.tobytes()
        assert not fast.flags.writeable
    env.close()
    dict_env = DictEnv()
    assert RowLayout(StepRow(space_leaves(dict_env.observation_space, "observation"),
                             space_leaves(dict_env.action_space, "action"), ()))._one is None
