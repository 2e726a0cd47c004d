"""How the ``fsr`` console script ends: with its command's exit code and the interpreter's
own guarantees (stdout flushed, non-daemon threads joined, ``atexit`` handlers run), but
without the native libraries' static destructors, where Arrow's thread pools can abort a
finished command (apache/arrow#34314: exit -6 after ``fsr index`` had written the index)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import atexit, sys, threading, time
    from pathlib import Path
    from fastsim_record.cli import main

    folder = Path(sys.argv[1])
    atexit.register(lambda: (folder / "atexit").write_text("ran"))
    def late():
        time.sleep(0.5)
        (folder / "thread").write_text("joined")
    threading.Thread(target=late).start()  # non-daemon: the interpreter would wait for it
    sys.argv = ["fsr", *sys.argv[2:]]
    sys.exit(main())
""")


def _fsr_as_console_script(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-c", SCRIPT, str(folder), *argv],
                          capture_output=True, text=True, timeout=300, env=env)


def test_the_console_script_keeps_the_interpreters_exit_guarantees(tmp_path: Path) -> None:
    """fsr index (pyarrow loaded): exit 0, its line printed, threads joined and atexit run before the end."""
    assert _fsr_as_console_script(tmp_path, "synth", str(tmp_path / "a.fsr"), "--records", "20").returncode == 0
    done = _fsr_as_console_script(tmp_path, "index", str(tmp_path / "a.fsr"), "-o", str(tmp_path / "i.parquet"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("indexed 1 file"), done.stdout
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "thread").read_text() == "joined"
    assert "terminate called" not in done.stderr


def test_a_failed_command_keeps_its_exit_code(tmp_path: Path) -> None:
    """A missing input: exit 2 (the documented code), one line, atexit still run."""
    done = _fsr_as_console_script(tmp_path, "validate", str(tmp_path / "missing.fsr"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert (tmp_path / "atexit").read_text() == "ran"
