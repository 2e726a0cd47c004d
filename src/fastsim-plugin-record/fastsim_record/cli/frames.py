"""``fsr frames FILE --camera ALIAS -o DIR [--every N]``: a camera's decoded frames as PNG files.

Frames are decoded exactly as the RGB stream's recorded descriptor says (JPEG, PNG or a
legacy 0.3.0-era raw-RGB payload) and written losslessly as
``DIR/<alias>-g<generation>-<stream sequence, 6 digits>.png`` (a grey or RGBA camera,
docs/fsr-format.md 9.2, as a grey or RGBA PNG: exactly as recorded).

    | # | outcome                                          | stderr / stdout              | exit |
    |---|--------------------------------------------------|------------------------------|------|
    | 1 | frames written                                   | ``wrote N frames to DIR``    | 0    |
    | 2 | ``--every`` below 1, unreadable FILE, DIR cannot | one line                     | 2    |
    |   | be created, or no camera ALIAS in the file       | (naming the known aliases)   |      |
    | 3 | FILE is not a valid FSR, or a payload does not   | ``invalid: <reason>``        | 1    |
    |   | decode, or its JPEG SOF / PNG IHDR header names  | (names the record's offset)  |      |
    |   | other dimensions than the descriptor, or more    |                              |      |
    |   | than ``MAX_FRAME_PIXELS`` (2**26) pixels         |                              |      |

Frames are decoded by the format package (``reading.decoded``: ``FrameRecord.rgb``), which
checks each payload's header before decoding it; the RGB frame is turned into OpenCV's BGR
order in place and encoded from there, so ``fsr frames`` holds at most about two declared
frames (the decoded frame and its PNG) besides the interpreter.

Never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from fastsim_recording_format import FormatError, FsrReader, RecordKind, names
from fastsim_recording_format.codecs.image import check_pixels
from fastsim_recording_format.errors import PayloadError
from fastsim_recording_format.reading._codecs import image_codec
from fastsim_recording_format.reading._errors import BadRecording
from fastsim_recording_format.reading.decoded import Decoding, FrameRecord

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr frames``'s arguments."""
    parser.add_argument("file", metavar="FILE", help="an FSR file")
    parser.add_argument("--camera", required=True, metavar="ALIAS", help="the camera alias")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory")
    parser.add_argument(
        "--every", type=int, default=1, metavar="N", help="write every N-th frame (default 1)"
    )


def _aliases(reader: FsrReader) -> list[str]:
    return sorted(cam[0] for s in reader.streams if (cam := names.camera_of(s.name)) and cam[1] == names.RGB)


def run(args: argparse.Namespace) -> int:
    """Write the frames; see the module's outcome table."""
    if args.every < 1:
        print(f"fsr frames: --every must be at least 1 (got {args.every})", file=sys.stderr)
        return 2
    path = Path(args.file)
    if not path.is_file():
        print(f"fsr frames: cannot read {path}: no such file", file=sys.stderr)
        return 2
    try:
        with FsrReader(path) as reader:
            stream_name = names.rgb_stream(args.camera)
            if stream_name not in {s.name for s in reader.streams}:
                known = ", ".join(_aliases(reader)) or "none"
                print(
                    f"fsr frames: {path} has no camera {args.camera!r} (cameras: {known})",
                    file=sys.stderr,
                )
                return 2
            try:
                codec = image_codec(reader.stream(stream_name))
            except BadRecording as exc:
                raise PayloadError(f"{exc}") from None
            check_pixels(codec.width, codec.height, f"stream {stream_name} descriptor frame")
            out = Path(args.output)
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                print(f"fsr frames: cannot create {out}: {exc.strerror or exc}", file=sys.stderr)
                return 2
            with _quiet_native_stderr():
                written = _write_frames(reader, stream_name, args.camera, out, args.every)
    except (FormatError, PayloadError) as exc:
        print(f"invalid: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"fsr frames: {exc.strerror or exc}: {exc.filename or path}", file=sys.stderr)
        return 2
    print(f"wrote {written} frames to {out}")
    return 0


@contextlib.contextmanager
def _quiet_native_stderr() -> Iterator[None]:
    """Silence what libjpeg/libpng print straight to file descriptor 2 (``Corrupt JPEG
    data: ...``): a damaged frame is reported as one line by this command, or not at all."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 at all: nothing to silence
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _write_frames(reader: FsrReader, stream: str, alias: str, out: Path, every: int) -> int:
    import cv2  # OpenCV loads only when a frame is decoded

    decoding = Decoding(reader, [stream])
    written = 0
    index = 0
    for record in reader.records(stream):
        if record.kind is not RecordKind.DATA:
            continue
        index += 1
        if (index - 1) % every:
            continue
        where = f"record at offset {record.payload_offset} (global sequence {record.global_sequence})"
        frame = decoding.decode(record)
        if not isinstance(frame, FrameRecord):  # pragma: no cover - the stream is a frame stream
            continue
        try:
            bgr = frame.rgb(strict=False)  # damaged entropy data: decoded as far as it goes, as OpenCV does
            if bgr.shape[2] != 1:  # a grey frame has no colour order; RGBA keeps its alpha
                cv2.cvtColor(bgr, cv2.COLOR_RGBA2BGRA if bgr.shape[2] == 4 else cv2.COLOR_RGB2BGR, dst=bgr)
            ok, png = cv2.imencode(".png", bgr)
        except cv2.error:
            ok = False
        except FormatError as exc:  # the decoder's reason, with the record's offset and sequence
            raise PayloadError(f"{where}: {exc.reason}") from None
        if not ok:
            raise PayloadError(f"{where}: could not encode PNG")
        del bgr
        name = f"{alias}-g{record.generation}-{record.stream_sequence:06d}.png"
        with open(out / name, "wb") as dst:
            dst.write(png.data)
        written += 1
    return written
