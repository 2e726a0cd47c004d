"""Records are decoded in one place: no module outside ``fastsim_recording_format`` calls
``struct.unpack``/``unpack_from``/``iter_unpack`` or ``numpy.frombuffer`` (an AST scan of the
packages of the three distributions under src/).

Code that needs a record's values reads them through ``fastsim_recording_format.reading``
(``iter_decoded``, ``Decoding``, the reading API).  The allow-list below names the few calls
that touch bytes which are not records; each entry is (file, call, count) with its reason.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from tests.distributions import FOLDERS, PACKAGES

FORMAT = "fastsim_recording_format"
CALLS = frozenset({"unpack", "unpack_from", "iter_unpack", "frombuffer"})

ALLOWED: dict[tuple[str, str], int] = {
    # shared-memory observation samples of the Runtime contract (a sample's numeric row), not records
    ("fastsim_contract/samples.py", "frombuffer"): 1,
    # GL replay: the framebuffer's colour and depth read back from OpenGL, not records
    ("fastsim_embedded/backends/gl_replay/gl.py", "frombuffer"): 2,
    # gymnasium observation rows packed in memory for the env's spaces, not records
    ("fastsim_embedded/gymnasium_host/spaces.py", "frombuffer"): 1,
    # the same packer's own ``unpack`` method (not struct), on that in-memory row
    ("fastsim_embedded/backends/gymnasium_env.py", "unpack"): 1,
    # the Gymnasium capture's kept values (the env's own leaves, copied on step) joined into one
    # column of the rows it packs in bulk, and a one-row chunk's row packed by byte offsets
    # (``RowLayout._pack_one``): in-memory rows, not records
    ("fastsim_embedded/gymnasium_host/capture.py", "frombuffer"): 2,
    # the contract drivers and the fake Core build a tick's packed observation buffer (and a
    # block of them) in memory from the values they publish, not records
    ("fastsim_embedded/testing/contract_driver.py", "frombuffer"): 1,
    ("fastsim_record/testing/fake_blocks.py", "frombuffer"): 1,
    ("fastsim_record/testing/fake_bus.py", "frombuffer"): 1,
}


def _calls(path: Path) -> list[str]:
    """Names of the decoding calls in one module: ``x.unpack(...)``, ``np.frombuffer(...)``,
    and bare ``unpack(...)``/``frombuffer(...)`` imported by name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name in CALLS:
            found.append(name)
    return found


def _scan() -> Counter[tuple[str, str]]:
    found: Counter[tuple[str, str]] = Counter()
    for distribution, folder in FOLDERS.items():
        for package in PACKAGES[distribution]:
            if package == FORMAT:
                continue
            for path in sorted((folder / package).rglob("*.py")):
                for name in _calls(path):
                    found[(path.relative_to(folder).as_posix(), name)] += 1
    return found


def test_no_record_bytes_are_decoded_outside_the_format_package() -> None:
    """Every decoding call outside the format package is on the allow-list, as many times as it says."""
    found = _scan()
    extra = {k: n for k, n in found.items() if n > ALLOWED.get(k, 0)}
    assert not extra, f"decode records through fastsim_recording_format.reading, not here: {extra}"


def test_the_allow_list_is_not_stale() -> None:
    """An allow-list entry whose calls are gone is removed (the list never grows silently)."""
    found = _scan()
    stale = {k: n for k, n in ALLOWED.items() if found.get(k, 0) < n}
    assert not stale, f"allow-list entries with fewer calls than listed: {stale}"


def test_the_scan_finds_a_decoding_call(tmp_path: Path) -> None:
    """The scan sees the spellings it forbids (so an empty result means something)."""
    mod = tmp_path / "m.py"
    mod.write_text(
        "import struct\nimport numpy as np\nfrom numpy import frombuffer\n"
        "S = struct.Struct('<I')\n"
        "a = struct.unpack('<I', b)\nb = S.unpack_from(b)\nc = np.frombuffer(b)\nd = frombuffer(b)\n"
        "e = struct.iter_unpack('<I', b)\n"
    )
    assert sorted(_calls(mod)) == ["frombuffer", "frombuffer", "iter_unpack", "unpack", "unpack_from"]
