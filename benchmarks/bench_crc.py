"""Payload CRC-32C: its cost on write throughput, and ``--integrity crc`` against ``strong``.

Part 1 (write): the same records written by ``FsrWriter`` with ``payload_crc=True`` and
``payload_crc=False``, to a real file under ``benchmarks/_work/`` (``--dir`` elsewhere,
e.g. ``/dev/shm`` for a memory-speed file system, where the CRC's share is largest), in
adjacent pairs (order alternating), ``--rounds`` pairs per workload.  Reports the median
of the paired wall-time ratios, the same by the writing thread's CPU time, best-of-N, and
the CRC's own cost: ``crc32c`` over the same payload areas, as a share of the fastest
write without CRCs (the most stable figure on this shared machine).  Two workloads: 100,000 numeric
records of 800 B in batches of 256 (``bench_fsr_write``'s), and 2,000 camera-like
records of 100 KB in batches of 64.  Prints the median of the per-pair throughput ratios
(target: with CRCs >= 0.95x without).

Part 2 (validate): one ``--size-mib`` MiB (default 1024) camera-heavy file written with
``integrity: strong`` (so every profile applies to it).  Times ``validate(crc)``,
``validate(strong)`` and a plain ``hashlib.sha256`` of the file (the baseline), page cache
warm, interleaved, ``--repeat`` times each.  Prints medians and the ratio strong/crc
(target: crc >= 3x faster than strong).  Deletes its files afterwards.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from pathlib import Path

import numpy as np
from _report import Figures, add_json_flag
from crc32c import crc32c

from fastsim_recording_format import (
    FsrWriter,
    RecordIn,
    RecordKind,
    RunMetadata,
    StreamSpec,
    validate,
)
from fastsim_recording_format.synth import write_synthetic

WORK = Path(__file__).resolve().parent / "_work"
FRAME = 640 * 480 * 3
RUN = RunMetadata("bench", "bench-1", {"name": "bench_crc"})


def make_records(n: int, size: int, streams: int) -> list[RecordIn]:
    """``n`` DATA records round-robin over ``streams``, ``size`` bytes of noise each."""
    rng = np.random.default_rng(7)
    pool = [rng.integers(0, 256, size, np.uint8).tobytes() for _ in range(16)]
    out = []
    for g in range(n):
        sid = g % streams
        seq = g // streams + 1
        out.append(RecordIn(sid, RecordKind.DATA, g + 1, seq, 0, seq * 8_333_333, pool[g % 16]))
    return out


def write_once(records: list[RecordIn], batch: int, streams: int, path: Path, crc: bool) -> tuple[float, float]:
    """Wall and thread-CPU seconds to write and seal the records."""
    specs = [StreamSpec(i, f"s.{i}", "observation") for i in range(streams)]
    path.unlink(missing_ok=True)
    t0, c0 = time.perf_counter(), time.thread_time()
    with FsrWriter(path, RUN, specs, payload_crc=crc) as writer:
        for k in range(0, len(records), batch):
            writer.write_batch(records[k:k + batch])
        writer.seal()
    return time.perf_counter() - t0, time.thread_time() - c0


def bench_write(rounds: int, where: Path, figures: Figures) -> None:
    path = where / "bench_crc_write.fsr"
    for key, name, n, size, batch, streams in (
        ("numeric", "numeric 100,000 x 800 B, batches of 256", 100_000, 800, 256, 4),
        ("camera_like", "camera-like 2,000 x 100 KB, batches of 64", 2_000, 100_000, 64, 2),
    ):
        records = make_records(n, size, streams)
        write_once(records, batch, streams, path, True)  # warm up
        ratios, cpu_ratios, with_t, without_t = [], [], [], []
        for r in range(rounds):
            order = (True, False) if r % 2 == 0 else (False, True)
            times = {crc: write_once(records, batch, streams, path, crc) for crc in order}
            with_t.append(times[True][0])
            without_t.append(times[False][0])
            ratios.append(times[False][0] / times[True][0])  # throughput with / without
            cpu_ratios.append(times[False][1] / times[True][1])
        total = n * size / (1 << 20)
        areas = [b"".join(r.payload for r in records[k:k + batch]) for k in range(0, n, batch)]
        crc_t = float("inf")
        for _ in range(7):
            c0 = time.thread_time()
            for area in areas:
                crc32c(area)
            crc_t = min(crc_t, time.thread_time() - c0)
        best = min(without_t)
        print(f"write, {name} ({path.parent}):")
        print(f"  with CRC    median {statistics.median(with_t) * 1e3:8.1f} ms ({total / statistics.median(with_t):7.0f} MiB/s)")
        print(f"  without CRC median {statistics.median(without_t) * 1e3:8.1f} ms ({total / statistics.median(without_t):7.0f} MiB/s)")
        print(
            f"  throughput with/without: median {statistics.median(ratios):.3f} "
            f"(pairs {min(ratios):.3f}-{max(ratios):.3f}; target >= 0.95); "
            f"by thread CPU {statistics.median(cpu_ratios):.3f}; best-of-{rounds} "
            f"{min(without_t) / min(with_t):.3f}"
        )
        print(
            f"  the CRC alone over the same payload areas: {crc_t * 1e3:.1f} ms = "
            f"{crc_t / best * 100:.1f}% of the fastest write without CRC "
            f"(implied throughput ratio {best / (best + crc_t):.3f})"
        )
        figures.add(f"{key}_write_throughput_with_over_without_crc", statistics.median(ratios), 0.95, ">=")
    path.unlink(missing_ok=True)


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def bench_validate(size_mib: int, repeat: int, figures: Figures) -> None:
    path = WORK / "bench_crc_validate.fsr"
    per_record = (FRAME + 3 * 800) / 4
    records = int(size_mib * (1 << 20) / per_record)
    try:
        write_synthetic(path, records, 800, numeric_streams=3, camera_every=4, camera_bytes=FRAME, integrity="strong")
        size = path.stat().st_size
        sha256_file(path)  # warm the page cache
        times: dict[str, list[float]] = {"crc": [], "strong": [], "sha256": []}
        for r in range(repeat):
            order = ["crc", "strong", "sha256"] if r % 2 == 0 else ["sha256", "strong", "crc"]
            for what in order:
                t0 = time.perf_counter()
                if what == "sha256":
                    sha256_file(path)
                elif what == "crc":
                    validate(path, "crc")
                else:
                    validate(path, "strong", "sha256")
                times[what].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"validate, {size:,} B file ({size / (1 << 20):.0f} MiB, integrity strong, with CRCs), {repeat} rounds:")
        for k in ("crc", "strong", "sha256"):
            label = {"crc": "validate --integrity crc", "strong": "validate --integrity strong", "sha256": "hashlib.sha256 of the file"}[k]
            print(f"  {label:28s} median {med[k] * 1e3:9.1f} ms ({size / (1 << 30) / med[k]:.2f} GiB/s)")
        print(f"  strong/crc time ratio: {med['strong'] / med['crc']:.2f}x (target >= 3x)")
        print(f"  crc/sha256-of-file time ratio: {med['crc'] / med['sha256']:.3f}")
        figures.add("validate_strong_over_crc_time", med["strong"] / med["crc"], 3.0, ">=")
        figures.add("validate_crc_over_sha256_time", med["crc"] / med["sha256"])
    finally:
        path.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--skip-write", action="store_true")
    parser.add_argument("--dir", type=Path, default=WORK, help="where part 1 writes its file")
    parser.add_argument("--skip-validate", action="store_true")
    add_json_flag(parser)
    args = parser.parse_args()
    WORK.mkdir(exist_ok=True)
    figures = Figures("bench_crc")
    if not args.skip_write:
        bench_write(args.rounds, args.dir, figures)
    if not args.skip_validate:
        bench_validate(args.size_mib, args.repeat, figures)
    figures.emit(args.json)


if __name__ == "__main__":
    main()
