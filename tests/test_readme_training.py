"""The README's "From a sweep to a training loop" runs as written: its shell block with the
venv's `fsr` in a temporary copy of `examples/training`, then its Python block (issue 25)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.readme_blocks import README, ROOT, SHELL, blocks, commands, section

HEADING = "## From a sweep to a training loop"
BIN = str(Path(sys.executable).parent)  # the venv's `fsr` and `python`


def test_the_training_section_runs_as_written(tmp_path: Path) -> None:
    """Sweep, resume, index, move, export; then the numpy loop over the moved index's Dataset prints what the README says."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("av")
    text = section(README.read_text(), HEADING)
    found = blocks(text)
    assert [b.language for b in found] == ["bash", "python"], "the section has one shell and one Python block"
    shell, code = found
    assert shell.language in SHELL
    shutil.copytree(ROOT / "examples" / "training", tmp_path / "examples" / "training")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "MUJOCO_GL": "egl"}
    for command in commands(shell):
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    assert not (tmp_path / "data").exists()
    assert len(list((tmp_path / "training-set").glob("*.fsr"))) == 15
    info = json.loads((tmp_path / "lerobot" / "training-set" / "meta" / "info.json").read_text())
    assert (info["total_episodes"], info["total_frames"]) == (15, 150)  # the section's sentence
    assert "action" in info["features"]
    ran = subprocess.run([sys.executable, "-c", code.text], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = ran.stdout.splitlines()
    promised = text.split("It prints `", 1)[1].split("`", 1)[0]
    assert lines[0] == promised
    assert [line.split(":")[0] for line in lines[1:]] == ["epoch 0", "epoch 1", "epoch 2"]
    assert all(float(line.split()[-1]) >= 0.0 for line in lines[1:])
