"""Every command in the README's shell blocks runs as written, or is listed here with the
reason it is not run (issue 25: "README and docs drift").

The rule for "cheap": every command of a `bash`/`sh`/`console` block runs, in README order
within its block, in a fresh copy of a workspace that holds `examples/`, `acceptance/`, a
`.venv` that is this venv, and `out/episode.fsr` made by the README's own first command
(its `fsr record` and `fsr info` steps). `fsr`, `python` and `.venv/bin/...` are this
venv's, the environment is the test's without `MUJOCO_GL` (a line that needs it says so).
A command is not run only when `NOT_RUN` below names it, for one of the reasons in
`REASONS`: an install, the test suite itself, a run measured above 10 s on this machine, a
server or display this machine does not have, or a file only such a command makes.
The training section's commands are run by `tests/test_readme_training.py`. Every
`fsr SUB` the README names, in blocks or inline, answers `fsr SUB --help` with every option
the README gives it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.readme_blocks import README, ROOT, SHELL, Block, blocks, commands, section

from fastsim_record.cli import main

pytestmark = pytest.mark.slow

TEXT = README.read_text()
TRAINING = section(TEXT, "## From a sweep to a training loop")
VENV = Path(sys.executable).parent.parent
INSTALL = "an install: CI (.ci/run) runs the two first commands in fresh venvs"
SUITE = "the test suite (or one of its files) itself"
LONG = "a long run (measured on this machine)"
NO_SERVER = "needs a server or a display this machine does not have"
NEEDS = "needs the output of a command above that is not run"
REASONS = (INSTALL, SUITE, LONG, NO_SERVER, NEEDS)

NOT_RUN: dict[str, tuple[str, str]] = {
    "python3 -m venv .venv": (INSTALL, ""),
    ".venv/bin/pip install ./src/fastsim-recording-format './src/fastsim-embedded[sim]' ./src/fastsim-plugin-record":
        (INSTALL, ""),
    ".venv/bin/pip install -c constraints/test.txt ./src/fastsim-recording-format ./src/fastsim-embedded "
    "'./src/fastsim-plugin-record[test]'": (INSTALL, ""),
    "MUJOCO_GL=egl .venv/bin/python -m pytest -q": (SUITE, "the whole suite"),
    "FSR_FUZZ_SECONDS=600 FSR_FUZZ_SEED=7 MUJOCO_GL=egl .venv/bin/python -m pytest -q "
    "tests/record/hostile/test_fuzz.py": (SUITE, "600 s of fuzzing"),
    "fsr record examples/droid-like/run.yaml --episodes 8 --jobs 2 --output-dir out":
        (LONG, "8 episodes like the first command's (7.9 s each here), 2 at a time"),
    "fsr validate out/ s3://robot-data/2026-12-03/ --jobs 2": (NO_SERVER, "an S3 bucket"),
    "pip install 'fastsim-plugin-record[export]'": (INSTALL, ""),
    "rerun episode.rrd": (NO_SERVER, "the Rerun viewer needs a display"),
    "python3.11 -m venv /tmp/lerobot-venv": (INSTALL, "lerobot and torch: 8.3 GB"),
    "/tmp/lerobot-venv/bin/pip install 'lerobot==0.4.4'": (INSTALL, "lerobot and torch: 8.3 GB"),
    "FSR_LEROBOT_PYTHON=/tmp/lerobot-venv/bin/python MUJOCO_GL=egl .venv/bin/python -m pytest -q "
    "tests/record/export/test_lerobot.py": (SUITE, "and it needs the lerobot venv above"),
    "python3.12 -m venv /tmp/lerobot312": (INSTALL, "lerobot[pusht] and torch: 5.7 GB"),
    "/tmp/lerobot312/bin/pip install 'lerobot[pusht]==0.6.1' ./src/fastsim-recording-format "
    "'./src/fastsim-embedded[gym]' './src/fastsim-plugin-record[lerobot]'": (INSTALL, "lerobot[pusht] and torch: 5.7 GB"),
    "FSR_LEROBOT_PYTHON=/tmp/lerobot312/bin/python MUJOCO_GL=egl .venv/bin/python -m pytest -q "
    "tests/record/gym/test_pusht.py": (SUITE, "and it needs the lerobot venv above"),
    "pip install 'fastsim-plugin-record[gym]'": (INSTALL, ""),
    "MUJOCO_GL=egl python examples/gym/random_policy.py --out out/cheetah": (LONG, "3 HalfCheetah episodes: 54 s"),
    "MUJOCO_GL=egl python examples/gym/random_policy.py --vector 4 --out out/cheetah-vector":
        (LONG, "4 HalfCheetah sub-envs, longer than the line above"),
    'fsr export out/cheetah --to lerobot -o dataset/cheetah --task "run forward"': (NEEDS, "out/cheetah"),
    "fsr replay out/source.fsr examples/render-replay/run.yaml --output-dir out": (LONG, "16 s"),
    "fsr info out/replay.fsr": (NEEDS, "out/replay.fsr, from the replay above"),
}


def _shell_blocks() -> list[Block]:
    """The README's shell blocks, except the training section's (run by its own test)."""
    return [b for b in blocks(TEXT) if b.language in SHELL and b.text not in TRAINING]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MUJOCO_GL"}
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(command: str, cwd: Path) -> None:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, f"README command failed (exit {done.returncode}): {command}\n" \
                                 f"{done.stdout[-1500:]}{done.stderr[-1500:]}"


def test_every_readme_command_is_run_or_listed_with_its_reason() -> None:
    """Each command is cheap or in NOT_RUN with a known reason; NOT_RUN names only commands the README has."""
    written = {c for b in blocks(TEXT) if b.language in SHELL for c in commands(b)}
    assert set(NOT_RUN) <= written, f"NOT_RUN lists commands the README no longer has: {set(NOT_RUN) - written}"
    assert all(reason in REASONS for reason, _ in NOT_RUN.values())
    runnable = [c for b in _shell_blocks() for c in commands(b) if c not in NOT_RUN]
    assert len(runnable) >= 12  # the rule leaves most of the README's commands to run


def _fsr_uses() -> dict[str, set[str]]:
    """Every `fsr SUB` the README writes (blocks and inline code), with the options it gives it."""
    spans = re.findall(r"`(fsr [^`]+)`", TEXT)
    spans += [c for b in blocks(TEXT) if b.language in SHELL for c in commands(b)]
    uses: dict[str, set[str]] = {}
    for span in spans:
        m = re.search(r"(?:^|[\s/])fsr (\w+)(.*)", span)
        if m is not None:
            uses.setdefault(m.group(1), set()).update(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", m.group(2)))
    return uses


def test_every_fsr_subcommand_and_option_the_readme_names_exists(capsys: pytest.CaptureFixture[str]) -> None:
    """`fsr SUB --help` exits 0 for each SUB the README names, and lists every option the README gives it."""
    uses = _fsr_uses()
    assert {"record", "info", "index", "export", "recover"} <= set(uses)
    for sub, options in sorted(uses.items()):
        with pytest.raises(SystemExit) as done:
            main([sub, "--help"])
        shown = capsys.readouterr().out
        assert done.value.code == 0, f"fsr {sub} --help exited {done.value.code}"
        assert [o for o in sorted(options) if o not in shown] == [], f"fsr {sub}: options the README names"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/, acceptance/, .venv, and out/episode.fsr made by the README's first command's runnable steps."""
    root = tmp_path_factory.mktemp("readme") / "checkout"
    root.mkdir()
    for folder in ("examples", "acceptance"):
        shutil.copytree(ROOT / folder, root / folder)
    (root / ".venv").symlink_to(VENV)
    first = _shell_blocks()[0]
    assert "fsr record examples/droid-like/run.yaml --output-dir out" in first.text
    for command in commands(first):
        if command not in NOT_RUN:
            _run(command, root)
    assert (root / "out" / "episode.fsr").is_file()
    return root


@pytest.mark.parametrize("block", _shell_blocks(), ids=lambda b: f"README-line-{b.line}")
def test_the_readme_block_runs_as_written(block: Block, workspace: Path, tmp_path: Path) -> None:
    """The block's commands that are not in NOT_RUN run in order in a fresh copy of the workspace, each exit 0."""
    if block == _shell_blocks()[0]:
        return  # its runnable steps made the workspace
    copy = tmp_path / "checkout"
    shutil.copytree(workspace, copy, symlinks=True)
    for command in commands(block):
        if command not in NOT_RUN:
            _run(command, copy)
