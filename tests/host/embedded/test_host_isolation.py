"""The embedded host finds Record only through entry points and imports no simulator SDK."""

from __future__ import annotations

import subprocess
import sys


def test_host_modules_import_neither_the_plugin_nor_a_simulator() -> None:
    """Importing the host (session, compiler, CLI, synthetic backend) loads no fastsim_record, mujoco or cv2."""
    probe = (
        "import sys\n"
        "import fastsim_embedded.cli.record, fastsim_embedded.session.session, fastsim_embedded.session.compile\n"
        "from fastsim_embedded.backends import create_backend\n"
        "from fastsim_embedded.backends.base import BackendSpec\n"
        "create_backend('synthetic', BackendSpec())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastsim_record', 'mujoco', 'cv2')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_replay_imports_only_the_format_never_the_plugin() -> None:
    """Importing Replay (module and CLI) and decoding a render.state payload loads no fastsim_record."""
    probe = (
        "import sys\n"
        "import numpy as np\n"
        "import fastsim_embedded.render.replay, fastsim_embedded.cli.replay\n"
        "from fastsim_recording_format.codecs.render_state import encode_render_state\n"
        "state = {'rigid/box/pose': np.zeros(7), 'rigid/box/linear_velocity': np.zeros(3),\n"
        "         'rigid/box/angular_velocity': np.zeros(3)}\n"
        "fastsim_embedded.render.replay.decode_render_state(encode_render_state(state))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'fastsim_record'))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_host_module_names_the_plugin_in_an_import() -> None:
    """No module of fastsim_embedded imports fastsim_record, not even lazily inside a function."""
    import ast
    from pathlib import Path

    import fastsim_embedded

    offenders = []
    for path in Path(fastsim_embedded.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "fastsim_record"]
    assert offenders == []
