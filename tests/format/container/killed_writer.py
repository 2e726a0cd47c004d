"""A real writer process for the SIGKILL recovery test (run as a script, killed at random).

Usage: ``python killed_writer.py OUTPUT_DIR``.  Writes deterministic batches through
``FilesystemLeases`` into ``OUTPUT_DIR/episode.fsr.incomplete``, flushing after each and
printing ``flushed <batches> <last_global>``; it would commit only after many thousands
of batches, so the test always kills it first.
"""

from __future__ import annotations

import hashlib
import sys

from fastsim_recording_format import (
    FilesystemLeases,
    FsrWriter,
    RecordIn,
    RunMetadata,
    StreamSpec,
    finish_output,
)

STREAMS = [StreamSpec(k, f"s{k}", "observation") for k in range(3)]


def payload(g: int) -> bytes:
    """The deterministic payload of global sequence ``g``."""
    return hashlib.sha256(str(g).encode()).digest() * (g % 97)


def batch_size(ordinal: int) -> int:
    """The deterministic record count of batch ``ordinal``."""
    return 1 + (ordinal * 7919) % 23


def main(out_dir: str) -> None:
    leases = FilesystemLeases(out_dir, preserve_incomplete=True)
    lease = leases.open_write("episode.fsr")
    writer = FsrWriter(lease.file, RunMetadata("killed", "killed-1"), STREAMS)
    writer.flush()
    print("ready 0 0", flush=True)
    g, seq = 1, [0, 0, 0]
    for ordinal in range(100_000):
        batch = []
        for _ in range(batch_size(ordinal)):
            sid = g % 3
            seq[sid] += 1
            batch.append(RecordIn.data(sid, g, seq[sid], 0, g * 1000, payload(g), {"g": g}))
            g += 1
        writer.write_batch(batch)
        writer.flush()
        print(f"flushed {ordinal + 1} {g - 1}", flush=True)
    finish_output(leases, lease, writer)


if __name__ == "__main__":
    main(sys.argv[1])
