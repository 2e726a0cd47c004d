"""`fsr record` killed with SIGKILL at any moment, even in the writer's first 100 ms, leaves an
``.incomplete`` that starts with a valid header and recovers (exit 0 or 3, never 1).

The first bytes that reach the staging file must be the header and run metadata alone,
before any batch.  Kills then land 0-100 ms (and, in two trials, up to 1 s) after that.
The microseconds between the lease creating the file and the sink writing the header (a
few ms under heavy load) are the lease's to close, by creating the staging file under a
temporary name and renaming it once the header is in; the test never kills inside them.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from fastsim_record.cli import main
from fastsim_recording_format import FormatError, FsrReader, FsrWriter, validate
from fastsim_recording_format._sections import read_head
from fastsim_recording_format._source import open_source

RUN = Path(__file__).resolve().parents[3] / "examples" / "minimal" / "run.yaml"
FSR = Path(sys.executable).with_name("fsr")


def _header_length(prefix: bytes, staging: Path) -> int:
    """``data_start`` of the header at the start of ``prefix``; -1 while it is truncated."""
    copy = staging.with_suffix(".prefix")
    copy.write_bytes(prefix)
    src = open_source(copy)
    try:
        return read_head(src).data_start
    except FormatError as exc:
        if exc.reason.startswith("truncated"):
            return -1
        raise
    finally:
        src.close()
        copy.unlink()


def _kill_after_header(out_dir: Path, delay: float) -> tuple[Path, int, int]:
    """Start a recording, wait for its first bytes, kill -9 ``delay`` seconds later.

    Returns the staging file, the size first seen and the header length in those bytes.
    """
    proc = subprocess.Popen(
        [str(FSR), "record", str(RUN), "--output-dir", str(out_dir), "--duration", "60", "--realtime"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "MUJOCO_GL": "egl"},
    )
    staging = out_dir / "episode.fsr.incomplete"
    first, header = b"", -1
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if staging.exists() and staging.stat().st_size:
                first = staging.read_bytes()
                header = _header_length(first, staging)
                if header > 0:  # else the header's own write was still in flight: look again
                    break
            time.sleep(0.0002)
        time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert first, "the recording never wrote its staging file"
    return staging, len(first), header


def test_sigkilled_record_always_leaves_a_recoverable_header(tmp_path: Path) -> None:
    """The header lands alone before any batch; kills 0-100 ms (and up to 1 s) later all recover."""
    rng = random.Random(20261203)
    delays = [rng.uniform(0.0, 0.1) for _ in range(5)] + [rng.uniform(0.1, 1.0) for _ in range(2)]
    for trial, delay in enumerate(delays):
        staging, first_size, header = _kill_after_header(tmp_path / f"t{trial}", delay)
        assert first_size == header, (trial, first_size, header)  # no batch came with it
        out = tmp_path / f"r{trial}.fsr"
        assert main(["recover", str(staging), "-o", str(out)]) in (0, 3), (trial, delay)
        validate(out)
        with FsrReader(out) as reader:
            assert reader.recovered


def test_the_header_prefix_check_sees_a_batch(tmp_path: Path) -> None:
    """The check above can fail: bytes holding a header plus a batch are longer than the header."""
    from fastsim_recording_format import RecordIn, RunMetadata, StreamSpec

    path = tmp_path / "x.fsr.incomplete"
    with FsrWriter(path, RunMetadata("r", "c"), [StreamSpec(1, "s", "o")]) as writer:
        header = writer.position
        writer.write_batch([RecordIn.data(1, 1, 1, 0, 0, b"payload")])
        writer.flush()
    data = path.read_bytes()
    assert _header_length(data, path) == header < len(data)


class _Lease:
    """A write lease that records what reached it."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.flushes: list[int] = []

    def write(self, data: bytes | memoryview) -> int:
        self.data += data
        return len(data)

    def flush(self) -> None:
        self.flushes.append(len(self.data))

    def close(self) -> None:
        pass


class _Outputs:
    """Just enough of an output service for the sink's constructor."""

    def __init__(self) -> None:
        self.lease = _Lease()
        self.aborted = False

    def open_write(self, name: str) -> _Lease:
        return self.lease

    def abort(self, lease: object) -> None:
        self.aborted = True


def test_the_sink_writes_and_flushes_the_header_when_its_lease_opens(tmp_path: Path) -> None:
    """Before any batch, the sink has written exactly the header and run metadata and flushed them."""
    from typing import Any, cast

    from fastsim_record.adapters.fsr_sink import FsrSink
    from fastsim_record.ports.sinks import StreamDecl

    outputs = _Outputs()
    FsrSink(
        cast(Any, outputs), "episode.fsr", run_id="r", completion_id="c",
        streams=[StreamDecl("events", "events", {"payload_codec": "json"})],
        integrity="structural", policy_integrity="none", producer={"name": "test"},
    )
    data = bytes(outputs.lease.data)
    assert data
    copy = tmp_path / "head.fsr.incomplete"
    assert _header_length(data, copy) == len(data)
    assert outputs.lease.flushes[-1] == len(data)
    assert not outputs.aborted
