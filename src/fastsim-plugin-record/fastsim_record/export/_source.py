"""What the exporters share: sources, validation receipts, generation offsets, and a
camera's recorded frame bytes (which the reading API does not serve; read here one
record at a time through the FSR format package's public reader)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy.typing as npt

from fastsim_record.export._port import ExportOptions, ExportSummary, Progress
from fastsim_record.export._stream import generation_spans, in_order_records
from fastsim_recording_format import FsrReader, RecordKind, names
from fastsim_recording_format.reading import Recording
from fastsim_recording_format.reading import open as open_recording

__all__ = [
    "EncodedFrame",
    "PerSourceExporter",
    "export_each",
    "collect_sources",
    "encoded_frames",
    "generation_offsets",
    "generation_spans",
    "receipt",
]

Array = npt.NDArray[Any]
POSITION_SUFFIX = ".joint_position"
VELOCITY_SUFFIX = ".joint_velocity"


def collect_sources(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """FSR files named directly, or every ``*.fsr`` below a folder (sorted), in order.

    Raises ``FileNotFoundError`` with one line for a path that does not exist or a folder
    without FSR files."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.fsr") if p.is_file())
            if not found:
                raise FileNotFoundError(f"{path}: folder holds no *.fsr file")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    return out


@attrs.frozen
class EncodedFrame:
    """One camera frame as recorded: its bytes, ``jpeg``/``png``/``raw_rgb``, its time."""

    data: bytes
    codec: str
    time_ns: int
    generation: int


def encoded_frames(rec: Recording, camera: str, generation: int | None = None) -> Iterator[EncodedFrame]:
    """A camera's frames as recorded, one at a time (never decoded, never held together)."""
    name = names.rgb_stream(camera)
    with FsrReader(rec.path) as reader:
        codec = str(reader.stream(name).codec.get("payload_codec", ""))
        for r in reader.records(name):
            if r.kind is not RecordKind.DATA or (generation is not None and r.generation != generation):
                continue
            yield EncodedFrame(r.payload, codec, r.sim_time_ns, r.generation)


_RECEIPTS: dict[tuple[str, int, int], dict[str, Any]] = {}


def receipt(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The validation receipt of a file, every payload CRC-32C checked when the file has
    them, else structural (validated once per process and file version; raises
    ``FormatError`` naming the offset of the first defect, and for a CRC mismatch the
    batch's streams)."""
    from fastsim_record.batch.jobs import payload_receipt

    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if key not in _RECEIPTS:
        _RECEIPTS[key] = payload_receipt(os.fspath(path)).to_json()
    return _RECEIPTS[key]


def generation_offsets(rec: Recording) -> dict[int, int]:
    """Per generation, the offset added to simulation time so generations lie end to end.

    ``offset(first) = 0``; ``offset(g) = offset(g-1) + max(0, last(g-1) - first(g))``,
    where ``first``/``last`` are a generation's earliest and latest record times (of
    any stream, from the file's projections).  So
    exported time never goes backward, and is unchanged when simulation time did not
    restart at a reset."""
    offsets: dict[int, int] = {}
    offset = 0
    prev_last: int | None = None
    for g, (first, last) in generation_spans(rec.path).items():
        if prev_last is not None:
            offset += max(0, prev_last - first)
        offsets[g] = offset
        prev_last = last
    for g in rec.generations():
        offsets.setdefault(g, offset)
    return offsets


def export_each(
    sources: Sequence[Path], out: Path, progress: Progress, suffix: str,
    write: Callable[[Recording, Path, Progress], Mapping[str, int]],
) -> ExportSummary:
    """One output per source: ``out`` itself for one source; for several, ``out`` is a new
    folder of ``NNNN-<stem><suffix>`` files.  Counts are summed over the sources."""
    recs = [open_recording(p) for p in sources]
    progress.total(sum(in_order_records(r.path, r.info.records) for r in recs))
    counts: dict[str, int] = {}
    segments = 0
    if len(recs) > 1:
        out.mkdir()
    for i, rec in enumerate(recs):
        target = out if len(recs) == 1 else out / f"{i:04d}-{Path(rec.path).stem}{suffix}"
        for k, v in write(rec, target, progress).items():
            counts[k] = counts.get(k, 0) + v
        segments += len(rec.generations())
        rec.close()
    return ExportSummary(out, segments, counts)


@attrs.frozen
class PerSourceExporter:
    """A target that writes one file per source (MCAP, Rerun): several sources make ``out``
    a folder of them (:func:`export_each`)."""

    name: str  # the --to value
    extra: str  # the optional extra holding its dependencies
    suffix: str  # of each file in the folder
    write: Callable[[Recording, Path, Progress], Mapping[str, int]]
    load: Callable[[], object]  # imports the extra, or raises MissingExtra

    def export(
        self, sources: Sequence[Path], out: Path, options: ExportOptions, progress: Progress
    ) -> ExportSummary:
        """Write ``out`` (a file for one source, a folder for several)."""
        self.load()
        return export_each(sources, out, progress, self.suffix, self.write)
