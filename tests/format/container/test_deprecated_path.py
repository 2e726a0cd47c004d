"""The old ``fastsim_record.fsr`` import path still works for one release, with a warning."""

from __future__ import annotations

import importlib
import subprocess
import sys

import fastsim_recording_format


def test_old_path_warns_and_gives_the_same_objects() -> None:
    """Importing fastsim_record.fsr warns once and re-exports the format package's objects."""
    code = (
        "import warnings\n"
        "warnings.simplefilter('error')\n"
        "try:\n"
        "    import fastsim_record.fsr\n"
        "except DeprecationWarning as exc:\n"
        "    print('warned', exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("warned fastsim_record.fsr is deprecated")

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import fastsim_record.fsr as old

        model = importlib.import_module("fastsim_record.fsr.model")
        reader = importlib.import_module("fastsim_record.fsr.reader")

    assert old.FsrWriter is fastsim_recording_format.FsrWriter
    assert model.StreamSpec is fastsim_recording_format.StreamSpec
    assert reader.FsrReader is fastsim_recording_format.FsrReader
    assert set(old.__all__) == set(fastsim_recording_format.__all__)
