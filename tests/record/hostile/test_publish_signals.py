"""A stop signal that reaches an offline command while it publishes OUT, or after: the
publish completes and the command keeps its own exit code, so exit 128 + N always means
that nothing was published (``_signals`` row 5, ``_staging`` row 3)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from fastsim_record.cli import _signals, _staging

    moment, folder = sys.argv[1], Path(sys.argv[2])
    _signals.install()
    out, tmp = folder / "out.bin", folder / ".out.bin.exporting-1"
    tmp.write_bytes(b"complete")
    real_fsync_dir = _staging.fsync_dir

    def fsync_dir_then_signal(path, **kwargs):
        real_fsync_dir(path, **kwargs)
        if moment == "during publish":
            os.kill(os.getpid(), signal.SIGINT)  # held by deferred(), raised at its end before the fix

    _staging.fsync_dir = fsync_dir_then_signal
    try:
        _staging.publish(tmp, out, overwrite=False)
        if moment == "after publish":
            os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # give the interpreter many chances to run a handler
            pass
    except _signals.Interrupted as exc:
        print(f"interrupted by {exc.name}", file=sys.stderr)
        sys.exit(exc.exit_code)
    print(out.read_bytes().decode())
""")


@pytest.mark.parametrize("moment", ["during publish", "after publish"])
def test_a_signal_during_or_after_the_publish_never_turns_a_published_out_into_a_failure(
    tmp_path: Path, moment: str,
) -> None:
    """SIGINT held by the publish, or SIGTERM just after it: OUT is in place and the exit code is 0."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, moment, str(tmp_path)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert (done.returncode, done.stdout.strip()) == (0, "complete"), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
