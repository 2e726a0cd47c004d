"""Recordings made by ``fsr record`` for the export tests (made once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fastsim_record.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def record(run: dict[str, object], out: Path) -> Path:
    """Record ``run`` into ``out/episode.fsr`` with ``fsr record``."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "run.yaml"
    path.write_text(yaml.safe_dump(run))
    assert main(["record", str(path), "--output-dir", str(out)]) == 0
    return out / "episode.fsr"


def droid_run(duration_s: float = 2.0, reset_every_s: float = 1.0) -> dict[str, object]:
    """The DROID-like MuJoCo example (3 JPEG cameras at 15 Hz) with a shorter duration."""
    run: dict[str, object] = yaml.safe_load((EXAMPLES / "droid-like" / "run.yaml").read_text())
    run["scenario"]["scene"]["mujoco"]["reset_every_s"] = reset_every_s  # type: ignore[index]
    run["runtime"]["duration_s"] = duration_s  # type: ignore[index]
    return run


@pytest.fixture(scope="session")
def droid_fsr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DROID-like MuJoCo example, 2 s with a reset at 1 s (generations 0 and 1)."""
    return record(droid_run(), tmp_path_factory.mktemp("export-droid"))


@pytest.fixture(scope="session")
def geometry_fsr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic geometry example (120 Hz numeric, scene geometry at 30 Hz), 1 s."""
    run = yaml.safe_load((EXAMPLES / "geometry" / "run.yaml").read_text())
    run["runtime"] = {"duration_s": 1.0}
    return record(run, tmp_path_factory.mktemp("export-geometry"))
