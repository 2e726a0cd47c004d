"""The reading API lives in the format package and imports only the format and what is listed."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import fastsim_recording_format.reading

PACKAGE = Path(fastsim_recording_format.reading.__file__).parent
ALLOWED = {
    # third party: numpy and attrs, and lazily simplejpeg, OpenCV and pyarrow
    "numpy", "numpy.typing", "attrs", "simplejpeg", "cv2", "pyarrow",
    "pyarrow.compute", "pyarrow.parquet",  # an episode index and its where filter (Dataset(index))
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
        and name.split(".")[0] != "fastsim_recording_format"  # the format: layout, CRC, codecs
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


def test_the_old_reading_path_warns_and_gives_the_same_objects() -> None:
    """fastsim_record.reading is a deprecated re-export; fastsim_record.open does not warn."""
    code = (
        "import warnings\n"
        "warnings.simplefilter('error')\n"
        "import fastsim_record as fr\n"
        "import fastsim_recording_format.reading as new\n"
        "assert fr.open is new.open and fr.Dataset is new.Dataset\n"
        "try:\n"
        "    import fastsim_record.reading\n"
        "except DeprecationWarning as exc:\n"
        "    print('warned', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("warned fastsim_record.reading is deprecated"), out.stderr
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import importlib

        import fastsim_record.reading as old

        old_codecs = importlib.import_module("fastsim_record.reading._codecs")

    assert old.Recording is fastsim_recording_format.reading.Recording
    assert old_codecs.numeric_layout is fastsim_recording_format.reading._codecs.numeric_layout
    assert set(old.__all__) == set(fastsim_recording_format.reading.__all__)
