"""Unpaced Runs: does Record keep up with a simulation that runs as fast as it can?

Scene: the synthetic backend with 90 numeric channels at 120 Hz (one atomic observation
record per tick), unpaced (no ``--realtime``: the loop never sleeps), for ``--seconds``
simulated seconds.  Configurations, interleaved ``--repeat`` times with a rotating
order, each a whole Run from ``run_session`` (prepare, ticks, finalize, commit):

  * ``off``           Record not selected (Core captures nothing): the baseline;
  * ``on``            Record with the default lossless (``fail_run``) lanes;
  * ``off+hog``       Record off, with a second, CPU-bound process on the machine;
  * ``on+hog``        Record on, with that process;
  * ``on,no-flow``    Record on with the host's flow control disabled (every gauge
                      released at once): how Record behaved before flow control.
  * ``on,nowrite``    (``--ceiling``) Record on, with the writer worker's encoding, batch
                      building and writing skipped (it still drains, merges and splits runs,
                      and relieves the gauge): what the writer's whole work costs the Run,
                      the kernel's write of each batch included.  It is not what moving the
                      writer's Python off the GIL could give: a writer process measured
                      slower than thread mode (``docs/design/writer-process.md``, section
                      10).  Its file holds no record, by design; its figure is reported,
                      never gated.

Figures: simulation ticks per wall second of the whole Run (finalization included),
and the ratio on/off (on+hog against off+hog), as medians over the repeats; the writer
worker's CPU per record (``worker_cpu_s / records``); the lanes' high-water marks; the
time the host waited on Record and after how many ticks; loss; and the finalization
inside the Record-on wall time (``*_finalize_s``: Record's ``finalize_elapsed_s``, of
which ``*_readback_s`` validated the file through the readback lease).

``--mujoco`` adds the DROID-like MuJoCo scene (joint position and velocity): at 120 Hz
without cameras, and at 15 Hz with its three cameras at 640x480 (JPEG q92).  With
cameras, Record off renders nothing (no plugin asks for a camera), so the baseline there
is ``rendered``: Record's capture plan with a do-nothing consumer (Core renders every
camera and delivers it; nothing encodes or writes).

Targets (issue 26): zero loss and a succeeded Run in every repeat of ``on`` and
``on+hog``; ratio on/off >= 0.7, reported with the total time the simulation waited on
Record (the flow-control gauge: a ratio bought with waits is not a ratio).  With
``--json`` the last line is one JSON object of the figures.

    python benchmarks/bench_unpaced.py [--seconds 300] [--repeat 5] [--arms off,on] [--ceiling] [--mujoco] [--json]

Each on/off ratio is printed with a distribution-free ~95% confidence interval of its
median over the rounds (``_report.median_ci``).  The figure moves between invocations on
this machine (stop 46 read 0.61-0.75 in seven runs of 5-8 rounds), so a verdict wants many
rounds: ``--arms off,on --repeat 40`` runs 40 off/on pairs in about three minutes.  It is
also lower on a busy machine: stop 47 read 0.722 [0.718, 0.726] over 80 pairs at a load
average under 1, stop 46 0.646 [0.599, 0.704] over 40 pairs on a busy day.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any
from unittest.mock import patch

import yaml
from _record_host import null_factory
from _report import Figures, add_json_flag, median_ci

from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session

RECORD = "plugin://fastsim/record"
REPO = Path(__file__).resolve().parents[1]


def synthetic_run(directory: Path, *, record: bool) -> Path:
    """The README's minimal Run, with 90 numeric channels at 120 Hz."""
    document = {
        "schema": "fastsim/2",
        "name": "unpaced",
        "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}},
                               "synthetic": {"numeric_channels": 90}}},
        "runtime": {"sensor_hz": 120.0},
        "plugins": {"record": {"use": RECORD}} if record else {},
    }
    path = directory / f"synthetic-{'on' if record else 'off'}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def droid_run(directory: Path, *, record: bool, cameras: bool) -> Path:
    """The README's DROID-like main job: 120 Hz without cameras, 15 Hz at 640x480 with."""
    document: dict[str, Any] = yaml.safe_load((REPO / "examples/droid-like/run.yaml").read_text())
    scene = document["scenario"]["scene"]["mujoco"]
    scene.update(width=640, height=480)
    document["runtime"]["sensor_hz"] = 15 if cameras else 120
    document["runtime"].pop("duration_s", None)
    if not record:
        document["plugins"] = {}
    elif not cameras:
        document["plugins"]["record"]["config"]["streams"]["cameras"] = {}
    path = directory / f"droid-{'cam' if cameras else 'nocam'}-{'on' if record else 'off'}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@contextmanager
def cpu_hog(enabled: bool) -> Iterator[None]:
    """A second CPU-bound process for the duration of the block."""
    if not enabled:
        yield
        return
    hog = subprocess.Popen([sys.executable, "-c", "while True:\n    pass"])
    try:
        time.sleep(0.2)  # let it get going
        yield
    finally:
        hog.kill()
        hog.wait()


def writes_skipped(enabled: bool) -> AbstractContextManager[object]:
    """The ``on,nowrite`` arm: the writer worker releases in order but encodes and writes nothing."""
    if not enabled:
        return nullcontext()
    from fastsim_record.pipeline.worker import WriterWorker  # the arm's one reach into Record

    return patch.object(WriterWorker, "_write_released", lambda self, released: None)


def run_once(run_file: Path, seconds: float, *, flow: bool = True, null: bool = False) -> dict[str, Any]:
    """One whole Run; its throughput and Record's figures."""
    prepared = prepare_run(run_file, duration_s=seconds)
    hosts: list[EmbeddedHost] = []

    def on_host(host: EmbeddedHost) -> None:
        if not flow:
            host.flow.stall_s = 0.0  # FC4 at once: every gauge released on first press
        hosts.append(host)

    with tempfile.TemporaryDirectory(prefix="fsr-unpaced-") as out:
        started = time.perf_counter()
        factories = {RECORD: null_factory} if null else None
        result = run_session(prepared, Path(out), on_host=on_host, factories=factories)
        wall = time.perf_counter() - started
    outcome = result.outcome
    figures: dict[str, Any] = {
        "ok": outcome.ok, "reason": outcome.reason, "ticks": result.ticks,
        "wall_s": wall, "ticks_per_s": result.ticks / wall if wall else 0.0,
        "waited_s": hosts[0].flow.waited_s, "waits": hosts[0].flow.waits,
    }
    if outcome.finalizers and not null:
        summary: dict[str, Any] = dict(outcome.finalizers[0].result.summary)
        lanes: dict[str, dict[str, int]] = summary.get("lanes", {})
        records = int(summary.get("records", 0))
        figures.update(
            lost=sum(int(v["lost"]) + int(v["failures"]) for v in lanes.values()),
            high_water={k: f"{v['high_water']}/{v['capacity_items']}" for k, v in lanes.items()},
            records=records,
            finalize_s=float(summary.get("finalize_elapsed_s", 0.0)),
            readback_s=float(summary.get("readback_elapsed_s", 0.0)),
        )
        if records:  # the on,nowrite arm writes none: no figure per record
            figures["worker_us_per_record"] = 1e6 * float(summary.get("worker_cpu_s", 0.0)) / records
    return figures


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(r[key]) for r in rows)


def interleave(
    configs: dict[str, Callable[[], dict[str, Any]]], repeat: int
) -> dict[str, list[dict[str, Any]]]:
    """Run every configuration ``repeat`` times, rotating the order each round."""
    names = list(configs)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for round_ in range(repeat):
        order = names[round_ % len(names):] + names[:round_ % len(names)]
        for name in order:
            row = configs[name]()
            results[name].append(row)
            status = "ok" if row["ok"] else f"FAILED: {row['reason']}"
            print(f"  round {round_ + 1} {name:<12} {row['ticks_per_s']:>9.0f} ticks/s  {status}",
                  flush=True)
    return results


TARGET_RATIO = 0.7


def report(results: dict[str, list[dict[str, Any]]], pairs: list[tuple[str, str]],
           figures: Figures | None = None, prefix: str = "") -> bool:
    """Print medians and ratios; True when every Record-on Run succeeded with zero loss."""
    print()
    print(f"{'config':<14}{'ticks/s':>10}{'ok':>6}{'lost':>7}{'worker us/rec':>15}"
          f"{'waits':>8}{'waited s':>10}{'final. s':>10}  high water")
    for name, rows in results.items():
        ok = sum(1 for r in rows if r["ok"])
        lost = sum(int(r.get("lost", 0)) for r in rows)
        worker = f"{_median(rows, 'worker_us_per_record'):.1f}" if all("worker_us_per_record" in r for r in rows) else "-"
        final = f"{_median(rows, 'finalize_s'):.3f}" if "finalize_s" in rows[0] else "-"
        high = rows[-1].get("high_water", "-")
        print(f"{name:<14}{_median(rows, 'ticks_per_s'):>10.0f}{ok:>4}/{len(rows):<2}{lost:>6}"
              f"{worker:>15}{_median(rows, 'waits'):>8.0f}{_median(rows, 'waited_s'):>10.2f}{final:>10}  {high}")
    passed = True
    for on, off in pairs:
        ratios = [a["ticks_per_s"] / b["ticks_per_s"] for a, b in zip(results[on], results[off])]
        _, low, high = median_ci(ratios)
        print(f"ratio {on} / {off}: median {statistics.median(ratios):.3f}, ~95% CI [{low:.3f}, {high:.3f}] "
              f"(rounds {min(ratios):.2f}-{max(ratios):.2f})")
        rows = results[on]
        zero_loss = all(r["ok"] and r.get("lost", 0) == 0 for r in rows)
        passed = passed and zero_loss and (prefix != "" or on != "on" or statistics.median(ratios) >= TARGET_RATIO)
        waited = _median(rows, "waited_s")
        print(f"  {on}: {'zero loss, succeeded in every repeat' if zero_loss else 'LOSS OR FAILURE'}; "
              f"the simulation waited on Record {waited:.2f} s in {_median(rows, 'waits'):.0f} ticks (median)")
        if figures is not None:
            name = prefix + on.replace("+", "_").replace(",", "_").replace("-", "_")
            gated = not prefix and on == "on"  # the figure: synthetic, 90 channels, no hog
            figures.add(f"{name}_over_{off.replace('+', '_')}_ratio", statistics.median(ratios),
                        TARGET_RATIO if gated else None, ">=" if gated else None)
            figures.add(f"{name}_over_{off.replace('+', '_')}_ratio_ci_low", low)
            figures.add(f"{name}_over_{off.replace('+', '_')}_ratio_ci_high", high)
            figures.add(f"{name}_sim_waited_s", waited)
            figures.add(f"{name}_sim_waits", _median(rows, "waits"))
            figures.add(f"{name}_lost_or_failed", 0 if zero_loss else 1, 0, "<=")
            if all("worker_us_per_record" in r for r in rows):
                figures.add(f"{name}_worker_us_per_record", _median(rows, "worker_us_per_record"))
            if "finalize_s" in rows[0]:
                figures.add(f"{name}_finalize_s", _median(rows, "finalize_s"))
                figures.add(f"{name}_readback_s", _median(rows, "readback_s"))
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="simulated seconds per synthetic Run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ceiling", action="store_true", help="also the on,nowrite arm (the writer's whole work skipped)")
    parser.add_argument("--arms", default="all",
                        help="comma-separated arms of the synthetic scene (off,on,off+hog,on+hog,on,no-flow); "
                             "'off,on' spends the time on the verdict's pairs")
    parser.add_argument("--mujoco", action="store_true", help="also the DROID-like MuJoCo scene")
    parser.add_argument("--mujoco-seconds", type=float, default=60.0)
    parser.add_argument("--mujoco-repeat", type=int, default=3)
    add_json_flag(parser)
    args = parser.parse_args()
    figures = Figures("bench_unpaced")
    os.environ.setdefault("MUJOCO_GL", "egl")
    with tempfile.TemporaryDirectory(prefix="fsr-unpaced-runs-") as tmp:
        root = Path(tmp)
        on, off = synthetic_run(root, record=True), synthetic_run(root, record=False)
        seconds = args.seconds

        def config(
            path: Path, hog: bool = False, flow: bool = True, null: bool = False, nowrite: bool = False
        ) -> Callable[[], dict[str, Any]]:
            def run() -> dict[str, Any]:
                with cpu_hog(hog), writes_skipped(nowrite):
                    return run_once(path, seconds, flow=flow, null=null)
            return run

        print(f"synthetic, 90 channels at 120 Hz, unpaced, {seconds:g} simulated s "
              f"({round(seconds * 120)} ticks), {args.repeat} rounds")
        arms = {
            "off": config(off), "on": config(on), "off+hog": config(off, hog=True),
            "on+hog": config(on, hog=True), "on,no-flow": config(on, flow=False),
        }
        if args.ceiling:
            arms["on,nowrite"] = config(on, nowrite=True)
        if args.arms != "all":  # an arm runs when every comma part of its name is listed ("on,no-flow")
            wanted = {a.strip() for a in args.arms.split(",")} | ({"nowrite"} if args.ceiling else set())
            if not {"off", "on"} <= wanted or not wanted <= {part for name in arms for part in name.split(",")}:
                parser.error(f"--arms needs off and on, and knows {', '.join(arms)}; got {args.arms!r}")
            arms = {k: v for k, v in arms.items() if set(k.split(",")) <= wanted}
        results = interleave(arms, args.repeat)
        pairs = [(a, b) for a, b in [("on", "off"), ("on+hog", "off+hog"), ("on,nowrite", "off")]
                 if a in results and b in results]
        passed = report(results, pairs, figures)
        figures.add("off_ticks_per_s", _median(results["off"], "ticks_per_s"))
        figures.add("on_ticks_per_s", _median(results["on"], "ticks_per_s"))
        if args.mujoco:
            seconds = args.mujoco_seconds
            print(f"\nDROID-like MuJoCo, joint state at 120 Hz, no cameras, unpaced, {seconds:g} s")
            nocam = interleave({
                "off": config(droid_run(root, record=False, cameras=False)),
                "on": config(droid_run(root, record=True, cameras=False)),
            }, args.mujoco_repeat)
            passed = report(nocam, [("on", "off")], figures, "mujoco_") and passed
            seconds = min(seconds, 8.0)
            print(f"\nDROID-like MuJoCo, three 640x480 cameras at 15 Hz, unpaced, {seconds:g} s")
            with_cameras = droid_run(root, record=True, cameras=True)
            cams = interleave({
                "off": config(droid_run(root, record=False, cameras=True)),
                "rendered": config(with_cameras, null=True),
                "on": config(with_cameras),
            }, args.mujoco_repeat)
            print("('off' renders nothing: no plugin asks for cameras; 'rendered' is Record's "
                  "capture plan with a do-nothing consumer, so Core renders all three cameras)")
            passed = report(cams, [("on", "rendered")], figures, "mujoco_cameras_") and passed
    print("\nPASS" if passed else "\nFAIL")
    figures.emit(args.json)
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
