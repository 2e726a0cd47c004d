"""The seeded mutation fuzzer's worker: one process runs every mutant through the ``fsr`` commands.

Usage: ``python fuzz_worker.py REPORT.json SEED SECONDS WORKDIR CORPUS.fsr... [--replay-run RUN.yaml]``
(with ``--replay-run`` only ``replay`` runs, on every mutant).

Each mutant is a corpus file changed by one to three seeded mutations (bit flips, byte
runs, truncation, insertion, duplication, field edits with every CRC recomputed so the
change reaches the parsers behind the checksums, and payload edits aimed at the image
and render-state decoders).  Each mutant goes through ``info``, ``validate``, ``cat``,
``frames`` (when it has a camera), ``recover`` (or, in a second
process, ``replay`` of render-state sources), all in this process through ``fastsim_record.cli.main``.  A call that
raises (a traceback), returns an undocumented exit code or runs past its alarm is a
finding.  The report holds the findings, the exit-code counts, the peak RSS (VmHWM)
after a warm-up pass over the unmutated corpus, and the peak after fuzzing.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
import struct
import sys
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import Any

from fastsim_record.cli import main
from fastsim_recording_format._layout import (
    BATCH_HEADER,
    FILE_HEADER,
    RECORD_DTYPE,
    TRAILER,
    crc,
    pad8,
)

EXIT_CODES = {
    "info": {0, 1, 2},
    "validate": {0, 1, 2},
    "cat": {0, 1, 2},
    "frames": {0, 1, 2},
    "recover": {0, 1, 2, 3},
    "replay": {0, 1, 2},
}
CALL_SECONDS = 30


class Hang(Exception):
    """A command ran past its alarm."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang


def _peak() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))


# -- layout walking and CRC refresh -------------------------------------------------------
def batches(data: bytes | bytearray) -> list[tuple[int, int, int, int, int]]:
    """(offset, length, table_len, meta_len, pay_len) of each batch as its header states it."""
    if len(data) < FILE_HEADER.size:
        return []
    pos = FILE_HEADER.size + pad8(struct.unpack_from("<Q", data, 16)[0])
    out = []
    while pos + BATCH_HEADER.size <= len(data) and data[pos:pos + 4] == b"FSRB":
        count, meta_len, pay_len = struct.unpack_from("<I", data, pos + 16)[0], *struct.unpack_from("<QQ", data, pos + 24)
        table = RECORD_DTYPE.itemsize * count
        length = BATCH_HEADER.size + table + pad8(meta_len) + pad8(pay_len)
        if pos + length > len(data):
            break
        out.append((pos, length, table, meta_len, pay_len))
        pos += length
    return out


def refresh_crcs(data: bytearray) -> None:
    """Recompute every CRC the layout locates, so edited fields reach the parsers."""
    if len(data) < FILE_HEADER.size:
        return
    meta_len = struct.unpack_from("<Q", data, 16)[0]
    if FILE_HEADER.size + meta_len <= len(data):
        struct.pack_into("<I", data, 24, crc(bytes(data[32:32 + meta_len])))
    struct.pack_into("<I", data, 28, crc(bytes(data[:28])))
    for pos, _, table, meta, pay in batches(data):
        body_end = pos + BATCH_HEADER.size + table + pad8(meta)
        struct.pack_into("<I", data, pos + 112, crc(bytes(data[pos + BATCH_HEADER.size:body_end])))
        if struct.unpack_from("<I", data, pos + 4)[0] & 2:
            struct.pack_into("<I", data, pos + 20, crc(bytes(data[body_end:body_end + pay])))
        struct.pack_into("<I", data, pos + 116, crc(bytes(data[pos:pos + 116])))
    if len(data) < TRAILER.size:
        return
    t = len(data) - TRAILER.size
    i_off, i_len, p_off, p_len, f_off, f_len = struct.unpack_from("<QQQQQQ", data, t)
    for off, length, at in ((i_off, i_len, 48), (p_off, p_len, 52), (f_off, f_len, 56)):
        if off + length <= t:
            struct.pack_into("<I", data, t + at, crc(bytes(data[off:off + length])))
    struct.pack_into("<I", data, t + 60, crc(bytes(data[t:t + 60])))


# -- mutations --------------------------------------------------------------------------
_INTERESTING = (0, 1, 2, 7, 8, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 2**32, 2**63 - 1, 2**64 - 1)


def _field_edit(rng: random.Random, data: bytearray) -> None:
    """Set an aligned 1/2/4/8-byte field of a header, table, index or trailer to an edge value."""
    spans = [(0, 32)]
    for pos, _, table, _, _ in batches(data):
        spans += [(pos, BATCH_HEADER.size), (pos + BATCH_HEADER.size, table)]
    if len(data) >= TRAILER.size:
        t = len(data) - TRAILER.size
        i_off, i_len, p_off, p_len = struct.unpack_from("<QQQQ", data, t)
        spans += [(t, 48)] + [(o, n) for o, n in ((i_off, i_len), (p_off, p_len)) if o > 0 and o + n <= t]
    start, length = rng.choice([s for s in spans if s[1] > 0] or [(0, len(data))])
    width = rng.choice((1, 2, 4, 8))
    at = start + rng.randrange(max(1, length - width + 1)) // width * width
    if at + width > len(data):
        return
    value = rng.choice(_INTERESTING) if rng.random() < 0.7 else rng.getrandbits(8 * width)
    data[at:at + width] = (value % (1 << (8 * width))).to_bytes(width, "little")


def _payload_edit(rng: random.Random, data: bytearray) -> None:
    """Change bytes inside payloads: JPEG SOF sizes, PNG IHDR sizes, zlib prefixes, noise."""
    found = batches(data)
    if not found:
        return
    pos, _, table, meta, pay = rng.choice(found)
    area = pos + BATCH_HEADER.size + table + pad8(meta)
    if not pay:
        return
    chunk = bytes(data[area:area + pay])
    for marker, off in ((b"\xff\xc0", 5), (b"IHDR", 4), (b"FSRS", 8)):
        at = chunk.find(marker)
        if at >= 0 and rng.random() < 0.5:
            width = 4 if marker != b"\xff\xc0" else 2
            dims = rng.choice((0, 1, 30000, 65500, 12000, 2**31 - 1, 2**32 - 1)) % (1 << (8 * width))
            end = min(pay, at + off + width)
            data[area + at + off:area + end] = dims.to_bytes(width, "big" if marker != b"FSRS" else "little")[: end - at - off]
            return
    at = area + rng.randrange(pay)
    for k in range(rng.randint(1, 32)):
        if at + k < area + pay:
            data[at + k] = rng.getrandbits(8)


def mutate(rng: random.Random, original: bytes) -> tuple[bytes, list[str]]:
    """One to three seeded mutations of ``original``; their names."""
    data = bytearray(original)
    names = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(("bits", "run", "truncate", "insert", "duplicate", "field", "field", "payload", "payload"))
        names.append(kind)
        n = len(data)
        if not n:
            break
        if kind == "bits":
            for _ in range(rng.randint(1, 8)):
                at = rng.randrange(n)
                data[at] ^= 1 << rng.randrange(8)
        elif kind == "run":
            at = rng.randrange(n)
            fill = rng.choice((b"\x00", b"\xff", None))
            size = rng.randint(1, 64)
            data[at:at + size] = (fill * size) if fill else rng.randbytes(size)
        elif kind == "truncate":
            del data[rng.randrange(n):]
        elif kind == "insert":
            at = rng.randrange(n)
            data[at:at] = rng.randbytes(rng.randint(1, 64))
        elif kind == "duplicate":
            at = rng.randrange(n)
            size = rng.randint(1, min(4096, n - at))
            data[at:at] = data[at:at + size]
        elif kind == "field":
            _field_edit(rng, data)
        else:
            _payload_edit(rng, data)
        if kind in ("field", "payload") or rng.random() < 0.5:
            refresh_crcs(data)
    return bytes(data), names


# -- running commands -------------------------------------------------------------------
def run_command(argv: list[str]) -> tuple[int | None, str | None]:
    """Exit code, or None and the finding (traceback, hang) of one ``fsr`` call."""
    out, err = io.StringIO(), io.StringIO()
    signal.alarm(CALL_SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except Hang:
        return None, f"hang (> {CALL_SECONDS} s)"
    except SystemExit as exc:  # argparse usage errors exit 2
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:
        return None, traceback.format_exc(limit=8)
    finally:
        signal.alarm(0)
    if "Traceback (most recent call last)" in err.getvalue():
        return None, "traceback printed: " + err.getvalue()[-2000:]
    return code, None


def has_camera(path: Path) -> str | None:
    with contextlib.suppress(Exception):
        from fastsim_recording_format import FsrReader

        with FsrReader(path) as reader:
            for s in reader.streams:
                if s.name.startswith("cameras.") and s.name.endswith(".rgb"):
                    return s.name[len("cameras."):-len(".rgb")]
    return None


def _commands(target: Path, work: Path, tag: str, camera: str | None, replay_run: str | None) -> list[tuple[str, list[str]]]:
    if replay_run:
        return [("replay", ["replay", str(target), replay_run, "--output-dir", str(work / f"r{tag}")])]
    commands = [
        ("info", ["info", str(target)]),
        ("validate", ["validate", str(target)]),
        ("cat", ["cat", str(target)]),
        ("recover", ["recover", str(target), "-o", str(work / f"{tag}.recovered.fsr")]),
    ]
    if camera:
        commands.append(("frames", ["frames", str(target), "--camera", camera, "-o", str(work / f"f{tag}"), "--every", "5"]))
    return commands


def _clean(work: Path) -> None:
    for leftover in work.iterdir():
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def fuzz(report: Path, seed: int, seconds: float, work: Path, corpus: list[Path], replay_run: str | None) -> None:
    signal.signal(signal.SIGALRM, _alarm)
    rng = random.Random(seed)
    originals = [(p, p.read_bytes(), has_camera(p)) for p in corpus]
    max_size = max(len(data) for _, data, _ in originals)
    for k, (path, _, camera) in enumerate(originals):  # warm-up: the interpreter's own peak
        for name, argv in _commands(path, work, f"w{k}", camera, replay_run):
            code, finding = run_command(argv)
            if finding is not None or code != 0:
                raise SystemExit(f"warm-up {name} on {path.name}: exit {code} {finding or ''}")
    _clean(work)
    peak_warm = _peak()
    findings: list[dict[str, Any]] = []
    runs = mutants = 0
    codes: dict[str, dict[str, int]] = {c: {} for c in EXIT_CODES}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        path, original, camera = originals[mutants % len(originals)]
        mutant_seed = rng.getrandbits(32)
        data, names = mutate(random.Random(mutant_seed), original)
        mutants += 1
        target = work / f"m{mutants}.fsr"
        target.write_bytes(data)
        for name, argv in _commands(target, work, f"m{mutants}", camera, replay_run):
            code, finding = run_command(argv)
            runs += 1
            if finding is None and code not in EXIT_CODES[name]:
                finding = f"undocumented exit code {code}"
            if finding is not None:
                findings.append({"command": name, "corpus": path.name, "mutant_seed": mutant_seed,
                                 "mutations": names, "finding": finding})
            else:
                codes[name][str(code)] = codes[name].get(str(code), 0) + 1
        _clean(work)
    report.write_text(json.dumps({
        "seed": seed, "mutants": mutants, "runs": runs, "codes": codes, "findings": findings,
        "peak_warm": peak_warm, "peak": _peak(), "max_size": max_size,
    }, indent=1))


if __name__ == "__main__":
    args = sys.argv[1:]
    replay = None
    if "--replay-run" in args:
        k = args.index("--replay-run")
        replay = args[k + 1]
        del args[k:k + 2]
    os.environ.setdefault("MUJOCO_GL", "egl")
    fuzz(Path(args[0]), int(args[1]), float(args[2]), Path(args[3]), [Path(a) for a in args[4:]], replay)
