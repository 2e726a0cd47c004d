"""The built wheel in an isolated venv: pip check clean, entry points discoverable, no simulator SDK."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import importlib.metadata as md
import importlib.util
import json
import sys

SDKS = {"mujoco", "isaaclab", "isaacsim", "omni", "pxr", "pybullet", "sapien", "genesis", "dm_control", "gymnasium"}
groups = {g: {ep.name: ep.value for ep in md.entry_points(group=g)}
          for g in ("fastsim.components", "fastsim.plugins")}
catalog = md.entry_points(group="fastsim.components")["fastsim.record"].load()
plugin_module = groups["fastsim.plugins"]["fastsim.record"].split(":")[0]
has_plugin = importlib.util.find_spec(plugin_module) is not None
factory_callable = None
if has_plugin:
    factory_callable = callable(md.entry_points(group="fastsim.plugins")["fastsim.record"].load())
print(json.dumps({
    "groups": groups,
    "component_id": catalog.component_id,
    "versions": list(catalog.versions),
    "has_plugin_module": has_plugin,
    "factory_callable": factory_callable,
    "mujoco_imported": "mujoco" in sys.modules,
    "simulator_sdks": sorted(m for m in sys.modules if m.split(".")[0] in SDKS),
    "embedded_imported": "fastsim_embedded" in sys.modules,
    "location": __import__("fastsim_record").__file__,
}))
"""


def _run(*cmd: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{cmd[0]} {cmd[1:3]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_wheel_installs_isolated_with_discoverable_entry_points(tmp_path: Path) -> None:
    """Wheel -> fresh venv (no system site-packages): pip check clean, both entry points found, no SDK imported."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    _run(sys.executable, "-m", "build", "--wheel", "--outdir", tmp_path / "dist", source)
    (wheel,) = (tmp_path / "dist").glob("fastsim_plugin_record-0.3.12-*.whl")

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    assert "include-system-site-packages = false" in (env_dir / "pyvenv.cfg").read_text()
    _run(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel)
    assert "No broken requirements found" in _run(python, "-m", "pip", "check")

    report = json.loads(_run(python, "-c", PROBE, cwd=tmp_path))
    assert report["groups"]["fastsim.components"] == {"fastsim.record": "fastsim_record.config.catalog:CATALOG"}
    assert report["groups"]["fastsim.plugins"] == {"fastsim.record": "fastsim_record.bootstrap:create_plugin"}
    assert report["component_id"] == "plugin://fastsim/record"
    assert report["versions"][0] == "0.3.0"
    assert report["versions"][-1] == "0.3.12"
    assert str(env_dir) in report["location"]
    assert report["has_plugin_module"] is True
    assert report["factory_callable"] is True
    assert report["mujoco_imported"] is False
    assert report["simulator_sdks"] == []
    assert report["embedded_imported"] is False
