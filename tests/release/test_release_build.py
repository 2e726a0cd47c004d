"""The release build of the three distributions, each from its own folder, as `python -m build` makes it.

Each distribution's sdist and wheel are built from a copy of its folder under ``src/``.  The
tests check what each carries and exactly which entry points it registers, then install
them into clean venvs from outside the checkout: all three together (sdists, then wheels),
the host with only the format, and the format wheel alone, which must read and validate a
recording with nothing else installed.
"""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from tests.distributions import FOLDERS, PACKAGES, ROOT, project

# What a folder holds that a release build never sees: build output, caches and recordings.
_NOT_SOURCE = shutil.ignore_patterns(
    ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "*.fsr", "*.incomplete",
)

EXAMPLE_RUN = ROOT / "examples" / "minimal" / "run.yaml"

# Every entry point each distribution registers, exactly: the plugin's two under the names
# the plugin README gives (`fastsim.record`) and `fsr`; the host's three; the format none.
REGISTERED: dict[str, dict[str, dict[str, str]]] = {
    "fastsim-recording-format": {},
    "fastsim-embedded": {
        "fastsim.hosts": {
            "embedded": "fastsim_embedded.cli.record:COMMAND",
            "embedded-replay": "fastsim_embedded.cli.replay:COMMAND",
            "gymnasium": "fastsim_embedded.gymnasium_host.recorder:HOST",
        },
    },
    "fastsim-plugin-record": {
        "fastsim.components": {"fastsim.record": "fastsim_record.config.catalog:CATALOG"},
        "fastsim.plugins": {"fastsim.record": "fastsim_record.bootstrap:create_plugin"},
        "console_scripts": {"fsr": "fastsim_record.cli:main"},
    },
}
GROUPS = ("fastsim.components", "fastsim.plugins", "fastsim.hosts")

# Run inside an installed venv with `python -I`: no PYTHONPATH, no user site, no cwd on sys.path.
# It loads the catalog and the factory first, in a fresh interpreter, so it sees what they import.
PROBE = r"""
import importlib.metadata as md
import importlib.util
import json
import sys

SDKS = {"mujoco", "isaaclab", "isaacsim", "omni", "pxr", "pybullet", "sapien", "genesis", "dm_control", "gymnasium"}
groups = {g: {ep.name: ep.value for ep in md.entry_points(group=g)}
          for g in ("fastsim.components", "fastsim.plugins", "fastsim.hosts")}
report = {"python": list(sys.version_info[:2]), "prefix": sys.prefix, "groups": groups,
          "distributions": sorted(d.metadata["Name"] for d in md.distributions())}
if "fastsim.record" in groups["fastsim.components"]:
    catalog = md.entry_points(group="fastsim.components")["fastsim.record"].load()
    factory = md.entry_points(group="fastsim.plugins")["fastsim.record"].load()
    report.update(component_id=catalog.component_id, versions=list(catalog.versions),
                  factory_callable=callable(factory),
                  simulator_sdks=sorted(m for m in sys.modules if m.split(".")[0] in SDKS),
                  host_imported="fastsim_embedded" in sys.modules)
report["hosts_loaded"] = sorted(ep.name for ep in md.entry_points(group="fastsim.hosts") if ep.load() is not None)
report["files"] = {name: importlib.util.find_spec(name).origin
                   for name in ("fastsim_recording_format", "fastsim_contract", "fastsim_embedded", "fastsim_record")
                   if importlib.util.find_spec(name) is not None}
print(json.dumps(report))
"""


class Release(NamedTuple):
    """One distribution's `python -m build`: its copied folder, its sdist and its wheel."""

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


def _entry_point_groups(text: str) -> dict[str, dict[str, str]]:
    """A wheel's ``entry_points.txt`` as {group: {name: value}}."""
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return {group: dict(parser[group]) for group in parser.sections()}


def _stem(name: str) -> str:
    return f"{name.replace('-', '_')}-{project(name)['version']}"


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Release]:
    """Build each distribution's sdist, then its wheel from the sdist, as `python -m build` does."""
    base = tmp_path_factory.mktemp("release")
    dist = base / "dist"
    built: dict[str, Release] = {}
    for name, folder in FOLDERS.items():
        source = base / name
        shutil.copytree(folder, source, ignore=_NOT_SOURCE)
        log = _run(sys.executable, "-m", "build", "--outdir", dist, source, cwd=base)
        sdist, wheel = dist / f"{_stem(name)}.tar.gz", dist / f"{_stem(name)}-py3-none-any.whl"
        assert f"Successfully built {sdist.name} and {wheel.name}" in log
        built[name] = Release(source, sdist, wheel)
    assert sorted(p.name for p in dist.iterdir()) == sorted(
        p.name for r in built.values() for p in (r.sdist, r.wheel))
    return built


def _venv(path: Path) -> Path:
    """A clean venv without pip (the running interpreter's pip installs into it through --python)."""
    venv.EnvBuilder(with_pip=False, system_site_packages=False, clear=True).create(path)
    assert "include-system-site-packages = false" in (path / "pyvenv.cfg").read_text()
    return path / "bin" / "python"


def _install(python: Path, *artifacts: Path, cwd: Path) -> None:
    pip = (sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check")
    # --no-compile only skips writing .pyc files for the dependencies (half the install's CPU).
    _run(*pip, "install", "--quiet", "--no-compile", *artifacts, cwd=cwd)
    assert "No broken requirements found" in _run(*pip, "check", cwd=cwd)


def _probe(python: Path, cwd: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(_run(python, "-I", "-c", PROBE, cwd=cwd))
    assert report["python"] == list(sys.version_info[:2])
    for module, location in report["files"].items():
        assert not _is_within(Path(location), ROOT), f"{module} imported from the source tree"
        assert _is_within(Path(location), Path(str(report["prefix"]))), f"{module} imported from {location}"
    return report


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FOLDERS))
def test_sdist_carries_its_folder_and_no_debris(releases: dict[str, Release], name: str) -> None:
    """Each sdist holds its pyproject, README, LICENSE, every module with py.typed, and no tests or recordings."""
    release = releases[name]
    top = f"{_stem(name)}/"
    with tarfile.open(release.sdist) as sdist:
        members = {m.name.removeprefix(top): m for m in sdist.getmembers() if m.isfile()}
        for required in ("PKG-INFO", "pyproject.toml", "LICENSE", "README.md"):
            assert required in members, required
            if required != "PKG-INFO":
                extracted = sdist.extractfile(members[required])
                assert extracted is not None
                assert extracted.read() == (release.source / required).read_bytes(), required
        modules = sorted(p.relative_to(release.source).as_posix()
                         for package in PACKAGES[name] for p in (release.source / package).rglob("*.py"))
        assert modules
        assert [n for n in modules if n not in members] == []
        assert [f"{p}/py.typed" for p in PACKAGES[name] if f"{p}/py.typed" not in members] == []
        pkg_info_file = sdist.extractfile(members["PKG-INFO"])
        assert pkg_info_file is not None
        pkg_info = pkg_info_file.read().decode().splitlines()
    if name == "fastsim-embedded":
        assert "fastsim_embedded/backends/assets/droid_like.xml" in members
    debris = [n for n in members if n.startswith("tests/") or "__pycache__" in n
              or n.endswith((".pyc", ".fsr", ".incomplete"))]
    assert debris == []
    assert "License-Expression: Apache-2.0" in pkg_info
    assert "License-File: LICENSE" in pkg_info
    assert "Requires-Python: <3.13,>=3.11" in pkg_info


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FOLDERS))
def test_wheel_carries_its_packages_and_exactly_its_entry_points(releases: dict[str, Release], name: str) -> None:
    """Each wheel holds only its own packages, py.typed, the license, and exactly the entry points it owns."""
    info = f"{_stem(name)}.dist-info"
    with zipfile.ZipFile(releases[name].wheel) as wheel:
        names = set(wheel.namelist())
        entry_points = wheel.read(f"{info}/entry_points.txt").decode() if f"{info}/entry_points.txt" in names else ""
        metadata = wheel.read(f"{info}/METADATA").decode().splitlines()
    assert {n.split("/")[0] for n in names} == {*PACKAGES[name], info}
    assert {f"{package}/py.typed" for package in PACKAGES[name]} <= names
    assert f"{info}/licenses/LICENSE" in names
    assert "License-Expression: Apache-2.0" in metadata
    assert _entry_point_groups(entry_points) == REGISTERED[name]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sdist", "wheel"])
def test_the_three_install_together_and_record_and_validate_a_run(
    releases: dict[str, Release], kind: str, tmp_path: Path
) -> None:
    """All three in one clean venv: pip check, exact entry points, no SDK or host on loading the plugin, then `fsr record` and `fsr validate`."""
    work = tmp_path / "work"
    work.mkdir()
    assert not _is_within(work, ROOT)
    python = _venv(tmp_path / "venv")
    _install(python, *(getattr(r, kind) for r in releases.values()), cwd=work)

    report = _probe(python, work)
    expected = {g: {**REGISTERED["fastsim-plugin-record"].get(g, {}), **REGISTERED["fastsim-embedded"].get(g, {})}
                for g in GROUPS}
    assert report["groups"] == expected
    assert report["component_id"] == "plugin://fastsim/record"
    assert report["versions"][0] == "0.3.0"
    assert report["versions"][-1] == "0.3.12"
    assert report["factory_callable"] is True
    assert report["simulator_sdks"] == []
    assert report["host_imported"] is False
    assert report["hosts_loaded"] == ["embedded", "embedded-replay", "gymnasium"]
    assert set(report["files"]) == {
        "fastsim_recording_format", "fastsim_contract", "fastsim_embedded", "fastsim_record"}

    fsr = tmp_path / "venv" / "bin" / "fsr"
    assert fsr.is_file()
    assert str(python) in "\n".join(fsr.read_text().splitlines()[:3])  # the venv's interpreter runs it
    shutil.copy2(EXAMPLE_RUN, work / "run.yaml")
    recorded = _run(fsr, "record", "run.yaml", "--output-dir", "out", "--duration", "2", cwd=work)
    assert "committed out/episode.fsr" in recorded
    receipt = json.loads(_run(fsr, "validate", "out/episode.fsr", "--json", cwd=work))
    assert receipt["profile"] == "structural"
    assert receipt["validated_bytes"] == (work / "out" / "episode.fsr").stat().st_size


@pytest.mark.slow
def test_the_host_installs_with_only_the_format(releases: dict[str, Release], tmp_path: Path) -> None:
    """fastsim-embedded with only the format: pip check, exactly its three hosts, each loads, no plugin."""
    work = tmp_path / "work"
    work.mkdir()
    python = _venv(tmp_path / "venv")
    _install(python, releases["fastsim-recording-format"].wheel, releases["fastsim-embedded"].wheel, cwd=work)
    report = _probe(python, work)
    assert report["groups"] == {"fastsim.components": {}, "fastsim.plugins": {},
                                **REGISTERED["fastsim-embedded"]}
    assert report["hosts_loaded"] == ["embedded", "embedded-replay", "gymnasium"]
    assert "fastsim_record" not in report["files"]
    assert "fastsim-plugin-record" not in report["distributions"]


_READ = r"""
import json, sys
import fastsim_recording_format as fmt
from fastsim_recording_format.reading import open as open_recording
path = sys.argv[1]
receipt = fmt.validate(path)
with open_recording(path) as rec:
    info = rec.info
    channel = rec.channels()[0]
    values = rec.numeric(channel)
    print(json.dumps({"validated": receipt.validated_bytes, "completion": info.completion,
                      "ticks": int(len(values)), "modules": sorted(m for m in sys.modules if m.split(".")[0]
                      in {"fastsim_record", "fastsim_contract", "fastsim_embedded", "cv2", "simplejpeg", "pyarrow"})}))
"""


@pytest.mark.slow
def test_the_format_wheel_alone_reads_and_validates_a_recording(
    releases: dict[str, Release], tmp_path: Path
) -> None:
    """`pip install fastsim-recording-format` alone (numpy, attrs, crc32c) validates and reads a recording."""
    from fastsim_record.cli import main

    out = tmp_path / "recorded"
    assert main(["record", str(EXAMPLE_RUN), "--output-dir", str(out), "--duration", "1"]) == 0
    recording = out / "episode.fsr"

    work = tmp_path / "work"
    work.mkdir()
    python = _venv(tmp_path / "venv")
    _install(python, releases["fastsim-recording-format"].wheel, cwd=work)
    report = _probe(python, work)
    assert sorted(report["distributions"]) == ["attrs", "crc32c", "fastsim-recording-format", "numpy"]
    assert report["groups"] == {g: {} for g in GROUPS}
    read = json.loads(_run(python, "-I", "-c", _READ, recording, cwd=work))
    assert read["validated"] == recording.stat().st_size
    assert read["completion"] == "normal"
    assert read["ticks"] > 0
    assert read["modules"] == []
