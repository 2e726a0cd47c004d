"""Write throughput: FSR ``FsrWriter`` vs the ``mcap`` Python writer on the same records.

100,000 numeric records of about 800 bytes over four streams.  FSR writes batches of 256
records (the Record default); MCAP writes chunked, uncompressed (its default 1 MiB
chunks).  Both write to a real file under ``benchmarks/_work/``, and both are timed from
opening the writer to the sealed/finished file.  Prints records/s and the ratio
(target: FSR >= 1.5x MCAP).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from _report import Figures, add_json_flag
from mcap.writer import CompressionType, Writer

from fastsim_recording_format import (
    FsrWriter,
    RecordIn,
    RecordKind,
    RunMetadata,
    StreamSpec,
    validate,
)

WORK = Path(__file__).resolve().parent / "_work"
STREAMS = 4


def make_records(n: int, size: int) -> list[RecordIn]:
    """``n`` DATA records round-robin over the streams, ~``size`` bytes of float64 each."""
    rng = np.random.default_rng(7)
    pool = [rng.standard_normal(size // 8).tobytes() for _ in range(64)]
    out = []
    for g in range(n):
        sid = g % STREAMS
        seq = g // STREAMS + 1
        out.append(RecordIn(sid, RecordKind.DATA, g + 1, seq, 0, seq * 8_333_333, pool[g % 64]))
    return out


def run_fsr(records: list[RecordIn], path: Path, batch: int) -> float:
    streams = [StreamSpec(i, f"obs.{i}", "observation", {"dtype": "float64"}, {}) for i in range(STREAMS)]
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        w = FsrWriter(f, RunMetadata("bench", "bench-1", {"name": "bench"}), streams)
        for i in range(0, len(records), batch):
            w.write_batch(records[i:i + batch])
        w.seal()
    return time.perf_counter() - t0


def run_mcap(records: list[RecordIn], path: Path) -> float:
    args = [(r.stream_id, r.sim_time_ns, bytes(r.payload), r.stream_sequence) for r in records]
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        w = Writer(f, compression=CompressionType.NONE)
        w.start(profile="", library="bench")
        schema = w.register_schema(name="obs", encoding="raw", data=b"")
        channels = [w.register_channel(f"obs.{i}", "raw", schema) for i in range(STREAMS)]
        for sid, t, payload, seq in args:
            w.add_message(channels[sid], log_time=t, data=payload, publish_time=t, sequence=seq)
        w.finish()  # type: ignore[no-untyped-call]
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--payload-bytes", type=int, default=800)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    add_json_flag(parser)
    args = parser.parse_args()
    WORK.mkdir(exist_ok=True)
    records = make_records(args.records, args.payload_bytes)
    fsr_path, mcap_path = WORK / "bench_write.fsr", WORK / "bench_write.mcap"
    try:
        fsr_t = min(run_fsr(records, fsr_path, args.batch) for _ in range(args.repeat))
        mcap_t = min(run_mcap(records, mcap_path) for _ in range(args.repeat))
        validate(fsr_path)
        n = args.records
        print(f"records: {n} x {args.payload_bytes} B, FSR batch {args.batch}, best of {args.repeat}")
        print(f"fsr : {n / fsr_t:12,.0f} records/s  ({fsr_t * 1e3:7.1f} ms, {os.path.getsize(fsr_path):,} B)")
        print(f"mcap: {n / mcap_t:12,.0f} records/s  ({mcap_t * 1e3:7.1f} ms, {os.path.getsize(mcap_path):,} B)")
        print(f"ratio fsr/mcap records/s: {mcap_t / fsr_t:.2f}x (target >= 1.5x)")
        figures = Figures("bench_fsr_write")
        figures.add("fsr_records_per_s", n / fsr_t)
        figures.add("mcap_records_per_s", n / mcap_t)
        figures.add("fsr_over_mcap", mcap_t / fsr_t, 1.5, ">=")
        figures.emit(args.json)
    finally:
        for path in (fsr_path, mcap_path):
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
