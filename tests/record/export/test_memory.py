"""Export streams: the peak memory of exporting a 10-minute episode stays within 1.3x of a 1-minute one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import record

# VmHWM: the peak RSS of this process image (ru_maxrss would carry the parent's peak across exec)
PEAK = (
    "import sys\n"
    "from fastsim_record.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
    "print(int(hwm.split()[1]))\n"
    "sys.exit(code)\n"
)
NEEDS = {"mcap": "foxglove", "rerun": "rerun", "lerobot": "av"}


def synthetic_cameras_run(camera: str = "cam00") -> dict[str, object]:
    """The synthetic+cameras backend: one 96x64 JPEG camera and joint state at 5 Hz, control every ~0.5 s."""
    prefix = f"sensors.{camera}.camera"
    return {
        "schema": "fastsim/2", "name": "memory-bound", "backend": "synthetic+cameras",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}},
                               "synthetic": {"cameras": 1, "camera_width": 96, "camera_height": 64}}},
        "runtime": {"sensor_hz": 5},
        "plugins": {"record": {"use": "plugin://fastsim/record", "config": {"streams": {"cameras": {camera: {
            "rgb": f"{prefix}.rgb", "intrinsics": f"{prefix}.intrinsics",
            "translation": f"{prefix}.extrinsics.translation",
            "quaternion_xyzw": f"{prefix}.extrinsics.quaternion_xyzw",
            "required": True, "every_n_samples": 1}}}}}},
    }


@pytest.fixture(scope="module")
def one_and_ten_minutes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same Run recorded for 1 and for 10 minutes of simulated time."""
    root = tmp_path_factory.mktemp("memory")
    out = []
    for minutes in (1, 10):
        run = synthetic_cameras_run()
        run["runtime"]["duration_s"] = 60.0 * minutes  # type: ignore[index]
        out.append(record(run, root / f"{minutes}min"))
    return out[0], out[1]


def _peak_kib(source: Path, target: str, out: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "export", str(source), "--to", target, "-o", str(out), "--quiet",
         "--video-codec", "h264"],
        capture_output=True, text=True, check=False, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("target", ["mcap", "rerun", "lerobot"])
def test_peak_memory_does_not_grow_with_episode_length(
    target: str, one_and_ten_minutes: tuple[Path, Path], tmp_path: Path
) -> None:
    """Peak RSS exporting 10 minutes is at most 1.3x that of 1 minute (3000 against 300 ticks and frames)."""
    pytest.importorskip(NEEDS[target], reason=f"the {target} extra is not installed")
    short, long = one_and_ten_minutes
    one = _peak_kib(short, target, tmp_path / "one")
    ten = _peak_kib(long, target, tmp_path / "ten")
    assert ten <= 1.3 * one, f"{target}: 10 min peaked at {ten} KiB, 1 min at {one} KiB ({ten / one:.2f}x)"
