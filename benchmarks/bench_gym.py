"""Recording Gymnasium envs (issue 23): step overhead against the bare env, and peak RSS.

Figures, each measured in this run against a baseline of the same run:

  * ``cartpole``: ``RecordEpisodes(CartPole-v1)`` against the bare env, a seeded random
    policy, natural episodes (about 22 steps each, so every ~22nd step starts and ends a
    file).  ``*_steady`` counts only the steps inside an episode (no reset, not the
    step that ends it); ``*_all`` every step and reset (the episode open/commit that the
    writer pools cannot hide shows here).  ``*_steady_rounds`` is the median of each round's
    own recorded/bare ratio inside episodes, with a distribution-free ~95% confidence
    interval (``_ci_low``, ``_ci_high``): on this shared machine a round's ratio moves by
    several percent, and the interval says whether a median near the target is one.
  * ``cartpole_long``: a CartPole episode that never ends (its file is open while it runs): the
    env thread's CPU per step (median of 100-step batches) against the bare env.
  * ``render``: ``HalfCheetah-v5`` at 640x480 with ``render_mode="rgb_array"``: the bare
    loop is ``step()`` then ``render()``; the recorded loop the same through the wrapper
    (it renders once per step and records the frame as a calibrated JPEG camera).  Both
    render with ``offsamples=0`` and ``shadowsize=0`` (the defaults cost 200-270 ms per
    frame on this CPU renderer, the same for both).
  * peak RSS (``VmHWM`` of a fresh child process): one Pendulum episode of 1,000 and
    of 100,000 steps; a ``SyncVectorEnv`` CartPole with 1 and 16 sub-envs (numeric only,
    2,000 vector steps, with the peak number of live threads: episode files open at once are
    bounded by the writer slots, not by the number of sub-envs; ``--vector-only``: 1/16/64);
    HalfCheetah sub-envs with 1 and 4 recorded camera streams (160x120, 150 vector steps).  Each against the same child without recording.
  * peer: Minari 0.5.4's ``DataCollector`` (its own venv ``.venv-minari``, with jax),
    the same CartPole episodes and the Pendulum 1,000/100,000-step RSS, when installed.
  * ``fastsimrun_*`` (issue 24): ``FastSimRun-v0`` step time with Record over the same Run
    with ``record=False`` (``bench_gym_run.measure``), the synthetic reach scene and the
    DROID-like pick scene without cameras (target: <= 1.1x), and with its wrist camera.
  * host counters of the recorded CartPole/render runs: flow-control waits per episode (the
    env thread waited for a commit slot), the peak number of episode files open at once and
    the episodes that spilled their kept rows to disk while they waited for a slot (``spills``); and the CPU the
    other threads spent per episode file (``*_background_cpu_ms_per_episode``: opening,
    publishing, Record's worker, validation and commit; process CPU minus the env thread's),
    and the committed files per wall second (``*_files_per_s``, the last commits included).
    Any tree's sources can be measured with this script (``PYTHONPATH``): counters it lacks
    are NaN.

Rounds are interleaved (bare, recorded, bare, ...) and medians quoted; every figure is a ratio
against the bare env measured in the same run.  Targets: step time <= 1.3x bare for CartPole
and <= 1.1x for the rendering env; peak RSS independent of episode length (ratio 100k/1k ~ 1)
and growing at most linearly in recorded camera streams; Record <= 10% of FastSimRun-v0's step
time without cameras.  In the human table ``*_target_met`` is 1.0 or 0.0; ``--json``'s last line
is ``_report``'s, each of those figures with its target beside it and ``passed`` when all that ran
met theirs (NaN counters are ``null``).  A default run takes about 3 minutes.

    python benchmarks/bench_gym.py [--quick] [--rounds 3] [--json] [--vector-only] [--no-fastsim-run] [--only S,...]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _report import Figures, add_json_flag, median_ci

REPO = Path(__file__).resolve().parents[1]
MINARI_PYTHON = REPO / ".venv-minari" / "bin" / "python"


def _fast_render(env: Any) -> Any:
    model = env.unwrapped.model
    model.vis.quality.offsamples = 0
    model.vis.quality.shadowsize = 0
    return env


def _loop(env: Any, steps: int, *, render: bool, seed: int) -> tuple[float, float, float]:
    """(seconds per step over all steps and resets, seconds per step inside episodes, the env
    thread's CPU seconds per step over all steps and resets)."""
    env.action_space.seed(seed)
    env.reset(seed=seed)
    if render:
        env.render()
    inside: list[float] = []
    cpu = time.thread_time()
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
    return total, statistics.median(inside) if inside else float("nan"), (time.thread_time() - cpu) / steps


def _make(kind: str) -> Any:
    import gymnasium as gym

    if kind == "cartpole":
        return gym.make("CartPole-v1")
    return _fast_render(gym.make("HalfCheetah-v5", render_mode="rgb_array", width=640, height=480))


def step_overhead(kind: str, steps: int, rounds: int, workdir: Path) -> dict[str, float]:
    """Interleaved bare/recorded rounds of ``steps`` steps; medians and ratios."""
    from fastsim_record.gym import RecordEpisodes

    bare_all, bare_in, bare_cpu, rec_all, rec_in, rec_cpu = [], [], [], [], [], []
    waits, peak, spills, background, files_per_s = [], [], [], [], []
    render = kind == "render"
    for r in range(rounds):
        bare = _make(kind)
        a, i, c = _loop(bare, steps, render=render, seed=r)
        bare.close()
        bare_all.append(a)
        bare_in.append(i)
        bare_cpu.append(c)
        recorded = RecordEpisodes(_make(kind), workdir / f"{kind}-{r}")
        process = time.process_time()
        a, i, c = _loop(recorded, steps, render=render, seed=r)
        recording = recorded._recording  # the host's counters
        t0 = time.perf_counter()
        recorded.close()
        # CPU of every other thread (opening, publishing, Record's workers, commits) per episode file
        background.append((time.process_time() - process - c * steps) / max(1, len(recorded.files)))
        rec_all.append(a + (time.perf_counter() - t0) / steps)  # the last commits count too
        files_per_s.append(len(recorded.files) / (rec_all[-1] * steps))  # committed files per wall second
        rec_in.append(i)
        rec_cpu.append(c)
        pool = getattr(recording, "pool", None)  # absent before the writer pool (a "before" run)
        waits.append(getattr(recording, "flow_waits", float("nan")) / max(1, len(recorded.files)))
        peak.append(pool.open_peak if pool is not None else float("nan"))
        spills.append(getattr(pool, "spills", float("nan")) if pool is not None else float("nan"))
    med = statistics.median
    rounds_ci = median_ci([r / b for r, b in zip(rec_in, bare_in, strict=True)])  # each round's recorded/bare
    return {
        f"{kind}_bare_us": med(bare_all) * 1e6,
        f"{kind}_recorded_us": med(rec_all) * 1e6,
        f"{kind}_ratio_all": med(rec_all) / med(bare_all),
        f"{kind}_ratio_steady": med(rec_in) / med(bare_in),
        # the same inside episodes, as the median of the rounds' own ratios with its ~95% CI
        f"{kind}_ratio_steady_rounds": rounds_ci[0],
        f"{kind}_ratio_steady_rounds_ci_low": rounds_ci[1],
        f"{kind}_ratio_steady_rounds_ci_high": rounds_ci[2],
        f"{kind}_env_thread_cpu_ratio_all": med(rec_cpu) / med(bare_cpu),
        f"{kind}_flow_waits_per_episode": med(waits),
        f"{kind}_open_files_peak": float(max(peak)),
        f"{kind}_spills": float(max(spills)),
        f"{kind}_background_cpu_ms_per_episode": med(background) * 1e3,
        f"{kind}_files_per_s": med(files_per_s),
    }


def _endless_cartpole() -> Any:
    import gymnasium as gym

    env = gym.make("CartPole-v1", max_episode_steps=10**9)
    env.unwrapped.theta_threshold_radians = env.unwrapped.x_threshold = 1e9  # type: ignore[attr-defined]
    return env


def _batches(env: Any, batches: int) -> float:
    """The env thread's CPU per step: the median over batches of 100 steps (a seeded policy)."""
    env.action_space.seed(0)
    env.reset(seed=0)
    actions = [env.action_space.sample() for _ in range(100)]
    per_step = []
    for _ in range(batches):
        t0 = time.thread_time_ns()
        for action in actions:
            env.step(action)
        per_step.append((time.thread_time_ns() - t0) / 100)
    return statistics.median(per_step)


def long_episode(batches: int, rounds: int, workdir: Path) -> dict[str, float]:
    """``cartpole_long`` (module docstring): the capture path's steady cost, interleaved rounds."""
    from fastsim_record.gym import RecordEpisodes

    bare, recorded = [], []
    for r in range(rounds):
        bare.append(_batches(_endless_cartpole(), batches))
        env = RecordEpisodes(_endless_cartpole(), workdir / f"endless-{r}")
        recorded.append(_batches(env, batches))
        env.close()
    med = statistics.median
    return {"cartpole_long_bare_cpu_us": med(bare) / 1e3, "cartpole_long_recorded_cpu_us": med(recorded) / 1e3,
            "cartpole_long_thread_cpu_ratio": med(recorded) / med(bare)}


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
        threads = threading.active_count()
        for _ in range(steps):
            vector.step(vector.action_space.sample())
            if mode == "camera" and not record:
                vector.render()  # the bare child renders what the recorded one records
            threads = max(threads, threading.active_count())
        vector.close()
        print("threads", threads)
    print(_peak_rss_mb())


def _peak_rss_mb() -> float:
    """This process's peak RSS (``VmHWM``: unlike ``ru_maxrss`` it starts afresh at exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _rss(python: Path | str, mode: str, steps: int, envs: int, record: str, workdir: Path) -> float:
    return _child(python, mode, steps, envs, record, workdir)[0]


def _child(
    python: Path | str, mode: str, steps: int, envs: int, record: str, workdir: Path,
) -> tuple[float, int]:
    """A fresh child's (peak RSS in MB, peak live threads; 0 when not counted)."""
    directory = tempfile.mkdtemp(dir=workdir)
    env = {**os.environ, "MUJOCO_GL": "egl", "MINARI_DATASETS_PATH": directory}
    out = subprocess.run(
        [str(python), __file__, "--child", mode, str(steps), str(envs), record, directory],
        capture_output=True, text=True, env=env, check=True, timeout=3600,
    )
    lines = out.stdout.strip().splitlines()
    threads = next((int(line.split()[1]) for line in lines if line.startswith("threads ")), 0)
    return float(lines[-1]), threads


def vector_figures(workdir: Path, counts: tuple[int, ...] = (1, 16, 64)) -> dict[str, float]:
    """Peak RSS and live threads of a recorded CartPole SyncVectorEnv with 1, 16 (and 64) sub-envs."""
    py = sys.executable
    out: dict[str, float] = {}
    for n in counts:
        out[f"rss_vector_{n}_mb"], threads = _child(py, "vector", 2_000, n, "1", workdir)
        out[f"threads_vector_{n}"] = threads
        out[f"rss_vector_{n}_bare_mb"], bare = _child(py, "vector", 2_000, n, "", workdir)
        out[f"threads_vector_{n}_bare"] = bare
    top = counts[-1]
    added = [out[f"rss_vector_{n}_mb"] - out[f"rss_vector_{n}_bare_mb"] for n in (1, top)]
    out["rss_vector_added_per_sub_env_mb"] = (added[1] - added[0]) / (top - 1)
    out[f"rss_vector_{top}_over_1_ratio"] = out[f"rss_vector_{top}_mb"] / out["rss_vector_1_mb"]
    out[f"rss_vector_{top}_over_1_bare_ratio"] = out[f"rss_vector_{top}_bare_mb"] / out["rss_vector_1_bare_mb"]
    out["threads_vector_per_sub_env"] = (out[f"threads_vector_{top}"] - out["threads_vector_1"]) / (top - 1)
    return out


def rss_figures(workdir: Path, quick: bool) -> dict[str, float]:
    """Peak RSS (MB) of each configuration, recorded and bare."""
    long = 20_000 if quick else 100_000
    py = sys.executable
    out: dict[str, float] = {}
    for steps in (1_000, long):
        out[f"rss_pendulum_{steps}_mb"] = _rss(py, "pendulum", steps, 1, "1", workdir)
        out[f"rss_pendulum_{steps}_bare_mb"] = _rss(py, "pendulum", steps, 1, "", workdir)
    out["rss_length_ratio"] = out[f"rss_pendulum_{long}_mb"] / out["rss_pendulum_1000_mb"]
    out["rss_length_ratio_bare"] = out[f"rss_pendulum_{long}_bare_mb"] / out["rss_pendulum_1000_bare_mb"]
    out.update(vector_figures(workdir, (1, 16)))
    for n in (1, 4):
        out[f"rss_camera_{n}_mb"] = _rss(py, "camera", 150, n, "1", workdir)
        out[f"rss_camera_{n}_bare_mb"] = _rss(py, "camera", 150, n, "", workdir)
    added = [out[f"rss_camera_{n}_mb"] - out[f"rss_camera_{n}_bare_mb"] for n in (1, 4)]
    out["rss_camera_added_per_stream_mb"] = (added[1] - added[0]) / 3
    out["rss_camera_added_1_stream_mb"] = added[0]
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


def fastsim_run_figures(quick: bool, rounds: int) -> dict[str, float]:
    """Issue 24: ``FastSimRun-v0`` step time with Record over the same Run with ``record=False``
    (``bench_gym_run.measure``: interleaved rounds, medians), synthetic and DROID-like scenes."""
    from bench_gym_run import measure  # this folder is on sys.path when run as a script

    out: dict[str, float] = {}
    numeric = measure(["synthetic", "mujoco"], 150 if quick else 300, rounds)
    cameras = measure(["mujoco+cameras"], 20 if quick else 40, rounds)
    for scene, r in {**numeric, **cameras}.items():
        key = "fastsimrun_" + ("droid" + scene[len("mujoco"):] if scene.startswith("mujoco") else scene).replace("+", "_")
        out[f"{key}_step_ms_bare"] = r["step_ms_off"]
        out[f"{key}_step_ms_recorded"] = r["step_ms_on"]
        out[f"{key}_ratio"] = r["step_ms_on"] / r["step_ms_off"]
        out[f"{key}_thread_cpu_ratio"] = r["thread_cpu_ms_on"] / r["thread_cpu_ms_off"]
    return out


TARGETS = {  # figure -> the bound on it
    "cartpole_ratio_steady": 1.3, "cartpole_long_thread_cpu_ratio": 1.3, "cartpole_ratio_all": 1.3, "render_ratio_steady": 1.1, "render_ratio_all": 1.1,
    "fastsimrun_synthetic_ratio": 1.1, "fastsimrun_droid_ratio": 1.1,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=5, metavar=("MODE", "STEPS", "ENVS", "RECORD", "DIR"))
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds (a smoke run)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-fastsim-run", action="store_true", help="leave out issue 24's FastSimRun-v0 figures")
    add_json_flag(parser)
    parser.add_argument("--vector-only", action="store_true", help="only the 1/16/64 sub-env RSS and threads")
    parser.add_argument("--only", default="", help="comma-separated sections to run (e.g. cartpole,cartpole_long)")
    args = parser.parse_args(argv)
    if args.child:
        mode, steps, envs, record, directory = args.child
        child(mode, int(steps), int(envs), record, directory)
        return 0
    os.environ.setdefault("MUJOCO_GL", "egl")
    rounds = 2 if args.quick else args.rounds
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.vector_only:
            figures.update(vector_figures(work))
            return _print_report(figures, as_json=args.json)
        sections: list[tuple[str, Any]] = [
            ("cartpole", lambda: step_overhead("cartpole", 1_000 if args.quick else 3_000, rounds, work)),
            ("cartpole_long", lambda: long_episode(60 if args.quick else 200, rounds, work)),
            ("render", lambda: step_overhead("render", 15 if args.quick else 30, rounds, work)),
            ("minari", lambda: minari_steps(1_000 if args.quick else 3_000, rounds)),
            ("rss", lambda: rss_figures(work, args.quick)),
        ]
        if not args.no_fastsim_run:
            sections.append(("fastsim_run", lambda: fastsim_run_figures(args.quick, rounds)))
        only = {n for n in args.only.split(",") if n}
        for name, section in sections:
            if only and name not in only:
                continue
            t0 = time.perf_counter()
            figures.update(section())
            figures[f"seconds_{name}"] = time.perf_counter() - t0
    for key, bound in TARGETS.items():
        if key in figures:
            figures[f"{key}_target"] = bound
            figures[f"{key}_target_met"] = float(figures[key] <= bound)
    return _print_report(figures, as_json=args.json)


def _print_report(figures: dict[str, float], *, as_json: bool) -> int:
    """The human table (its ``*_target`` and ``*_target_met`` rows included), then with ``as_json``
    the one ``_report`` line: each figure of ``TARGETS`` with its bound beside it (``<=``)."""
    for key, value in figures.items():
        print(f"{key:40s} {value:12.3f}")
    report = Figures("bench_gym")  # passed: every figure of TARGETS measured in this run met its bound
    for key, value in figures.items():
        if key.endswith(("_target", "_target_met")) and key.rsplit("_target", 1)[0] in TARGETS:
            continue  # the human table's rows for a target: in the JSON it sits beside its figure
        bound = TARGETS.get(key)
        report.add(key, value, bound, "<=" if bound is not None else None)
    report.emit(as_json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
