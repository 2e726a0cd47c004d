"""Helpers for the hostile-input tests: camera files with chosen payloads, peak RSS of a command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from fastsim_record.ports.encoders import ImageDescriptor
from fastsim_recording_format import FsrWriter, RecordIn, RunMetadata, StreamSpec

RUN = RunMetadata("hostile", "hostile-1", {"name": "tests", "version": "0"})
MIB = 1 << 20

# VmHWM, not ru_maxrss: the latter carries the parent's peak across fork + exec.
_PEAK = """
import json, sys
from fastsim_record.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"code": code, "peak": peak * 1024}), file=sys.__stderr__)
"""


def write_camera_file(path: Path, descriptor: ImageDescriptor, payloads: Sequence[bytes]) -> None:
    """A sealed FSR file with one camera stream ``cameras.cam.rgb`` holding ``payloads``."""
    stream = StreamSpec(1, "cameras.cam.rgb", "camera.rgb", descriptor.to_dict(), {})
    with FsrWriter(path, RUN, [stream]) as writer:
        writer.write_batch([
            RecordIn.data(1, k + 1, k + 1, 0, k * 1000, payload) for k, payload in enumerate(payloads)
        ])
        writer.seal()


def run_fsr(*argv: str, timeout: float = 120.0) -> tuple[int, str, int]:
    """Run ``fsr ARGV`` in a fresh interpreter: exit code, stderr (without the probe), peak RSS."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, *argv], capture_output=True, text=True, timeout=timeout, env=env
    )
    lines = proc.stderr.splitlines()
    if not lines or not lines[-1].startswith("{"):
        raise AssertionError(f"fsr {' '.join(argv)} died (exit {proc.returncode}): {proc.stderr[-2000:]}")
    probe = json.loads(lines[-1])
    return int(probe["code"]), "\n".join(lines[:-1]), int(probe["peak"])
