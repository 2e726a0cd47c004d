"""Where the render figure's overhead goes: Record's per-frame work, taken away or added part by part.

A diagnostic beside ``bench_gym.py --only render`` (issue 23's <= 1.1x figure), with no
target of its own.  Every arm runs ``HalfCheetah-v5`` at 640x480 with ``rgb_array`` and the
same render settings, made by ``bench_gym._make`` (``offsamples=0``, ``shadowsize=0``): ``step()`` then
``render()``, through ``RecordEpisodes`` in every arm but ``bare``.  Each round makes a fresh
env per arm, in a shuffled order, takes 10 warm-up steps and then times ``--steps`` steps;
a round's figure is its median step.

    | arm             | what runs                                                         |
    |-----------------|-------------------------------------------------------------------|
    | bare            | the env alone: the baseline                                       |
    | recorded        | ``RecordEpisodes`` as shipped                                     |
    | no_encode_cpu   | as shipped, but the JPEG encoder sleeps as long as one encode of  |
    |                 | this env's frame takes here, then returns a payload encoded once: |
    |                 | the encode's CPU taken away, its GIL-free time kept               |
    | capture_only    | the env thread's capture as shipped (checked copies, the frame    |
    |                 | copy, calibration), each one-row chunk then dropped at the        |
    |                 | hand-off: no publishing, no writing, no encode                    |
    | python_added    | as shipped, plus 300 us of GIL-holding Python in the publisher    |
    |                 | per frame: what Record's background Python costs the env thread   |

Each arm's figure is the median over rounds of (arm / bare) with a ~95% CI
(``_report.median_ci``), and the ratio of the arms' medians.  The patches are test-only
monkeypatches of Record's and the host's internals, undone after each arm; nothing here is a
way to run Record.  The files recorded in a ``capture_only`` round hold only each episode's
last rows.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _report import Figures, add_json_flag, load_average, median_ci
from bench_gym import _make  # the render env exactly as bench_gym's render figure makes it

ARMS = ("bare", "recorded", "no_encode_cpu", "capture_only", "python_added")
PYTHON_ADDED_S = 0.0003


def _encode_seconds() -> float:
    """The median time of one JPEG encode (Record's encoder, default settings) of this env's frame."""
    from fastsim_record.adapters.codecs import JpegEncoder

    env = _make("render")
    env.reset(seed=0)
    frame = env.render()
    env.close()
    encoder = JpegEncoder(width=int(frame.shape[1]), height=int(frame.shape[0]))
    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        encoder.encode(frame)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@contextlib.contextmanager
def _patched(owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Iterator[None]:
    original = getattr(owner, name)
    setattr(owner, name, make(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


def _arm(name: str, encode_s: float) -> contextlib.AbstractContextManager[None]:
    """The arm's patch (module table), undone when the arm's round ends."""
    from fastsim_embedded.gymnasium_host import episode
    from fastsim_embedded.gymnasium_host.capture import Chunk
    from fastsim_record.adapters import codecs

    if name == "no_encode_cpu":
        def no_cpu(encode: Callable[..., bytes]) -> Callable[..., bytes]:
            done: dict[tuple[int, int], bytes] = {}

            def sleep_instead(self: Any, frame: Any) -> bytes:
                key = (self.width, self.height)
                if key not in done:
                    done[key] = encode(self, frame)
                time.sleep(encode_s)
                return done[key]
            return sleep_instead
        return _patched(codecs.JpegEncoder, "encode", no_cpu)
    if name == "capture_only":
        def drop(hand: Callable[..., None]) -> Callable[..., None]:
            def dropped(self: Any) -> None:
                chunk = self.chunk
                if len(chunk.steps) > 1 or chunk.final is not None:  # an episode's end: as shipped
                    hand(self)
                    return
                self._steps += len(chunk.steps)
                self.chunk = Chunk(chunk.first + len(chunk))
            return dropped
        return _patched(episode.EpisodeWriter, "hand", drop)
    if name == "python_added":
        def burn(publish: Callable[..., None]) -> Callable[..., None]:
            def burnt(self: Any, chunk: Any) -> None:
                end = time.perf_counter() + PYTHON_ADDED_S
                while time.perf_counter() < end:
                    pass
                publish(self, chunk)
            return burnt
        return _patched(episode.EpisodeWriter, "_publish_chunk", burn)
    return contextlib.nullcontext()


def _round(name: str, steps: int, seed: int, workdir: Path, encode_s: float) -> float:
    """One arm's round: its median step (s)."""
    from fastsim_record.gym import RecordEpisodes

    with _arm(name, encode_s):
        env = _make("render")
        if name != "bare":
            env = RecordEpisodes(env, workdir / f"{name}-{seed}")
        env.action_space.seed(seed)
        env.reset(seed=seed)
        env.render()
        for _ in range(10):
            env.step(env.action_space.sample())
            env.render()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            env.step(env.action_space.sample())
            env.render()
            times.append(time.perf_counter() - t0)
        env.close()
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--steps", type=int, default=40, help="timed steps per round")
    parser.add_argument("--arms", default=",".join(ARMS[1:]), help="comma-separated arms beside bare")
    parser.add_argument("--quick", action="store_true", help="4 rounds of 15 steps (a smoke run)")
    add_json_flag(parser)
    args = parser.parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "egl")
    rounds, steps = (4, 15) if args.quick else (args.rounds, args.steps)
    arms = ["bare", *(a for a in args.arms.split(",") if a and a != "bare")]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        parser.error(f"--arms: unknown arm {unknown[0]!r} (arms: {', '.join(ARMS[1:])})")
    load_before = load_average()
    encode_s = _encode_seconds()
    medians: dict[str, list[float]] = {a: [] for a in arms}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            order = list(arms)
            random.Random(r).shuffle(order)
            for name in order:
                medians[name].append(_round(name, steps, r, Path(tmp), encode_s))
    figures = Figures("bench_render_parts")
    bare = statistics.median(medians["bare"])
    figures.add("render_parts_bare_step_ms", bare * 1e3)
    figures.add("render_parts_encode_ms", encode_s * 1e3)
    print(f"bare step (median of {rounds} round medians): {bare * 1e3:.2f} ms; one JPEG encode: {encode_s * 1e3:.2f} ms")
    for name in arms[1:]:
        ratio, low, high = median_ci([a / b for a, b in zip(medians[name], medians["bare"], strict=True)])
        of_medians = statistics.median(medians[name]) / bare
        print(f"{name:14s} {ratio:.3f} [95% CI {low:.3f}, {high:.3f}] per round; ratio of medians {of_medians:.3f}")
        figures.add(f"render_parts_{name}_ratio", ratio)
        figures.add(f"render_parts_{name}_ci_low", low)
        figures.add(f"render_parts_{name}_ci_high", high)
        figures.add(f"render_parts_{name}_ratio_of_medians", of_medians)
    figures.extra.update(rounds=rounds, steps=steps, load_before=load_before, load_after=load_average())
    figures.emit(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
