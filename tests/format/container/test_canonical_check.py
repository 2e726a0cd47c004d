"""The canonical-JSON check at open (docs/fsr-format.md section 0): the reader's faster
re-encode refuses exactly what ``encoding.canonical_json`` refuses, with the same line."""

from __future__ import annotations

import io
import json
import struct

import pytest

from fastsim_recording_format import FormatError, FsrReader
from fastsim_recording_format._json import decode_canonical, decode_object
from fastsim_recording_format._layout import FILE_HEADER, TRAILER, crc
from fastsim_recording_format.encoding import canonical_json

from .helpers import STREAMS, small_batches, write_bytes

VALUES = [
    {"b": 1, "a": [1.5, -0.0, 1e300, 2**70, None, True, False], "é": "naïve \u2603 \"q\" \\ \n\t\x01"},
    [{"z": {"y": {"x": []}}}, {}, "", 0, -7, 0.1],
    {"streams": [{"stream_id": i, "name": f"s{i}", "attributes": {"k": [i, str(i)]}} for i in range(50)]},
]

NON_CANONICAL = [
    b'{"a": 1}',  # whitespace
    b'{"b":1,"a":2}',  # keys out of order
    b'{"a":1,"a":1}',  # a duplicate key
    b'{"a":"\\u00e9"}',  # non-ASCII escaped
    b'{"a":"\\/"}',  # an escape the encoder does not write
    b'{"a":1.50}',  # a float not in shortest form
    b'{"a":1e2}',
    b'{"a":-0}',
    b'{"a":1.0E+2}',
    b' {"a":1}',
    b'{"a":[1, 2]}',
]


@pytest.mark.parametrize("value", VALUES)
def test_the_check_reencodes_like_canonical_json(value: object) -> None:
    """The check reencodes like canonical json."""
    blob = canonical_json(value)
    assert decode_canonical(blob, 5, "x") == json.loads(blob)


@pytest.mark.parametrize("text", NON_CANONICAL)
def test_non_canonical_text_is_refused_with_its_line(text: bytes) -> None:
    """Non canonical text is refused with its line."""
    with pytest.raises(FormatError) as err:
        decode_object(text, 40, "run metadata")
    assert (err.value.offset, err.value.reason) == (40, "run metadata is not canonical JSON")


@pytest.mark.parametrize(("text", "kind"), [(b'{"a":NaN}', "ValueError"), (b'{"a":Infinity}', "ValueError"),
                                            (b'{"a":', "JSONDecodeError"), (b"[" * 100_000, "RecursionError")])
def test_invalid_json_keeps_its_line(text: bytes, kind: str) -> None:
    """Invalid json keeps its line."""
    with pytest.raises(FormatError) as err:
        decode_canonical(text, 9, "footer")
    assert err.value.reason == f"footer is not valid JSON ({kind})"


def _reordered(blob: bytes) -> bytes:
    """The same object, the same length, its top-level keys in reverse order."""
    value = json.loads(blob)
    out = json.dumps(dict(reversed(list(value.items()))), separators=(",", ":"), ensure_ascii=False).encode()
    assert len(out) == len(blob)
    assert out != blob
    return out


def test_open_refuses_run_metadata_keys_out_of_order() -> None:
    """Open refuses run metadata keys out of order."""
    data = bytearray(write_bytes(STREAMS, small_batches()))
    meta_len = FILE_HEADER.unpack_from(data)[4]
    data[32:32 + meta_len] = _reordered(bytes(data[32:32 + meta_len]))
    struct.pack_into("<I", data, 24, crc(data[32:32 + meta_len]))  # both CRCs made to match
    struct.pack_into("<I", data, 28, crc(data[:28]))
    with pytest.raises(FormatError) as err:
        FsrReader(io.BytesIO(bytes(data)))
    assert str(err.value) == "run metadata is not canonical JSON at offset 32"


def test_open_refuses_a_footer_with_keys_out_of_order() -> None:
    """Open refuses a footer with keys out of order."""
    data = bytearray(write_bytes(STREAMS, small_batches()))
    t_off = len(data) - TRAILER.size
    fields = list(TRAILER.unpack_from(data, t_off))
    f_off, f_len = fields[4], fields[5]
    data[f_off:f_off + f_len] = _reordered(bytes(data[f_off:f_off + f_len]))
    fields[8] = crc(data[f_off:f_off + f_len])
    TRAILER.pack_into(data, t_off, *fields)
    struct.pack_into("<I", data, t_off + 60, crc(data[t_off:t_off + 60]))
    with pytest.raises(FormatError) as err:
        FsrReader(io.BytesIO(bytes(data)))
    assert str(err.value) == f"footer is not canonical JSON at offset {f_off}"
