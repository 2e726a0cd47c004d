"""The README's test command installs fast: the S3 test stack is pinned, and CI prints pip's time."""

from __future__ import annotations

import importlib.metadata as md
import re
import subprocess
from pathlib import Path

from packaging.requirements import Requirement
from tests.distributions import project

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints" / "test.txt"
STACK = {"moto", "boto3", "botocore", "aiobotocore", "s3fs", "fsspec"}


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in CONSTRAINTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints/test.txt: {line!r} is not an exact pin"
            pins[name.strip().lower()] = version.strip()
    return pins


def test_the_readme_test_command_installs_with_the_constraints() -> None:
    """The README's test command passes constraints/test.txt to pip."""
    readme = (ROOT / "README.md").read_text()
    command = readme.split("<!-- test-command -->", 1)[1].split("```bash\n", 1)[1].split("\n", 1)[0]
    assert (".venv/bin/pip install -c constraints/test.txt ./src/fastsim-recording-format ./src/fastsim-embedded "
            "'./src/fastsim-plugin-record[test]'") in command


def test_the_constraints_pin_one_consistent_s3_stack() -> None:
    """Every package of the S3 test stack is pinned exactly, to versions the test extra and each other accept."""
    pins = _pins()
    assert set(pins) == STACK
    assert pins["boto3"] == pins["botocore"]  # boto3 X needs botocore >= X of the same day
    for text in project("fastsim-plugin-record")["optional-dependencies"]["test"]:
        req = Requirement(text)
        if req.name.lower() in pins:
            assert req.specifier.contains(pins[req.name.lower()]), text
    # what the installed stack declares, when it is the pinned one (the README's venv)
    for name, wants in (("aiobotocore", "botocore"), ("s3fs", "aiobotocore"), ("s3fs", "fsspec"),
                        ("boto3", "botocore")):
        try:
            installed = md.version(name)
        except md.PackageNotFoundError:
            continue
        if installed != pins[name]:
            continue
        for text in md.requires(name) or []:
            req = Requirement(text)
            if req.name.lower() == wants and req.marker is None:
                assert req.specifier.contains(pins[wants]), f"{name} {installed}: {text}"


def test_ci_runs_the_command_step_by_step_and_prints_pips_time(tmp_path: Path) -> None:
    """.ci/run's run_steps stops like `&&` at the first failure and prints how long each pip install took."""
    script = (ROOT / ".ci" / "run").read_text()
    function = re.search(r"^run_steps\(\) \{\n.*?^\}\n", script, re.S | re.M)
    assert function is not None
    assert 'run_steps 3.11 "$test_command"' in script
    assert 'run_steps 3.12 "$command_312"' in script
    probe = function.group(0) + (
        "run_steps 3.11 'echo one && echo pip install stand-in && exit 3 && echo never'\n"
        "echo rc=$?\n"
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    lines = out.splitlines()
    assert lines[0] == "one"
    assert re.fullmatch(r"ci: \[3\.11\] pip install took \d+ s \(exit 0\)", lines[2])
    assert "never" not in out
    assert lines[-1] == "rc=3"
