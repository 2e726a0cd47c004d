"""What checking payload CRC-32Cs costs the reading API (``open(path, verify=...)``).

One file written with payload CRCs: ``--ticks`` numeric ticks of 90 float64 channels
(720 B per tick) and, every 8th tick (15 Hz at 120 Hz), a 160x120 raw RGB frame on
``cameras.top.rgb``, in batches of 256 records in global order (as ``fsr record`` merges
its lanes: a batch holds ticks and frames).  Each round
opens the file afresh (page cache warm) with ``verify=True`` and ``verify=False`` in
alternating order and times three reads:

1. ``numeric_all()``: every channel of every tick (the batches read whole anyway);
2. ``numeric(one channel)``: 8 of 720 bytes per tick (verification reads every payload
   byte of every batch the stream lives in, the frames too: the worst case);
3. ``frames("top")``: every frame decoded.

Each read is timed twice over: cold (the file's pages dropped from the page cache with
``posix_fadvise(DONTNEED)`` before every read: a dataset's first read) and warm (in the
page cache: a file read again and again).  The default (``verify=True``) holds while no read
costs more than ``TARGET_MAX_RATIO`` (2x) with the check: verification happens once per
batch per open, and a file has payload CRCs only when its writer chose them.  Prints, per read, the median of the paired time
ratios verify/no-verify (the cost of the check, 1.0 = free) and the medians of each side; ``--json`` ends with one JSON line of the
figures (``_report``'s: each ``*_verify_ratio`` and ``worst_verify_ratio`` with the ``<= 2`` target beside it,
``passed`` when the worst meets it).  The README and ``docs/reading.md`` quote the figures that chose the default.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _report import Figures, add_json_flag

from fastsim_recording_format import FsrWriter, RecordIn, RunMetadata, StreamSpec
from fastsim_recording_format.codecs.numeric import channel_entries, codec_description
from fastsim_recording_format.reading import open as open_recording

CHANNELS = 90
FRAME = (120, 160, 3)
#: verify=True is the default when no read measured here costs more than this with it: a
#: file carries payload CRCs only when its writer chose them, so the check is what its
#: owner asked for, and a wrong value is never an acceptable price for speed
TARGET_MAX_RATIO = 2.0


def write_file(path: Path, ticks: int) -> None:
    """The benchmark file (see the module text), with payload CRCs."""
    record_bytes, layout = channel_entries([(f"ch{k}", "<f8", [1], ["rad"], None) for k in range(CHANNELS)])
    numeric = StreamSpec(1, "observations", "observations", codec_description(record_bytes), {"channels": layout})
    camera = StreamSpec(2, "cameras.top.rgb", "camera.rgb",
                        {"payload_codec": "raw_rgb", "height": FRAME[0], "width": FRAME[1], "channels": 3,
                         "dtype": "uint8"}, {"camera": "top", "role": "rgb"})
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 255, FRAME, dtype=np.uint8).tobytes()
    with FsrWriter(path, RunMetadata("bench", "bench-1"), [numeric, camera], payload_crc=True) as writer:
        batch: list[RecordIn] = []
        g = frames = 0
        for t in range(ticks):
            g += 1
            batch.append(RecordIn.data(1, g, t + 1, 0, t * 8_333_333, rng.random(CHANNELS).tobytes()))
            if t % 8 == 0:
                g += 1
                frames += 1
                batch.append(RecordIn.data(2, g, frames, 0, t * 8_333_333, frame))
            if len(batch) >= 256 or t == ticks - 1:
                writer.write_batch(batch)
                batch = []
        writer.seal({"last_global_sequence": g})


def _evict(path: Path) -> None:
    """Drop the file's pages from the page cache (this file only): the next read is cold."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _time(path: Path, verify: bool, read: Callable[[Any], object], cold: bool = False) -> float:
    if cold:
        _evict(path)
    with open_recording(path, verify=verify) as rec:
        start = time.perf_counter()
        read(rec)
        return time.perf_counter() - start


READS: dict[str, Callable[[Any], object]] = {
    "numeric_all": lambda rec: rec.numeric_all(),
    "numeric_one_channel": lambda rec: rec.numeric("ch0"),
    "frames": lambda rec: sum(1 for _ in rec.frames("top")),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=120_000)
    parser.add_argument("--rounds", type=int, default=7)
    add_json_flag(parser)
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as folder:
        path = Path(folder) / "verify.fsr"
        write_file(path, args.ticks)
        size = path.stat().st_size
        print(f"file: {args.ticks} ticks of {CHANNELS} channels + {args.ticks // 8} frames, {size / 2**20:.0f} MiB")
        for cache in ("cold", "warm"):
            for name, read in READS.items():
                _time(path, False, read)  # warm the page cache (and the code)
                ratios, on, off = [], [], []
                for k in range(args.rounds):
                    order = (True, False) if k % 2 == 0 else (False, True)
                    got = {v: _time(path, v, read, cache == "cold") for v in order}
                    on.append(got[True])
                    off.append(got[False])
                    ratios.append(got[True] / got[False])
                ratio = statistics.median(ratios)
                print(f"{cache} {name:20s} verify {statistics.median(on) * 1e3:8.1f} ms  no verify "
                      f"{statistics.median(off) * 1e3:8.1f} ms  ratio {ratio:.2f}x")
                figures[f"{cache}_{name}_verify_ratio"] = round(ratio, 3)
                figures[f"{cache}_{name}_verify_ms"] = round(statistics.median(on) * 1e3, 2)
                figures[f"{cache}_{name}_no_verify_ms"] = round(statistics.median(off) * 1e3, 2)
    figures["file_mib"] = round(size / 2**20, 1)
    worst = max(v for k, v in figures.items() if k.endswith("_verify_ratio"))
    figures["worst_verify_ratio"] = worst
    met = worst <= TARGET_MAX_RATIO
    print(f"the check costs at most {worst:.2f}x on these reads (at most {TARGET_MAX_RATIO}x keeps "
          f"verify=True the default): {'met' if met else 'NOT met'}")
    report = Figures("bench_verify")
    for name in sorted(figures):  # every read's ratio, and the worst of them, against the one bound
        gated = name.endswith("_verify_ratio")
        report.add(name, figures[name], TARGET_MAX_RATIO if gated else None, "<=" if gated else None)
    report.extra.update(ticks=args.ticks, rounds=args.rounds)
    report.emit(args.json)


if __name__ == "__main__":
    main()
