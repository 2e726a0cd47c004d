"""``open(path)``: a recording as typed, vectorised values, and its per-generation segments.

Words: an *episode* is one file (what a user counts); a *segment* is one Runtime
generation inside it (a reset starts the next).  ``episodes()``, ``episode()`` and the
type name ``Episode`` are the old names of ``segments()``, ``segment()`` and
``Segment``: they still work for one release, with a ``DeprecationWarning``.

Decision table: which records each call returns

    | # | call                         | streams                        | records              |
    |---|------------------------------|--------------------------------|----------------------|
    | 1 | ``numeric(channel)``         | the numeric-tick/1 stream that | DATA, in the view's  |
    |   |                              | declares ``channel``           | generation(s)        |
    | 2 | ``frames/frame/frame_at``    | ``camera.rgb`` of the alias    | DATA                 |
    | 3 | ``calibration(camera)``      | the alias's intrinsics,        | DATA                 |
    |   |                              | translation and quaternion     |                      |
    | 4 | ``events/lifecycle/control`` | kind ``events`` / ``lifecycle``| DATA, JSON-decoded   |
    |   |                              | / ``control``                  |                      |
    | 5 | ``actions()``                | ``control.audit``/``.result``, | DATA (``_actions``)  |
    |   |                              | or the per-step ``action``     |                      |
    |   |                              | channel of a Gymnasium file    |                      |

A :class:`Recording` and each :class:`Segment` is one :class:`~._view.View`: every call
is handed to the part that owns it (``Numeric``, ``JsonRecords``, ``Cameras``, over one
``Scope``: the file and the generation); see ``_view``.

GAP records (declared loss) and BARRIER records (generation boundaries) never appear as
samples; a BARRIER's generation is where a segment starts.  A :class:`Recording` holds
only its path (and ``verify``) when pickled and reopens the file on first use in the new
process.  Payload CRC-32Cs are checked on the first read of each batch (``open(path,
verify=True)``, the default; see :func:`open`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

from fastsim_recording_format._source import Closing
from fastsim_recording_format.reading._errors import BadArgument, unknown
from fastsim_recording_format.reading._file import File, Opened, Scope, as_int
from fastsim_recording_format.reading._values import Info
from fastsim_recording_format.reading._view import View

__all__ = ["Recording", "Segment", "open"]


def deprecated(old: str, new: str) -> None:
    """The one warning of a renamed reading-API name (kept for one release)."""
    warnings.warn(f"{old} is deprecated: use {new} (a segment is one Runtime generation of a file; "
                  "an episode is the file)", DeprecationWarning, stacklevel=3)


class Segment(View):
    """One Runtime generation of a recording: a reset starts a new segment."""

    def __init__(self, recording: Recording, generation: int) -> None:
        self.recording = recording
        self.generation = generation
        self._parts(Scope(recording._opened, generation))

    def __repr__(self) -> str:
        return f"Segment({self.recording.path!r}, generation={self.generation})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Segment, (self.recording, self.generation))


class Recording(View, Closing):
    """A sealed FSR recording opened for reading (a context manager; picklable)."""

    def __init__(self, path: str | os.PathLike[str], verify: bool = True) -> None:
        if not isinstance(path, str | os.PathLike):
            raise BadArgument(f"path must be a str or os.PathLike, got {type(path).__name__}")
        self.path = os.fspath(path)
        self.verify = bool(verify)
        self._open()
        self._file()  # open now: a bad path or file fails here, with one line

    def _open(self) -> None:
        # no reference back to ``self``: the file closes when the last view of it goes
        self._opened = Opened(self.path, self.verify)
        self._parts(Scope(self._opened, None))

    def _file(self) -> File:
        """This process's file state (opened again after a fork or an unpickle)."""
        return self._opened()

    @property
    def info(self) -> Info:
        """Run, completion, integrity, generations, time span and per-stream counts."""
        f = self._file()
        reader = f.tables.reader
        footer = reader.footer
        run_attrs = reader.run.attributes.get("run")
        # the recorder writes the Run's facts under attributes.run; older files have none
        attrs_ = dict(run_attrs) if isinstance(run_attrs, Mapping) else dict(reader.run.attributes)
        created: Mapping[str, Any] = {}
        if not all(k in attrs_ for k in ("name", "backend")):
            for event in self.lifecycle()[:4]:
                if event.name == "run.created":
                    created = event.data
                    break
        fence = footer.get("terminal_fence") or {}
        index = reader.batch_index
        span = (int(index["sim_time_min"].min()), int(index["sim_time_max"].max())) if len(index) else None
        names = {s.stream_id: s.name for s in reader.streams}
        seed = attrs_.get("seed")

        def text(key: str, fallback: Mapping[str, Any]) -> str | None:
            value = attrs_.get(key, fallback.get(key))
            return value if isinstance(value, str) else None

        return Info(
            path=self.path,
            run_id=reader.run.run_id,
            completion_id=reader.run.completion_id,
            name=text("name", created),
            backend=text("backend", created),
            seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            completion=fence.get("completion") if isinstance(fence.get("completion"), str) else None,
            completion_reason=(
                fence.get("completion_reason") if isinstance(fence.get("completion_reason"), str) else None
            ),
            mode=reader.mode,
            integrity=reader.integrity,
            degraded=reader.degraded,
            recovered=reader.recovered,
            generations=self.generations(),
            sim_time_ns=span,
            records={names[int(s["stream_id"])]: int(s["data"]) for s in footer["streams"]},
            size_bytes=reader.size,
            attributes=dict(reader.run.attributes),
        )

    @property
    def payload_crc(self) -> bool:
        """Whether the file carries payload CRC-32Cs (what ``verify`` checks)."""
        return self._file().tables.reader.payload_crc

    def streams(self) -> tuple[str, ...]:
        """Every stream name, in stream-table order."""
        return tuple(self._file().streams)

    def segments(self) -> tuple[Segment, ...]:
        """One view per Runtime generation (segment), in order."""
        return tuple(Segment(self, g) for g in self.generations())

    def segment(self, generation: int) -> Segment:
        """The view of one generation (segment)."""
        g = as_int("generation", generation)
        if g not in self.generations():
            raise unknown("generation", generation, [str(x) for x in self.generations()])
        return Segment(self, g)

    def episodes(self) -> tuple[Segment, ...]:
        """Deprecated name of :meth:`segments` (one release)."""
        deprecated("Recording.episodes()", "Recording.segments()")
        return self.segments()

    def episode(self, generation: int) -> Segment:
        """Deprecated name of :meth:`segment` (one release)."""
        deprecated("Recording.episode()", "Recording.segment()")
        return self.segment(generation)

    # -- lifetime -----------------------------------------------------------------------
    def close(self) -> None:
        """Close the file; a later call reopens it."""
        self._opened.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "verify": self.verify}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self.verify = bool(state.get("verify", True))
        self._open()

    def __repr__(self) -> str:
        return f"Recording({self.path!r})"


def open(path: str | os.PathLike[str], verify: bool = True) -> Recording:
    """Open a sealed FSR recording for reading.

    ``verify`` (default on): each batch's payload area is checked against its CRC-32C the
    first time a call reads from that batch, when the file carries payload CRCs; a
    mismatch raises ``FormatError`` naming the file, the streams and the byte offset,
    never a wrong value.  A file written without payload CRCs is read unchecked
    (``Recording.payload_crc`` is false).  ``verify=False`` skips the check."""
    return Recording(path, verify)


def __getattr__(name: str) -> Any:
    if name == "Episode":  # the old name of Segment, for one release
        deprecated("Episode", "Segment")
        return Segment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
