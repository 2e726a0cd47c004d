"""Recording Gymnasium envs (issue 23): step overhead against the bare env, and peak RSS.

Figures, each measured in this run against a baseline of the same run:

  * ``cartpole``: ``RecordEpisodes(CartPole-v1)`` against the bare env, a seeded random
    policy, natural episodes (about 22 steps each, so every ~22nd step starts and ends a
    file).  ``*_steady`` counts only the steps inside an episode (no reset, not the
    step that ends it); ``*_all`` every step and reset (the episode open/commit that the
    writer pools cannot hide shows here).
  * ``render``: ``HalfCheetah-v5`` at 640x480 with ``render_mode="rgb_array"``: the bare
    loop is ``step()`` then ``render()``; the recorded loop the same through the wrapper
    (it renders once per step and records the frame as a calibrated JPEG camera).  Both
    render with ``offsamples=0`` and ``shadowsize=0`` (the defaults cost 200-270 ms per
    frame on this CPU renderer, the same for both).
  * peak RSS (``VmHWM`` of a fresh child process): one Pendulum episode of 1,000 and
    of 100,000 steps; a ``SyncVectorEnv`` CartPole with 1 and 16 sub-envs (numeric only,
    2,000 vector steps); HalfCheetah sub-envs with 1 and 4 recorded camera streams
    (160x120, 300 vector steps).  Each against the same child without recording.
  * peer: Minari 0.5.4's ``DataCollector`` (its own venv ``.venv-minari``, with jax),
    the same CartPole episodes and the Pendulum 1,000/100,000-step RSS, when installed.

Rounds are interleaved (bare, recorded, bare, ...) and medians quoted.  Targets: step
time <= 1.3x bare for CartPole and <= 1.1x for the rendering env; peak RSS independent of
episode length (ratio 100k/1k ~ 1) and growing at most linearly in recorded camera streams.

    python benchmarks/bench_gym.py [--quick] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MINARI_PYTHON = REPO / ".venv-minari" / "bin" / "python"


def _fast_render(env: Any) -> Any:
    model = env.unwrapped.model
    model.vis.quality.offsamples = 0
    model.vis.quality.shadowsize = 0
    return env


def _loop(env: Any, steps: int, *, render: bool, seed: int) -> tuple[float, float]:
    """(seconds per step over all steps and resets, seconds per step inside episodes)."""
    env.action_space.seed(seed)
    env.reset(seed=seed)
    if render:
        env.render()
    inside: list[float] = []
    start = time.perf_counter()
    for _ in range(steps):
        t0 = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if render:
            env.render()
        t1 = time.perf_counter()
        if terminated or truncated:
            env.reset()
            if render:
                env.render()
        else:
            inside.append(t1 - t0)
    total = (time.perf_counter() - start) / steps
    return total, statistics.median(inside) if inside else float("nan")


def _make(kind: str) -> Any:
    import gymnasium as gym

    if kind == "cartpole":
        return gym.make("CartPole-v1")
    return _fast_render(gym.make("HalfCheetah-v5", render_mode="rgb_array", width=640, height=480))


def step_overhead(kind: str, steps: int, rounds: int, workdir: Path) -> dict[str, float]:
    """Interleaved bare/recorded rounds of ``steps`` steps; medians and ratios."""
    from fastsim_record.gym import RecordEpisodes

    bare_all, bare_in, rec_all, rec_in = [], [], [], []
    render = kind == "render"
    for r in range(rounds):
        bare = _make(kind)
        a, i = _loop(bare, steps, render=render, seed=r)
        bare.close()
        bare_all.append(a)
        bare_in.append(i)
        recorded = RecordEpisodes(_make(kind), workdir / f"{kind}-{r}")
        a, i = _loop(recorded, steps, render=render, seed=r)
        t0 = time.perf_counter()
        recorded.close()
        rec_all.append(a + (time.perf_counter() - t0) / steps)  # the last commits count too
        rec_in.append(i)
    out = {
        f"{kind}_bare_us": statistics.median(bare_all) * 1e6,
        f"{kind}_recorded_us": statistics.median(rec_all) * 1e6,
        f"{kind}_ratio_all": statistics.median(rec_all) / statistics.median(bare_all),
        f"{kind}_ratio_steady": statistics.median(rec_in) / statistics.median(bare_in),
    }
    return out


# -- peak RSS: one fresh child per configuration ------------------------------------


def child(mode: str, steps: int, envs: int, record: str, directory: str) -> None:
    """Run one configuration and print this process's peak RSS in MB."""
    import gymnasium as gym

    os.environ.setdefault("MUJOCO_GL", "egl")
    if mode == "pendulum":
        env = gym.make("Pendulum-v1", max_episode_steps=steps)
        if record == "minari":
            from minari import DataCollector  # type: ignore[import-not-found]  # its own venv

            env = DataCollector(env)
        elif record:
            from fastsim_record.gym import RecordEpisodes

            env = RecordEpisodes(env, directory)
        env.reset(seed=0)
        for _ in range(steps):
            env.step(env.action_space.sample())
        env.close()
    else:
        kwargs: dict[str, Any] = {}
        env_id = "CartPole-v1"
        if mode == "camera":
            env_id = "HalfCheetah-v5"
            kwargs = {"render_mode": "rgb_array", "width": 160, "height": 120, "max_episode_steps": 100}
        vector = gym.make_vec(env_id, num_envs=envs, vectorization_mode="sync", **kwargs)
        if mode == "camera":
            for sub in vector.unwrapped.envs:  # type: ignore[attr-defined]
                _fast_render(sub)
        if record:
            from fastsim_record.gym import RecordVectorEpisodes

            vector = RecordVectorEpisodes(vector, directory)
        vector.reset(seed=0)
        for _ in range(steps):
            vector.step(vector.action_space.sample())
            if mode == "camera" and not record:
                vector.render()  # the bare child renders what the recorded one records
        vector.close()
    print(_peak_rss_mb())


def _peak_rss_mb() -> float:
    """This process's peak RSS (``VmHWM``: unlike ``ru_maxrss`` it starts afresh at exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _rss(python: Path | str, mode: str, steps: int, envs: int, record: str, workdir: Path) -> float:
    directory = tempfile.mkdtemp(dir=workdir)
    env = {**os.environ, "MUJOCO_GL": "egl", "MINARI_DATASETS_PATH": directory}
    out = subprocess.run(
        [str(python), __file__, "--child", mode, str(steps), str(envs), record, directory],
        capture_output=True, text=True, env=env, check=True, timeout=3600,
    )
    return float(out.stdout.strip().splitlines()[-1])


def rss_figures(workdir: Path, quick: bool) -> dict[str, float]:
    """Peak RSS (MB) of each configuration, recorded and bare."""
    long = 20_000 if quick else 100_000
    py = sys.executable
    out: dict[str, float] = {}
    for steps in (1_000, long):
        out[f"rss_pendulum_{steps}_mb"] = _rss(py, "pendulum", steps, 1, "1", workdir)
        out[f"rss_pendulum_{steps}_bare_mb"] = _rss(py, "pendulum", steps, 1, "", workdir)
    out["rss_length_ratio"] = out[f"rss_pendulum_{long}_mb"] / out["rss_pendulum_1000_mb"]
    for n in (1, 16):
        out[f"rss_vector_{n}_mb"] = _rss(py, "vector", 2_000, n, "1", workdir)
        out[f"rss_vector_{n}_bare_mb"] = _rss(py, "vector", 2_000, n, "", workdir)
    for n in (1, 4):
        out[f"rss_camera_{n}_mb"] = _rss(py, "camera", 300, n, "1", workdir)
        out[f"rss_camera_{n}_bare_mb"] = _rss(py, "camera", 300, n, "", workdir)
    added = [out[f"rss_camera_{n}_mb"] - out[f"rss_camera_{n}_bare_mb"] for n in (1, 4)]
    out["rss_camera_added_per_stream_mb"] = (added[1] - added[0]) / 3
    if MINARI_PYTHON.exists():
        for steps in (1_000, long):
            out[f"minari_rss_pendulum_{steps}_mb"] = _rss(MINARI_PYTHON, "pendulum", steps, 1, "minari", workdir)
        out["minari_rss_length_ratio"] = out[f"minari_rss_pendulum_{long}_mb"] / out["minari_rss_pendulum_1000_mb"]
    return out


def minari_steps(steps: int, rounds: int) -> dict[str, float]:
    """Minari's DataCollector on the same CartPole loop (its own venv), bare in the same child."""
    if not MINARI_PYTHON.exists():
        return {}
    code = (
        "import os, statistics, sys, tempfile\n"
        "os.environ['MINARI_DATASETS_PATH'] = tempfile.mkdtemp()\n"
        "sys.path.insert(0, sys.argv[1]); rounds, steps = int(sys.argv[2]), int(sys.argv[3])\n"
        "import gymnasium as gym; from minari import DataCollector; import bench_gym as b\n"
        "bare, rec = [], []\n"
        "for r in range(rounds):\n"
        "    bare.append(b._loop(gym.make('CartPole-v1'), steps, render=False, seed=r)[0])\n"
        "    env = DataCollector(gym.make('CartPole-v1'))\n"
        "    rec.append(b._loop(env, steps, render=False, seed=r)[0])\n"
        "    env.create_dataset(dataset_id=f'cartpole/random{r}-v0')\n"
        "print(statistics.median(bare) * 1e6, statistics.median(rec) * 1e6)\n"
    )
    out = subprocess.run(
        [str(MINARI_PYTHON), "-c", code, str(Path(__file__).parent), str(rounds), str(steps)],
        capture_output=True, text=True, check=True, timeout=3600,
    )
    bare, rec = (float(v) for v in out.stdout.split())
    return {"minari_cartpole_bare_us": bare, "minari_cartpole_recorded_us": rec, "minari_cartpole_ratio": rec / bare}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=5, metavar=("MODE", "STEPS", "ENVS", "RECORD", "DIR"))
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds (a smoke run)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    args = parser.parse_args(argv)
    if args.child:
        mode, steps, envs, record, directory = args.child
        child(mode, int(steps), int(envs), record, directory)
        return 0
    os.environ.setdefault("MUJOCO_GL", "egl")
    rounds = 2 if args.quick else args.rounds
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        figures.update(step_overhead("cartpole", 1_000 if args.quick else 5_000, rounds, work))
        figures.update(step_overhead("render", 20 if args.quick else 60, rounds, work))
        figures.update(minari_steps(1_000 if args.quick else 5_000, rounds))
        figures.update(rss_figures(work, args.quick))
    figures["target_cartpole_ratio"] = 1.3
    figures["target_render_ratio"] = 1.1
    for key, value in figures.items():
        print(f"{key:40s} {value:12.3f}")
    if args.json:
        print(json.dumps({k: round(v, 4) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
