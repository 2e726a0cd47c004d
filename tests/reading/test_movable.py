"""The reading package stays movable into a format package: it imports only what is listed."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import fastsim_record.reading

PACKAGE = Path(fastsim_record.reading.__file__).parent
ALLOWED = {
    # the format package (its byte layout and CRC, for the vectorised record tables)
    "fastsim_recording_format", "fastsim_recording_format._layout",
    # pure decode helpers: image header bounds, calibration epochs
    "fastsim_record.adapters.image_header", "fastsim_record.calibration_history",
    # third party: numpy and attrs, and lazily simplejpeg, OpenCV and pyarrow
    "numpy", "numpy.typing", "attrs", "simplejpeg", "cv2", "pyarrow",
}


def test_the_reading_package_imports_only_the_allowed_modules() -> None:
    """Every import is the standard library, the package itself or an allowed module."""
    found: set[str] = set()
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
    foreign = {
        name for name in found
        if name.split(".")[0] not in sys.stdlib_module_names
        and not name.startswith("fastsim_record.reading")
        and name != "__future__"
    }
    assert foreign <= ALLOWED, sorted(foreign - ALLOWED)


def test_opening_a_recording_loads_no_decoder_or_arrow(synthetic_fsr: Path) -> None:
    """Reading numbers loads neither OpenCV, simplejpeg nor pyarrow (they load on first use)."""
    script = (
        "import sys, fastsim_record as fr\n"
        f"fr.open({str(synthetic_fsr)!r}).numeric('robot.joint_position')\n"
        "print(sorted(m for m in ('cv2', 'simplejpeg', 'pyarrow', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
