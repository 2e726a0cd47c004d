"""``fsr cat FILE [--stream NAME] [--limit N] [--payload]``: records as JSON lines.

    | # | outcome                        | stdout                 | stderr                | exit |
    |---|--------------------------------|------------------------|-----------------------|------|
    | 1 | readable file                  | one JSON line a record | -                     | 0    |
    | 2 | a defect found while reading   | the lines before it    | ``invalid: <reason>`` | 1    |
    | 3 | unreadable path, unknown stream, negative limit | -     | ``fsr cat: <error>``  | 2    |

Each line: ``stream``, ``stream_id``, ``kind``, ``global_sequence``, ``global_last``,
``stream_sequence``, ``stream_last``, ``generation``, ``sim_time_ns``, ``metadata``,
``payload_length``.  Payloads are never read, unless ``--payload``: then a data record
also carries ``payload``, decoded by its stream's codec -- ``json`` payloads as their
JSON value, ``numeric-tick/1`` ticks as ``{channel: {"names": [...], "values": [...]}}``
(the layout in ``docs/reading.md``) -- and ``payload_codec`` for every other codec
(images and binary payloads are not printed; ``fsr frames`` writes frames).  A JSON
payload over ``MAX_JSON_PAYLOAD`` bytes is not read; a numeric tick whose length is not
the stream's record size, or a JSON payload that does not parse, is ``invalid``, exit 1.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from typing import Any

from fastsim_recording_format import FormatError, FsrReader
from fastsim_recording_format.codecs.numeric import NUMERIC_CODEC
from fastsim_recording_format.model import Record, RecordKind
from fastsim_recording_format.reading._decoders import MAX_JSON_PAYLOAD, codec_id
from fastsim_recording_format.reading.decoded import Decoding, JsonRecord, TickRecord

__all__ = ["MAX_JSON_PAYLOAD", "add_arguments", "run"]

# JSON payloads larger than MAX_JSON_PAYLOAD (the format package's decoding bound) are
# not read by ``--payload``.


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr cat``'s arguments."""
    parser.add_argument("file", metavar="FILE", help="a sealed .fsr file")
    parser.add_argument("--stream", metavar="NAME", help="only this stream's records")
    parser.add_argument("--limit", metavar="N", type=int, help="at most N records")
    parser.add_argument("--payload", action="store_true",
                        help="decode JSON payloads and numeric ticks (names and values)")


class _PayloadDecoder:
    """``--payload``: JSON and numeric-tick payloads decoded by the format package's
    :class:`~fastsim_recording_format.reading.decoded.Decoding` (its bounds, its CRC check)."""

    def __init__(self, reader: FsrReader) -> None:
        self._decoding = Decoding(reader, keep_tick_bytes=True)
        self._codecs = {s.stream_id: (codec_id(s), str(s.codec.get("payload_codec", s.codec.get("codec", ""))))
                        for s in reader.streams}

    def fields(self, rec: Record) -> dict[str, Any]:
        if rec.kind is not RecordKind.DATA:
            return {}
        codec, spelled = self._codecs[rec.stream_id]
        if codec == "json":
            if rec.payload_length > MAX_JSON_PAYLOAD:
                return {"payload_codec": spelled, "payload": None,
                        "payload_note": f"over {MAX_JSON_PAYLOAD} bytes, not read"}
            value = self._decoding.decode(rec)
            if isinstance(value, JsonRecord):
                return {"payload": value.value}
        elif codec == NUMERIC_CODEC:
            tick = self._decoding.decode(rec)
            if isinstance(tick, TickRecord):
                native = tick.native()
                return {"payload": {
                    ch.name: {"names": list(ch.element_names), "values": native[ch.name].tolist()}
                    for ch in tick.layout}}
        return {"payload_codec": spelled}


def run(args: argparse.Namespace) -> int:
    """Print JSON lines; 0 ok, 1 invalid, 2 usage or unreadable."""
    if args.limit is not None and args.limit < 0:
        print("fsr cat: --limit must be >= 0", file=sys.stderr)
        return 2
    try:
        with FsrReader(args.file) as reader:
            names = {s.stream_id: s.name for s in reader.streams}
            if args.stream is not None and args.stream not in names.values():
                print(f"fsr cat: no stream named {args.stream!r}", file=sys.stderr)
                return 2
            decoder = _PayloadDecoder(reader) if args.payload else None
            for rec in itertools.islice(reader.records(args.stream), args.limit):
                extra = decoder.fields(rec) if decoder is not None else {}
                sys.stdout.write(json.dumps({
                    "stream": names[rec.stream_id],
                    "stream_id": rec.stream_id,
                    "kind": rec.kind.name.lower(),
                    "global_sequence": rec.global_sequence,
                    "global_last": rec.global_last,
                    "stream_sequence": rec.stream_sequence,
                    "stream_last": rec.stream_last,
                    "generation": rec.generation,
                    "sim_time_ns": rec.sim_time_ns,
                    "metadata": rec.metadata,
                    "payload_length": rec.payload_length,
                    **extra,
                }, sort_keys=True, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    except FormatError as exc:
        print(f"invalid: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"fsr cat: {exc}", file=sys.stderr)
        return 2
    return 0
