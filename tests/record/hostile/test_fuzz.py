"""Seeded mutation fuzzing of real recordings through info, validate, cat, frames, recover, replay.

CI runs it for about 18 s of fuzzing (``FSR_FUZZ_SECONDS``, default 12 for the plain
commands, plus half that for replay) after about 6 s of recording its corpus.  A longer run, reproducible by its seed:

    FSR_FUZZ_SECONDS=600 FSR_FUZZ_SEED=7 MUJOCO_GL=egl python -m pytest -q tests/record/hostile/test_fuzz.py

It asserts: no traceback, only documented exit codes, no hang (30 s per call), and a peak
RSS within 64 MB + 4x the largest corpus file above the same process's peak after one
warm-up pass over the unmutated files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FSR = Path(sys.executable).with_name("fsr")
WORKER = Path(__file__).with_name("fuzz_worker.py")
SECONDS = float(os.environ.get("FSR_FUZZ_SECONDS", "12"))
SEED = int(os.environ.get("FSR_FUZZ_SEED", "20261203"))
MB = 1000 * 1000


def _record(argv: list[str]) -> None:
    proc = subprocess.run([str(FSR), *argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real recordings: a DROID-like episode with JPEG cameras and a render.state source."""
    out = tmp_path_factory.mktemp("corpus")
    _record(["record", str(ROOT / "examples/droid-like/run.yaml"), "--output-dir", str(out), "--duration", "0.3"])
    _record(["record", str(ROOT / "examples/render-once/run.yaml"), "--output-dir", str(out), "--duration", "0.3"])
    return {"episode": out / "episode.fsr", "source": out / "source.fsr"}


def _fuzz(tmp_path: Path, files: list[Path], seconds: float, *extra: str) -> dict[str, object]:
    work = tmp_path / "work"
    work.mkdir()
    report = tmp_path / "report.json"
    subprocess.run(
        [sys.executable, str(WORKER), str(report), str(SEED), str(seconds), str(work), *map(str, files), *extra],
        check=True, timeout=seconds + 300, env={**os.environ, "MUJOCO_GL": "egl"},
    )
    result: dict[str, object] = json.loads(report.read_text())
    return result


def _check(result: dict[str, object]) -> None:
    findings = result["findings"]
    assert findings == [], json.dumps(findings, indent=1)[:6000]
    assert isinstance(result["mutants"], int)
    assert result["mutants"] > 0
    bound = 64 * MB + 4 * int(str(result["max_size"]))
    assert int(str(result["peak"])) - int(str(result["peak_warm"])) <= bound, result


def test_mutants_never_crash_hang_or_balloon_the_reading_commands(tmp_path: Path, corpus: dict[str, Path]) -> None:
    """info/validate/cat/frames/recover on seeded mutants: documented exits only, bounded memory."""
    result = _fuzz(tmp_path, [corpus["episode"], corpus["source"]], SECONDS)
    _check(result)
    codes = result["codes"]
    assert isinstance(codes, dict)
    assert set(codes["validate"]) >= {"1"}


def test_mutated_render_state_sources_never_crash_replay(tmp_path: Path, corpus: dict[str, Path]) -> None:
    """fsr replay of seeded mutants of a render.state source: documented exits only, bounded memory."""
    run = str(ROOT / "examples/render-replay/run.yaml")
    result = _fuzz(tmp_path, [corpus["source"]], SECONDS / 2, "--replay-run", run)
    _check(result)
