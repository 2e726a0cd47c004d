"""``FastSimRun-v0``: a FastSim Run as a Gymnasium environment (a driver of ``session.Session``).

Importing this package registers ``FastSimRun-v0`` (``gym.make("fastsim_embedded.gym:FastSimRun-v0", ...)``).

    | module | what it owns                                                              |
    |--------|---------------------------------------------------------------------------|
    | env    | ``FastSimRunEnv``: reset/step/close over one ``Session`` per episode       |
    | spaces | observation and action spaces from the Run's channels and controls        |
    | slots  | the ``-env<k>`` sub-env slot in file names (an ``flock`` per slot)         |
    | document | the ``run`` argument (file, ``RunDocument``, ``CompiledRun``) as a document |
    | render | ``render()`` with ``render_mode="rgb_array"``: the latest camera frame     |
"""

from fastsim_embedded.gym.env import ENV_ID, FastSimRunEnv

__all__ = ["ENV_ID", "FastSimRunEnv"]
