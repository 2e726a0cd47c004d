"""Metadata, footer and record-metadata bombs: refused before parsing, in bounded memory.

The bound every case asserts is the issue's: peak RSS of the command on a file of size S
is at most 64 MB + 4 S.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fastsim_recording_format import FsrWriter, RecordIn, StreamSpec
from fastsim_recording_format._layout import (
    FILE_HEADER,
    FILE_MAGIC,
    MAX_JSON_ITEMS,
    MAX_METADATA_BYTES,
    MAX_RECORD_METADATA_BYTES,
    MAX_STREAMS,
    canonical_json,
    crc,
    pad8,
)
from fastsim_recording_format._sections import encode_tail

from .support import MIB, RUN, run_fsr


def _head(meta_blob: bytes) -> bytes:
    hdr = FILE_HEADER.pack(FILE_MAGIC, 1, 2, 0, len(meta_blob), crc(meta_blob), 0)
    hdr = hdr[:28] + crc(hdr[:28]).to_bytes(4, "little")
    return hdr + meta_blob + bytes(pad8(len(meta_blob)) - len(meta_blob))


def _lean_metadata(streams: int) -> bytes:
    """Canonical run metadata with ``streams`` minimal stream entries (built as bytes: fast)."""
    entries = b",".join(
        b'{"attributes":{},"codec":{},"kind":"o","name":"s%d","stream_id":%d}' % (k, k) for k in range(streams)
    )
    blob = _metadata(0).replace(b'"streams":[]', b'"streams":[' + entries + b"]")
    return blob


def _metadata(streams: int, attributes: object = None, lean: bool = False) -> bytes:
    return canonical_json({
        "format": "fsr", "version": "1.2", "producer": {"name": "bomb"}, "run_id": "r",
        "completion_id": "c", "mode": "record", "source_sha256": None, "integrity": "structural",
        "attributes": {} if attributes is None else {"a": attributes},
        "streams": [
            {"stream_id": k, "name": f"s{k}", "kind": "o", "codec": {}, "attributes": {}}
            if lean else
            {"stream_id": k, "name": f"stream.number.{k}", "kind": "observation",
             "codec": {"dtype": "float64", "shape": [7]}, "attributes": {"entity": "robot"}}
            for k in range(streams)
        ],
    })


def _sealed(meta_blob: bytes, streams: int = 0) -> bytes:
    head = _head(meta_blob)
    footer = {
        "batches": 0, "records": 0, "records_by_kind": {"barrier": 0, "data": 0, "gap": 0},
        "payload_bytes": 0, "global_sequence": {"first": None, "last": None},
        "streams": [
            {"stream_id": k, "records": 0, "data": 0, "gap": 0, "barrier": 0, "payload_bytes": 0,
             "first_stream_sequence": None, "last_stream_sequence": None, "generations": []}
            for k in range(streams)
        ],
        "integrity": "structural", "mode": "record", "source_sha256": None, "completion_id": "c",
        "degraded": False, "recovered": False, "terminal_fence": None,
    }
    import numpy as np

    from fastsim_recording_format._layout import INDEX_DTYPE, PROJECTION_DTYPE

    return head + encode_tail(len(head), np.empty(0, INDEX_DTYPE), np.empty(0, PROJECTION_DTYPE), footer)


def _check_all(path: Path, tmp_path: Path, fragment: str, commands: tuple[str, ...] = ("validate",)) -> None:
    size = path.stat().st_size
    for command in commands:
        argv = [command, str(path)] + (["-o", str(tmp_path / f"{command}.fsr")] if command == "recover" else [])
        code, err, peak = run_fsr(*argv)
        assert code == 1, (command, err)
        assert len(err.splitlines()) == 1, err
        assert fragment in err, err
        assert peak <= 64 * 1000 * 1000 + 4 * size, (command, peak / MIB)


def test_the_audits_300000_stream_file_is_refused_from_its_header(tmp_path: Path) -> None:
    """A 23 MB file declaring 300,000 streams is refused before its metadata is read (was 519 MB)."""
    path = tmp_path / "streams.fsr.incomplete"
    path.write_bytes(_head(_lean_metadata(300_000)))
    assert path.stat().st_size > 20 * MIB
    _check_all(path, tmp_path, "exceeds the", ("info", "recover"))


def test_a_stream_table_over_the_bound_is_refused(tmp_path: Path) -> None:
    """MAX_STREAMS + 1 streams under the metadata byte bound: one line naming the stream bound."""
    blob = _metadata(MAX_STREAMS + 1)
    assert len(blob) < MAX_METADATA_BYTES
    path = tmp_path / "many.fsr"
    path.write_bytes(_sealed(blob, MAX_STREAMS + 1))
    _check_all(path, tmp_path, f"more than the {MAX_STREAMS} allowed")


def test_a_metadata_length_near_2_to_64_is_refused(tmp_path: Path) -> None:
    """A header declaring an absurd metadata length is refused at offset 16."""
    blob = _metadata(1)
    raw = bytearray(_head(blob))
    hdr = FILE_HEADER.pack(FILE_MAGIC, 1, 2, 0, 2**63, crc(blob), 0)
    raw[:32] = hdr[:28] + crc(hdr[:28]).to_bytes(4, "little")
    path = tmp_path / "len.fsr"
    path.write_bytes(bytes(raw))
    _check_all(path, tmp_path, "at offset 16")


@pytest.mark.parametrize(
    ("attributes", "fragment"),
    [
        ([[]] * (MAX_JSON_ITEMS + 10), "JSON items"),  # flat: ~30x its size as Python objects
        ("DEEP", "not valid JSON"),  # 100,000 deep: too deep for the parser
    ],
    ids=["huge", "deep"],
)
def test_huge_or_deep_run_attributes_are_refused(tmp_path: Path, attributes: object, fragment: str) -> None:
    """Run metadata with too many JSON items, or nested too deep, is one line, never a traceback."""
    blob = _metadata(1, attributes)
    if attributes == "DEEP":
        blob = blob.replace(b'"DEEP"', b"[" * 100_000 + b"]" * 100_000)
    path = tmp_path / "attrs.fsr"
    path.write_bytes(_sealed(blob, 1))
    _check_all(path, tmp_path, fragment)


def test_a_footer_bomb_is_refused_before_parsing(tmp_path: Path) -> None:
    """A sealed file whose footer holds a million empty arrays (valid CRCs) is refused unparsed."""
    import numpy as np

    from fastsim_recording_format._layout import INDEX_DTYPE, PROJECTION_DTYPE

    head = _head(_metadata(0))
    footer: dict[str, Any] = {"bomb": [[]] * 1_000_000}
    path = tmp_path / "footer.fsr"
    path.write_bytes(head + encode_tail(len(head), np.empty(0, INDEX_DTYPE), np.empty(0, PROJECTION_DTYPE), footer))
    for command in ("info",):
        code, err, peak = run_fsr(command, str(path))
        assert code == 1
        assert "JSON items" in err, err
        assert peak <= 64 * 1000 * 1000 + 4 * path.stat().st_size


def test_record_metadata_bombs_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record whose metadata is over the byte or item bound (forged past the writer) is refused."""
    monkeypatch.setattr("fastsim_recording_format.writer.MAX_JSON_ITEMS", 1 << 40)
    monkeypatch.setattr("fastsim_recording_format._batch.MAX_RECORD_METADATA_BYTES", 1 << 40)
    stream = StreamSpec(1, "events", "event")
    for name, metadata, fragment in (
        ("items", {"a": [[]] * (MAX_JSON_ITEMS + 1)}, "JSON items"),
        ("bytes", {"a": "x" * MAX_RECORD_METADATA_BYTES}, "byte bound"),
    ):
        path = tmp_path / f"{name}.fsr"
        with FsrWriter(path, RUN, [stream]) as writer:
            writer.write_batch([RecordIn.data(1, 1, 1, 0, 0, b"", metadata)])
            writer.seal()
        monkeypatch.undo()
        commands: tuple[str, ...] = ("cat",) if name == "items" else ("recover",)
        for command in commands:
            argv = [command, str(path)] + (["-o", str(tmp_path / f"{name}.out.fsr")] if command == "recover" else [])
            code, err, peak = run_fsr(*argv)
            if command == "recover":  # the batch is the torn tail: an empty file is recovered
                assert code == 3, err
            else:
                assert code == 1, (command, err)
                assert fragment in err, err
            assert peak <= 64 * 1000 * 1000 + 4 * path.stat().st_size
        monkeypatch.setattr("fastsim_recording_format.writer.MAX_JSON_ITEMS", 1 << 40)
        monkeypatch.setattr("fastsim_recording_format._batch.MAX_RECORD_METADATA_BYTES", 1 << 40)


def test_the_writer_refuses_what_the_reader_would_refuse(tmp_path: Path) -> None:
    """Record metadata over the item or byte bound never reaches a file: the writer refuses it."""
    stream = StreamSpec(1, "events", "event")
    with FsrWriter(tmp_path / "w.fsr", RUN, [stream]) as writer:
        with pytest.raises(ValueError, match="JSON items"):
            writer.write_batch([RecordIn.data(1, 1, 1, 0, 0, b"", {"a": [[]] * (MAX_JSON_ITEMS + 1)})])
        with pytest.raises(ValueError, match="byte bound"):
            writer.write_batch([RecordIn.data(1, 1, 1, 0, 0, b"", {"a": "x" * MAX_RECORD_METADATA_BYTES})])
    with pytest.raises(ValueError, match="streams, more than"):
        FsrWriter(tmp_path / "s.fsr", RUN, [StreamSpec(k, f"s{k}", "o") for k in range(MAX_STREAMS + 1)])
