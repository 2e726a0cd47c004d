"""``iter_decoded`` and ``Decoding``: typed records, both orders, bounds, the payload CRC."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from fastsim_recording_format import (
    FormatError,
    FsrReader,
    FsrWriter,
    RecordIn,
    RunMetadata,
    StreamSpec,
)
from fastsim_recording_format.codecs.geometry import decode_transforms, encode_transforms
from fastsim_recording_format.codecs.image import MAX_FRAME_PIXELS
from fastsim_recording_format.reading._decoders import DECODERS, MAX_JSON_PAYLOAD
from fastsim_recording_format.reading.decoded import (
    CalibrationRecord,
    Decoding,
    FrameRecord,
    GeometryRecord,
    JsonRecord,
    TickRecord,
    iter_decoded,
)

LAYOUT = [
    {"name": "arm.q", "dtype": "<f8", "shape": [2], "units": ["rad", "rad"], "offset": 0, "nbytes": 16},
    {"name": "arm.n", "dtype": "<i4", "shape": [], "units": [], "offset": 16, "nbytes": 4},
]
W, H = 4, 3


def _specs(width: int = W, height: int = H) -> list[StreamSpec]:
    return [
        StreamSpec(1, "events", "events", {"payload_codec": "json"}),
        StreamSpec(2, "observations", "observations", {"payload_codec": "numeric-tick/1", "record_bytes": 20},
                   {"channels": LAYOUT}),
        StreamSpec(3, "cameras.cam.rgb", "camera.rgb", {"payload_codec": "raw_rgb", "width": width, "height": height}),
        StreamSpec(4, "cameras.cam.intrinsics", "camera.intrinsics", {"payload_codec": "ndarray"}),
        StreamSpec(5, "cameras.cam.extrinsics.translation", "camera.translation", {"payload_codec": "ndarray"}),
        StreamSpec(6, "cameras.cam.extrinsics.quaternion_xyzw", "camera.quaternion", {"payload_codec": "ndarray"}),
        StreamSpec(7, "geometry", "geometry", {"payload_codec": "fastsim-scene-geometry/2"}),
    ]


def _tick(i: int) -> bytes:
    return np.array([i, -i], "<f8").tobytes() + np.array(i, "<i4").tobytes()


def _frame(i: int) -> bytes:
    return bytes((i + k) % 256 for k in range(W * H * 3))


def _write(path: Path, ticks: int = 3, *, json_payload: bytes | None = None, tick_payload: bytes | None = None,
           k_payload: bytes | None = None, specs: list[StreamSpec] | None = None) -> Path:
    """Generation 0: ``ticks`` ticks 10 ns apart; per tick an event, a numeric tick, a frame,
    the three calibration records and a transforms record; each tick's event is written last
    but 5 ns before the tick's time, so file order and time order differ."""
    with FsrWriter(path, RunMetadata("r", "c", {}), specs or _specs()) as writer:
        g = 1
        seq = dict.fromkeys(range(1, 8), 1)
        for i in range(ticks):
            t = 10 * i
            payloads = {
                2: tick_payload if tick_payload is not None and i == 1 else _tick(i),
                3: _frame(i),
                4: k_payload if k_payload is not None else np.eye(3).tobytes(),
                5: np.array([i, 0, 0], "<f8").tobytes(),
                6: np.array([0, 0, 0, 1], "<f8").tobytes(),
                7: encode_transforms(["b"], np.array([[i, 0, 0, 0, 0, 0, 1]], "<f8")),
                1: json_payload if json_payload is not None and i == 1 else json.dumps({"tick": i}).encode(),
            }
            records = []
            for sid, payload in payloads.items():
                records.append(RecordIn.data(sid, g, seq[sid], 0, max(0, t - 5) if sid == 1 else t, payload))
                g += 1
                seq[sid] += 1
            writer.write_batch(records)
        writer.seal(terminal_fence={"decision": "commit"})
    return path


def test_typed_records_one_per_kind(tmp_path: Path) -> None:
    """Every DATA record decodes to its typed record; three calibration records make one sample."""
    path = _write(tmp_path / "a.fsr")
    records = list(iter_decoded(path))
    kinds = [type(r) for r in records]
    assert kinds.count(TickRecord) == kinds.count(FrameRecord) == kinds.count(CalibrationRecord) == 3
    assert kinds.count(JsonRecord) == kinds.count(GeometryRecord) == 3
    tick = next(r for r in records if isinstance(r, TickRecord) and r.time_ns == 10)
    assert tick.values["arm.q"].tolist() == [1.0, -1.0]
    assert tick.values["arm.n"].tolist() == [1.0]
    assert tick.values["arm.q"].dtype == np.float64
    frame = next(r for r in records if isinstance(r, FrameRecord) and r.time_ns == 20)
    assert frame.camera == "cam"
    assert frame.payload == _frame(2)
    assert frame.rgb().tobytes() == _frame(2)
    assert frame.rgb().shape == (H, W, 3)
    cal = next(r for r in records if isinstance(r, CalibrationRecord) and r.time_ns == 10)
    assert cal.camera == "cam"
    assert cal.calibrated
    assert np.array_equal(cal.k, np.eye(3))
    assert cal.translation.tolist() == [1.0, 0.0, 0.0]
    assert cal.quaternion_xyzw.tolist() == [0.0, 0.0, 0.0, 1.0]
    event = next(r for r in records if isinstance(r, JsonRecord) and r.time_ns == 15)
    assert event.value == {"tick": 2}
    assert event.data == {"tick": 2}
    assert event.stream == "events"
    geo = next(r for r in records if isinstance(r, GeometryRecord) and r.time_ns == 20)
    assert decode_transforms(geo.payload)["b"].tolist() == [2, 0, 0, 0, 0, 0, 1]
    with pytest.raises(AttributeError):
        tick.time_ns = 5  # type: ignore[misc]  # frozen
    assert not hasattr(tick, "__dict__")  # slots


def test_both_orders(tmp_path: Path) -> None:
    """``file`` is global-sequence order, ``time`` (generation, time, global sequence) order: same records."""
    path = _write(tmp_path / "a.fsr")
    in_file = list(iter_decoded(path, order="file"))
    in_time = list(iter_decoded(path, order="time"))
    assert [r.global_sequence for r in in_file] == sorted(r.global_sequence for r in in_file)
    keys = [(r.generation, r.time_ns, r.global_sequence) for r in in_time]
    assert keys == sorted(keys)
    assert sorted(keys) == sorted((r.generation, r.time_ns, r.global_sequence) for r in in_file)
    assert [r.global_sequence for r in in_time] != [r.global_sequence for r in in_file]
    assert type(in_time[5]) is JsonRecord
    assert in_time[5].time_ns == 5
    assert type(in_file[9]) is JsonRecord
    assert in_file[9].time_ns == 5
    with pytest.raises(ValueError, match="order"):
        iter_decoded(path, order="random")  # type: ignore[arg-type]


def test_streams_select_and_reader_is_left_open(tmp_path: Path) -> None:
    """``streams`` picks streams by name or id; an open reader is used and not closed."""
    path = _write(tmp_path / "a.fsr")
    with FsrReader(path) as reader:
        got = list(iter_decoded(reader, ["events", 2]))
        assert {type(r) for r in got} == {JsonRecord, TickRecord}
        assert len(got) == 6
        assert len(list(iter_decoded(reader, ["geometry"]))) == 3  # still open


def test_decode_one_record_matches_iter_decoded(tmp_path: Path) -> None:
    """``Decoding.decode`` (one record from ``FsrReader``) gives what ``iter_decoded`` gives."""
    path = _write(tmp_path / "a.fsr")
    with FsrReader(path) as reader:
        decoding = Decoding(reader)
        one = [d for r in reader.records() if (d := decoding.decode(r)) is not None]
    many = list(iter_decoded(path))
    assert [(type(a), a.time_ns, a.global_sequence) for a in one] == [
        (type(b), b.time_ns, b.global_sequence) for b in many]


def test_the_codec_table_names_every_codec() -> None:
    """One table: a codec id per decoder factory."""
    assert {"numeric-tick/1", "json", "jpeg", "png", "raw_rgb", "ndarray", "fastsim-scene-geometry/2"} <= set(DECODERS)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"json_payload": b"[" * (MAX_JSON_PAYLOAD + 1)}, "over the"),
    ({"json_payload": b"{not json"}, "does not parse"),
    ({"tick_payload": bytes(12)}, "record size is 20"),
    ({"k_payload": bytes(8)}, "not 72"),
])
def test_bounds_are_refused_naming_the_offset(tmp_path: Path, kwargs: dict[str, bytes], message: str) -> None:
    """A payload outside its codec's bounds is one FormatError naming its file offset."""
    path = _write(tmp_path / "bad.fsr", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(FormatError, match=message) as info:
        list(iter_decoded(path))
    assert info.value.offset > 0
    assert re.search(r"at offset \d+$", str(info.value))


def test_frame_pixels_are_bounded_before_decoding(tmp_path: Path) -> None:
    """A descriptor over MAX_FRAME_PIXELS is refused when a frame is decoded, not allocated."""
    side = int(MAX_FRAME_PIXELS**0.5) * 2
    specs = _specs(side, side)
    path = tmp_path / "huge.fsr"
    with FsrWriter(path, RunMetadata("r", "c", {}), specs) as writer:
        writer.write_batch([RecordIn.data(3, 1, 1, 0, 0, b"\0" * 12)])
        writer.seal(terminal_fence={"decision": "commit"})
    (frame,) = list(iter_decoded(path))
    assert isinstance(frame, FrameRecord)
    with pytest.raises(FormatError, match=r"pixels|MAX_FRAME|frame"):
        frame.rgb()


def test_a_payload_crc_mismatch_names_file_stream_and_offset(tmp_path: Path) -> None:
    """One changed payload byte: the batch's CRC check names the file, its streams and the offset."""
    path = _write(tmp_path / "a.fsr")
    data = bytearray(path.read_bytes())
    with FsrReader(path) as reader:
        assert reader.payload_crc
        rec = next(r for r in reader.records("cameras.cam.rgb") if r.sim_time_ns == 10)
        at = rec.payload_offset
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="payload CRC-32C mismatch") as info:
        list(iter_decoded(path))
    text = str(info.value)
    assert str(path) in text
    assert "cameras.cam.rgb" in text
    assert re.search(r"at offset \d+$", text)
    with FsrReader(path) as reader:  # Decoding.decode checks the same batch
        decoding = Decoding(reader)
        with pytest.raises(FormatError, match="payload CRC-32C mismatch"):
            _ = [decoding.decode(r) for r in reader.records()]
    assert len(list(iter_decoded(path, verify=False))) == 15  # unchecked: the flipped frame is read as is
