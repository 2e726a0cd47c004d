"""The embedded host finds Record only through entry points and imports no simulator SDK."""

from __future__ import annotations

import subprocess
import sys


def test_host_modules_import_neither_the_plugin_nor_a_simulator() -> None:
    """Importing the host (session, compiler, CLI, synthetic backend) loads no fastsim_record, mujoco or cv2."""
    probe = (
        "import sys\n"
        "import fastsim_embedded.cli_record, fastsim_embedded.session, fastsim_embedded.compile\n"
        "from fastsim_embedded.backends import create_backend\n"
        "from fastsim_embedded.backends.base import BackendSpec\n"
        "create_backend('synthetic', BackendSpec())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastsim_record', 'mujoco', 'cv2')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
