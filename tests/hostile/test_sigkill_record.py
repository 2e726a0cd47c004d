"""`fsr record` killed with SIGKILL at any moment, even in the writer's first 100 ms, leaves an
``.incomplete`` that starts with a valid header and recovers (exit 0 or 3, never 1).

The earliest kill is 5 ms after the staging file appears: the few microseconds between the
lease creating the file and the sink writing the header are the lease's to close (by
creating the staging file under a temporary name and renaming it once the header is in).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from fastsim_record.cli import main
from fastsim_record.fsr import FsrReader, validate

RUN = Path(__file__).resolve().parents[2] / "examples" / "minimal" / "run.yaml"
FSR = Path(sys.executable).with_name("fsr")


def _kill_after_open(out_dir: Path, delay: float) -> Path | None:
    """Start a recording, wait for its staging file, kill -9 ``delay`` seconds later."""
    proc = subprocess.Popen(
        [str(FSR), "record", str(RUN), "--output-dir", str(out_dir), "--duration", "60", "--realtime"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "MUJOCO_GL": "egl"},
    )
    staging = out_dir / "episode.fsr.incomplete"
    try:
        deadline = time.monotonic() + 60
        while not staging.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return staging if staging.exists() else None


def test_sigkilled_record_always_leaves_a_recoverable_header(tmp_path: Path) -> None:
    """Kills 5-100 ms after the staging file appears, and later, all leave a recoverable file."""
    rng = random.Random(20261203)
    delays = [rng.uniform(0.005, 0.1) for _ in range(5)] + [rng.uniform(0.1, 1.0) for _ in range(2)]
    for trial, delay in enumerate(delays):
        staging = _kill_after_open(tmp_path / f"t{trial}", delay)
        assert staging is not None
        assert staging.stat().st_size >= 32, (trial, delay)
        out = tmp_path / f"r{trial}.fsr"
        assert main(["recover", str(staging), "-o", str(out)]) in (0, 3), (trial, delay)
        validate(out)
        with FsrReader(out) as reader:
            assert reader.recovered
