"""The release build: `python -m build` makes an sdist and a wheel; each installs into its own clean venv and records a Run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
_PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
DIST = _PROJECT["name"].replace("-", "_")
VERSION = _PROJECT["version"]
PACKAGES = ("fastsim_recording_format", "fastsim_record", "fastsim_contract", "fastsim_embedded")

# What a checkout holds that a release build never sees: VCS data, venvs, build output, caches
# and recordings.  The build runs on a copy, so the shared checkout gets no egg-info or build/.
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis",
    "out", "_work", "*.fsr", "*.incomplete",
)

# The files a user needs, beyond the Python modules, to build the sdist and follow the README.
SDIST_REQUIRED = (
    "PKG-INFO",
    "pyproject.toml",
    "LICENSE",
    "README.md",
    "docs/fsr-format.md",
    "contracts/record-config.schema.json",
    "src/fastsim_record/py.typed",
    "src/fastsim_contract/py.typed",
    "src/fastsim_embedded/py.typed",
    "src/fastsim_embedded/backends/assets/droid_like.xml",
    "examples/minimal/run.yaml",
)

EXAMPLE_RUN = "examples/minimal/run.yaml"

# Every entry point the distribution registers, exactly as the README lists them: the
# plugin's two under the names the plugin README gives (`fastsim.record`), and, until the
# host has its own distribution, the host's two and the `fsr` script.
REGISTERED = {
    "fastsim.components": {"fastsim.record": "fastsim_record.config.catalog:CATALOG"},
    "fastsim.plugins": {"fastsim.record": "fastsim_record.bootstrap:create_plugin"},
    "fastsim.hosts": {
        "embedded": "fastsim_embedded.cli.record:COMMAND",
        "embedded-replay": "fastsim_embedded.cli.replay:COMMAND",
        "gymnasium": "fastsim_embedded.gymnasium_host.recorder:HOST",
    },
    "console_scripts": {"fsr": "fastsim_record.cli:main"},
}


def _entry_point_groups(text: str) -> dict[str, dict[str, str]]:
    """A wheel's ``entry_points.txt`` as {group: {name: value}}."""
    import configparser

    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return {group: dict(parser[group]) for group in parser.sections()}

# Run inside the installed venv with `python -I`: no PYTHONPATH, no user site, no cwd on sys.path.
PROBE = r"""
import importlib.metadata as md
import json
import sys

groups = {g: {ep.name: ep.value for ep in md.entry_points(group=g)}
          for g in ("fastsim.components", "fastsim.plugins", "fastsim.hosts", "console_scripts")}
catalog = md.entry_points(group="fastsim.components")["fastsim.record"].load()
factory = md.entry_points(group="fastsim.plugins")["fastsim.record"].load()
import fastsim_contract, fastsim_embedded, fastsim_record
print(json.dumps({
    "python": list(sys.version_info[:2]),
    "prefix": sys.prefix,
    "groups": groups,
    "component_id": catalog.component_id,
    "factory_callable": callable(factory),
    "version": md.version("fastsim-plugin-record"),
    "files": {m.__name__: m.__file__ for m in (fastsim_record, fastsim_contract, fastsim_embedded)},
}))
"""


class Release(NamedTuple):
    """One `python -m build` of a copy of the checkout: the copy, the sdist and the wheel."""

    source: Path
    sdist: Path
    wheel: Path


def _clean_env() -> dict[str, str]:
    """The caller's environment without anything that could put the source tree on sys.path."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONSAFEPATH"}}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _run(*cmd: str | Path, cwd: Path) -> str:
    """Run a command to completion; fail the test with its output if it exits non-zero."""
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=_clean_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, (
        f"{' '.join(str(c) for c in cmd[:4])} exited {done.returncode}:\n"
        f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


def _is_within(path: Path, parent: Path) -> bool:
    """Whether `path` lies inside `parent`, after resolving links."""
    return path.resolve().is_relative_to(parent.resolve())


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    """Build the sdist, then the wheel from the sdist, exactly as `python -m build` does for a release."""
    base = tmp_path_factory.mktemp("release")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)
    dist = base / "dist"
    log = _run(sys.executable, "-m", "build", "--outdir", dist, source, cwd=base)
    sdist, wheel = dist / f"{DIST}-{VERSION}.tar.gz", dist / f"{DIST}-{VERSION}-py3-none-any.whl"
    assert f"Successfully built {sdist.name} and {wheel.name}" in log
    assert sorted(p.name for p in dist.iterdir()) == sorted([sdist.name, wheel.name])
    return Release(source, sdist, wheel)


@pytest.mark.slow
def test_sdist_carries_what_a_user_needs_to_build_it(release: Release) -> None:
    """The sdist holds the license, README, format spec, JSON Schema, py.typed and every example, and no debris."""
    top = f"{DIST}-{VERSION}/"
    with tarfile.open(release.sdist) as sdist:
        members = {m.name.removeprefix(top): m for m in sdist.getmembers() if m.isfile()}
        missing = [name for name in SDIST_REQUIRED if name not in members]
        assert missing == []
        examples = sorted(
            p.relative_to(release.source).as_posix()
            for p in (release.source / "examples").rglob("*") if p.is_file()
        )
        assert EXAMPLE_RUN in examples
        assert [n for n in examples if n not in members] == []
        modules = sorted(
            p.relative_to(release.source).as_posix()
            for package in PACKAGES for p in (release.source / "src" / package).rglob("*.py")
        )
        assert [n for n in modules if n not in members] == []
        for name in ("LICENSE", "README.md", "docs/fsr-format.md", "contracts/record-config.schema.json"):
            extracted = sdist.extractfile(members[name])
            assert extracted is not None
            assert extracted.read() == (release.source / name).read_bytes(), name
        pkg_info_file = sdist.extractfile(members["PKG-INFO"])
        assert pkg_info_file is not None
        pkg_info = pkg_info_file.read().decode()
    debris = [
        n for n in members
        if n.startswith("tests/") or "__pycache__" in n or n.endswith((".pyc", ".fsr", ".incomplete"))
    ]
    assert debris == []
    assert "License-Expression: Apache-2.0" in pkg_info.splitlines()
    assert "License-File: LICENSE" in pkg_info.splitlines()
    assert "Requires-Python: <3.13,>=3.11" in pkg_info.splitlines()


@pytest.mark.slow
def test_wheel_carries_the_packages_license_and_entry_points(release: Release) -> None:
    """The wheel holds the three packages with py.typed, the license file and both entry point groups, nothing else."""
    info = f"{DIST}-{VERSION}.dist-info"
    with zipfile.ZipFile(release.wheel) as wheel:
        names = set(wheel.namelist())
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        metadata = wheel.read(f"{info}/METADATA").decode().splitlines()
    assert {name.split("/")[0] for name in names} == {*PACKAGES, info}
    assert {f"{package}/py.typed" for package in PACKAGES} <= names
    assert f"{info}/licenses/LICENSE" in names
    assert "License-Expression: Apache-2.0" in metadata
    assert _entry_point_groups(entry_points) == REGISTERED


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sdist", "wheel"])
def test_installed_artifact_records_and_validates_a_run(release: Release, kind: str, tmp_path: Path) -> None:
    """Each artifact in its own clean venv: pip check, both entry points, `fsr record` then `fsr validate` from outside the source tree."""
    artifact = release.sdist if kind == "sdist" else release.wheel
    env_dir = tmp_path / "venv"
    # No ensurepip: the running interpreter's pip works on the venv through `--python` (it
    # re-runs itself under the venv's interpreter), which saves installing pip twice per Python.
    venv.EnvBuilder(with_pip=False, system_site_packages=False, clear=True).create(env_dir)
    assert "include-system-site-packages = false" in (env_dir / "pyvenv.cfg").read_text()
    python, fsr = env_dir / "bin" / "python", env_dir / "bin" / "fsr"
    work = tmp_path / "work"
    work.mkdir()
    assert not _is_within(work, ROOT)

    # Normal build isolation: pip builds the sdist in its own environment, as a user's pip would.
    # --no-compile only skips writing .pyc files for the dependencies (half the install's CPU).
    pip = (sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check")
    _run(*pip, "install", "--quiet", "--no-compile", artifact, cwd=work)
    assert "No broken requirements found" in _run(*pip, "check", cwd=work)

    report = json.loads(_run(python, "-I", "-c", PROBE, cwd=work))
    assert report["python"] == list(sys.version_info[:2])
    assert Path(report["prefix"]).resolve() == env_dir.resolve()
    assert report["version"] == VERSION
    for group in ("fastsim.components", "fastsim.plugins", "fastsim.hosts"):
        assert report["groups"][group] == REGISTERED[group], group
    assert report["groups"]["console_scripts"]["fsr"] == "fastsim_record.cli:main"
    assert report["component_id"] == "plugin://fastsim/record"
    assert report["factory_callable"] is True
    for module, location in report["files"].items():
        assert _is_within(Path(location), env_dir), f"{module} imported from {location}"
        assert not _is_within(Path(location), ROOT), f"{module} imported from the source tree"

    # The example Run as the sdist ships it, recorded by the installed console script.
    with tarfile.open(release.sdist) as sdist:
        shipped = sdist.extractfile(f"{DIST}-{VERSION}/{EXAMPLE_RUN}")
        assert shipped is not None
        (work / "run.yaml").write_bytes(shipped.read())
    assert fsr.is_file()
    assert str(python) in "\n".join(fsr.read_text().splitlines()[:3])  # the venv's interpreter runs it
    recorded = _run(fsr, "record", "run.yaml", "--output-dir", "out", "--duration", "2", cwd=work)
    assert "committed out/episode.fsr" in recorded
    validated = _run(fsr, "validate", "out/episode.fsr", "--json", cwd=work)
    receipt = json.loads(validated)
    assert receipt["profile"] == "structural"
    assert receipt["validated_bytes"] == (work / "out" / "episode.fsr").stat().st_size
