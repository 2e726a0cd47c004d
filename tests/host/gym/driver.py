"""A user's program driving FastSimRun-v0 (run as a subprocess by test_faults).

    python driver.py RUN OUT MODE
      raise   step 5 times, then an exception in user code escapes: the interpreter exits
      loop    step forever, printing "stepping" once (the test sends SIGINT or SIGKILL)
"""

from __future__ import annotations

import signal
import sys

import gymnasium as gym

# A user's program started from a terminal has Python's own Ctrl-C handler.  A test runner
# started as a background job of a non-interactive shell (as .ci/run starts its 3.12 run)
# hands its children SIGINT ignored, and Python then installs no handler: restore it.
signal.signal(signal.SIGINT, signal.default_int_handler)

run, out, mode = sys.argv[1:4]
env = gym.make("fastsim_embedded.gym:FastSimRun-v0", run=run, output_dir=out, max_steps=10**9)
env.reset(seed=1)
action = env.action_space.sample()
for _ in range(5):
    env.step(action)
if mode == "raise":
    raise RuntimeError("the user's policy broke")
print("stepping", flush=True)
while True:
    env.step(action)
