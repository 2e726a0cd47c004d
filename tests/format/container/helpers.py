"""Helpers for the FSR tests: small files, a region map of a file, a read-counting file."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

import fastsim_recording_format.writer as writer_module
from fastsim_recording_format import (
    FsrReader,
    FsrWriter,
    RecordIn,
    RecordKind,
    RunMetadata,
    StreamSpec,
)
from fastsim_recording_format._layout import (
    BATCH_HEADER,
    FILE_HEADER,
    INDEX_DTYPE,
    PROJECTION_DTYPE,
    RECORD_DTYPE,
    TRAILER,
    pad8,
)
from fastsim_recording_format._sections import encode_tail

RUN = RunMetadata("run-1", "completion-1", {"name": "tests", "version": "0"})
STREAMS = [
    StreamSpec(1, "obs.joints", "observation", {"dtype": "float64", "shape": [7]}, {"entity": "robot"}),
    StreamSpec(7, "cameras.front.rgb", "camera.rgb", {"codec": "jpeg", "quality": 92}, {}),
    StreamSpec(9, "events", "event", {}, {"lossless": True}),
]


def write_bytes(
    streams: Sequence[StreamSpec],
    batches: Sequence[Sequence[RecordIn]],
    integrity: str = "structural",
    fence: Mapping[str, Any] | None = None,
    seal: bool = True,
    run: RunMetadata = RUN,
) -> bytes:
    """Write a file into memory and return its bytes."""
    buf = io.BytesIO()
    writer = FsrWriter(buf, run, streams, integrity)
    for batch in batches:
        writer.write_batch(batch)
    if seal:
        writer.seal(fence)
    return buf.getvalue()


def small_batches() -> list[list[RecordIn]]:
    """Three batches over three streams: data, a gap, a barrier, metadata, odd payload sizes."""
    return [
        [
            RecordIn.data(1, 1, 1, 0, 0, b"j" * 13, {"unit": "rad"}),
            RecordIn.data(7, 2, 1, 0, 0, b"\xff\xd8" + b"i" * 30),
            RecordIn.data(9, 3, 1, 0, 5, b"", {"event": "start", "note": "é"}),
        ],
        [
            RecordIn.data(1, 4, 2, 0, 10, b"j" * 5),
            RecordIn.gap(7, (5, 6), (2, 3), 0, 10, {"reason": "drop_oldest"}),
            RecordIn(9, RecordKind.BARRIER, 7, 2, 1, 0, b"", {"reset": 1}),
        ],
        [
            RecordIn(1, RecordKind.BARRIER, 8, 3, 1, 0),
            RecordIn.data(1, 9, 4, 1, 8, b"k" * 21, {"unit": "rad"}),
            RecordIn.data(7, 10, 4, 1, 8, b"\xff\xd8" + b"q" * 17),
        ],
    ]


def small_file(integrity: str = "strong") -> bytes:
    """A small sealed file exercising every record kind."""
    return write_bytes(STREAMS, small_batches(), integrity, {"last_global_sequence": 10})


def regions(data: bytes) -> list[tuple[int, int, str]]:
    """(start, end, name) for every region of a sealed file, in file order."""
    meta_len = int.from_bytes(data[16:24], "little")
    out = [(0, FILE_HEADER.size, "file header"), (FILE_HEADER.size, FILE_HEADER.size + meta_len, "run metadata")]
    pos = FILE_HEADER.size + meta_len
    out.append((pos, pad8(pos), "metadata padding"))
    with FsrReader(io.BytesIO(data)) as reader:
        index = reader.batch_index.copy()
    for entry in index:
        off = int(entry["offset"])
        fields = BATCH_HEADER.unpack_from(data, off)
        count, mlen, plen = fields[3], fields[5], fields[6]
        table = off + BATCH_HEADER.size
        blob = table + RECORD_DTYPE.itemsize * count
        pay = blob + pad8(mlen)
        out += [
            (off, table, "batch header"),
            (table, blob, "record table"),
            (blob, blob + mlen, "record metadata"),
            (blob + mlen, pay, "record metadata padding"),
            (pay, pay + plen, "payload"),
            (pay + plen, pay + pad8(plen), "payload padding"),
        ]
    t_off = len(data) - TRAILER.size
    i_off, i_len, p_off, p_len, f_off, f_len = TRAILER.unpack_from(data, t_off)[:6]
    out += [
        (i_off, i_off + i_len, "index"),
        (p_off, p_off + p_len, "projections"),
        (f_off, f_off + f_len, "footer"),
        (f_off + f_len, t_off, "footer padding"),
        (t_off, len(data), "trailer"),
    ]
    return [r for r in out if r[0] < r[1]]


class CountingFile:
    """A seekable binary file that logs every (offset, length) actually read."""

    def __init__(self, data: bytes | str | os.PathLike[str]) -> None:
        self._f: Any = io.BytesIO(data) if isinstance(data, bytes) else open(data, "rb", buffering=0)  # noqa: SIM115
        self.reads: list[tuple[int, int]] = []

    @property
    def bytes_read(self) -> int:
        return sum(n for _, n in self.reads)

    def read(self, n: int = -1) -> bytes:
        at = self._f.tell()
        data: bytes = self._f.read(n)
        self.reads.append((at, len(data)))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._f.seek(offset, whence))

    def tell(self) -> int:
        return int(self._f.tell())

    def close(self) -> None:
        self._f.close()


def footer_parts(data: bytes) -> tuple[int, Any, Any, dict[str, Any]]:
    """(index offset, index, projections, footer object) of a sealed file."""
    t = len(data) - TRAILER.size
    i_off, i_len, p_off, p_len, f_off, f_len = TRAILER.unpack_from(data, t)[:6]
    index = np.frombuffer(data[i_off:i_off + i_len], INDEX_DTYPE)
    proj = np.frombuffer(data[p_off:p_off + p_len], PROJECTION_DTYPE)
    return i_off, index, proj, json.loads(data[f_off:f_off + f_len])


def with_footer(data: bytes, edit: Callable[[dict[str, Any]], None]) -> bytes:
    """``data`` with its footer JSON edited and the tail (CRCs included) re-encoded."""
    i_off, index, proj, footer = footer_parts(data)
    edit(footer)
    return data[:i_off] + encode_tail(i_off, index, proj, footer)


def written_batches(
    batches: Sequence[Sequence[Any]], monkeypatch: pytest.MonkeyPatch, *, without: str | None = None
) -> tuple[bytes, list[str]]:
    """The file bytes and each batch's refusal ('' when written) of an ``FsrWriter`` given
    ``batches`` in turn; ``without`` names a writer fast path (``"block_batch"``,
    ``"segment_batch"``) turned off, so that both paths can be compared."""
    with monkeypatch.context() as patch:
        if without is not None:
            patch.setattr(writer_module, without, lambda *a: None)
        target = io.BytesIO()
        writer = FsrWriter(target, RUN, STREAMS, integrity="strong", payload_crc=True)
        refusals = []
        for batch in batches:
            try:
                writer.write_batch(list(batch))
                refusals.append("")
            except (ValueError, TypeError) as exc:
                refusals.append(f"{type(exc).__name__}: {exc}")
        if writer._state == "open":
            writer.seal(terminal_fence={"decision": "commit"})
        return target.getvalue(), refusals
