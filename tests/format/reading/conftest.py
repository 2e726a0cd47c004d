"""Real recordings made by ``fsr record`` for the reading tests (made once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fastsim_record.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _record(run: dict[str, object], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "run.yaml"
    path.write_text(yaml.safe_dump(run))
    assert main(["record", str(path), "--output-dir", str(out)]) == 0
    return out / "episode.fsr"


@pytest.fixture(scope="session")
def droid_fsr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DROID-like MuJoCo example, 2 s with a reset at 1 s (generations 0 and 1)."""
    run = yaml.safe_load((EXAMPLES / "droid-like" / "run.yaml").read_text())
    run["scenario"]["scene"]["mujoco"]["reset_every_s"] = 1.0
    run["runtime"]["duration_s"] = 2.0
    return _record(run, tmp_path_factory.mktemp("droid"))


@pytest.fixture(scope="session")
def synthetic_fsr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The minimal synthetic Run, 1.5 s at 120 Hz with a reset every 0.5 s."""
    run = yaml.safe_load((EXAMPLES / "minimal" / "run.yaml").read_text())
    run["scenario"]["scene"]["synthetic"] = {"reset_every_s": 0.5, "event_every_s": 0.25}
    run["runtime"] = {"duration_s": 1.5}
    return _record(run, tmp_path_factory.mktemp("synthetic"))
