"""fastsim_embedded is grouped in rooms: every module lives in a subpackage, none flat at the top."""

from __future__ import annotations

import pkgutil
from pathlib import Path

import fastsim_embedded

ROOMS = {"backends", "cli", "gym", "gymnasium_host", "host", "output", "render", "session", "testing"}


def test_every_module_of_fastsim_embedded_lives_in_a_room() -> None:
    """The package's top level holds only __init__ and the rooms; each room is a package."""
    top = list(pkgutil.iter_modules(fastsim_embedded.__path__))
    flat = sorted(m.name for m in top if not m.ispkg)
    assert flat == [], f"flat modules outside a room: {flat}"
    assert {m.name for m in top} == ROOMS
    root = Path(fastsim_embedded.__file__).parent
    stray = sorted(p.name for p in root.glob("*.py") if p.name != "__init__.py")
    assert stray == []
    for room in ROOMS:
        assert (root / room / "__init__.py").is_file(), room


def test_every_module_in_a_room_is_importable_and_small() -> None:
    """Walking the rooms finds every module (no namespace gaps), each at most 400 lines."""
    names = [m.name for m in pkgutil.walk_packages(fastsim_embedded.__path__, "fastsim_embedded.")]
    assert all(name.split(".")[1] in ROOMS for name in names)
    root = Path(fastsim_embedded.__file__).parent
    files = sorted(root.rglob("*.py"))
    assert len(files) > len(ROOMS) + 30  # the rooms hold the whole host
    for path in files:
        lines = path.read_text(encoding="utf-8").count("\n")
        assert lines <= 400, f"{path.relative_to(root)}: {lines} lines"
