"""The README's statements that issue 27 found untrue, each checked against what the code does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.distributions import project

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _registered(distribution: str) -> set[str]:
    """Every `group`/`name` one distribution registers, from its pyproject.toml."""
    table = project(distribution)
    out = {f"{group}/{name}" for group, eps in table.get("entry-points", {}).items() for name in eps}
    return out | {f"console_scripts/{name}" for name in table.get("scripts", {})}


def test_the_readme_lists_exactly_what_installing_registers() -> None:
    """The plugin registers fastsim.record twice and fsr, nothing else; the host its three hosts; the README says so."""
    plugin = _registered("fastsim-plugin-record")
    host = _registered("fastsim-embedded")
    assert plugin == {"fastsim.components/fastsim.record", "fastsim.plugins/fastsim.record", "console_scripts/fsr"}
    assert host == {"fastsim.hosts/embedded", "fastsim.hosts/embedded-replay", "fastsim.hosts/gymnasium"}
    assert _registered("fastsim-recording-format") == set()
    paragraph = README.split("**What installing registers.**", 1)[1].split("\n\n", 1)[0]
    for entry in (plugin | host) - {"console_scripts/fsr"}:
        group, name = entry.split("/")
        assert f"`{group}`/`{name}`" in paragraph, entry
    assert "`fsr` command" in paragraph
    assert "Nothing else" in paragraph
    assert "only registers two" not in README
    assert "`record`," not in paragraph


def test_the_readme_says_what_the_integration_gate_covers_and_what_this_repo_shows() -> None:
    """Real-backend DROID recording and cross-backend Replay are the integration gate's; the stand-in is named."""
    section = README.split("**What is tested here, and what is not.**", 1)[1].split("\n\n", 1)[0]
    flat = " ".join(section.split())
    assert "Real-backend DROID recording and cross-backend Replay are tracked by the separate integration gate" in flat
    assert "DROID-like MuJoCo stand-in (`examples/droid-like`" in flat
    assert (ROOT / "examples" / "droid-like" / "run.yaml").is_file()
    assert "`fsr replay`" in flat
    assert "neither replaces that gate" in flat


def test_the_readmes_isaaclab_line_is_what_fsr_check_prints() -> None:
    """The line the README quotes for the plugin README's isaaclab Run is exactly fsr check's stderr."""
    # a fresh process: other tests in this one may have registered stand-in backends
    done = subprocess.run(
        [sys.executable, "-m", "fastsim_record.cli", "check",
         str(ROOT / "tests" / "fixtures" / "runs" / "plugin-readme-minimal.yaml")],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 2
    err = done.stderr
    quoted = re.search(r"```text\n(backend: 'isaaclab'[^\n]*)\n```", README)
    assert quoted is not None
    assert err == quoted.group(1) + "\n"


def test_the_readme_states_the_apache_license() -> None:
    """The License section names Apache-2.0, as LICENSE and pyproject do; no pending licence is left."""
    section = README.split("## License and authorship", 1)[1]
    assert "Apache License 2.0" in section
    assert 'license = "Apache-2.0"' in section
    assert "LicenseRef-Pending" not in README
