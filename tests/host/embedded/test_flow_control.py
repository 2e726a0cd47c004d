"""Flow control in the embedded host's run loop (contract section 10, ``fastsim_embedded.host.flow``).

A paced Run never reads a gauge; an unpaced Run waits for a pressed one, bounded.  The
last test records the README's minimal Run unpaced with a CPU-bound process beside it
(set ``FSR_SOAK_S=3600`` for the issue's hour-long version; see README)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest

from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session

REPO = Path(__file__).resolve().parents[3]


class AlwaysPressed:
    """A gauge that never relieves, counting the host's waits."""

    def __init__(self) -> None:
        self.waits = 0
        self.reads = 0
        self._never = threading.Event()

    @property
    def pressed(self) -> bool:
        self.reads += 1
        return True

    def wait_relieved(self, timeout_s: float) -> bool:
        self.waits += 1
        return self._never.wait(timeout_s)


def _session(write_run: Callable[..., Path], tmp_path: Path, realtime: float | None) -> tuple[AlwaysPressed, EmbeddedHost]:
    gauge = AlwaysPressed()
    hosts: list[EmbeddedHost] = []

    def on_host(host: EmbeddedHost) -> None:
        host.flow.stall_s = 0.2
        host.flow.register(gauge, "probe")
        hosts.append(host)

    prepared = prepare_run(write_run(plugins={}), duration_s=1.0)  # 50 ticks at 50 Hz
    result = run_session(prepared, tmp_path / "out", on_host=on_host, realtime_factor=realtime)
    assert result.outcome.ok, result.outcome.reason
    assert result.ticks == 50
    return gauge, hosts[0]


def test_a_paced_run_never_reads_or_waits_on_a_gauge(write_run: Callable[..., Path], tmp_path: Path) -> None:
    """Under --realtime the loop never blocks on a consumer, however pressed it is."""
    gauge, host = _session(write_run, tmp_path, realtime=20.0)
    assert gauge.reads == 0
    assert gauge.waits == 0
    assert host.flow.waited_s == 0.0


def test_an_unpaced_run_waits_then_releases_a_stalled_gauge(write_run: Callable[..., Path], tmp_path: Path) -> None:
    """Unpaced, the loop waits on a pressed gauge, releases it after the stall bound (FC4), and the Run completes."""
    gauge, host = _session(write_run, tmp_path, realtime=None)
    assert gauge.waits >= 1
    assert host.flow.waits == 1
    assert host.flow.released == [("probe", "still pressed after 0.2 s of waiting")]


def _cpu_hog() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "while True:\n    pass"])


@pytest.mark.slow
def test_the_minimal_run_keeps_up_unpaced_beside_a_cpu_bound_process(tmp_path: Path) -> None:
    """The minimal Run, unpaced beside a CPU hog, succeeds with zero loss (FSR_SOAK_S=3600 for the hour)."""
    # Default 600 simulated s (72,000 ticks); FSR_SOAK_S=3600 runs 432,000 ticks.
    seconds = float(os.environ.get("FSR_SOAK_S", "600"))
    prepared = prepare_run(REPO / "examples/minimal/run.yaml", duration_s=seconds)
    hog = _cpu_hog()
    try:
        result = run_session(prepared, tmp_path)
    finally:
        hog.kill()
        hog.wait()
    outcome = result.outcome
    assert outcome.ok, outcome.reason
    assert [p.name for p in outcome.committed] == ["episode.fsr"]
    lanes = cast("dict[str, dict[str, int]]", outcome.finalizers[0].result.summary["lanes"])
    assert all(lane["lost"] == 0 and lane["failures"] == 0 for lane in lanes.values())
    assert lanes["numeric"]["high_water"] < lanes["numeric"]["capacity_items"]
    assert lanes["numeric"]["enqueued"] == round(seconds * 120)
