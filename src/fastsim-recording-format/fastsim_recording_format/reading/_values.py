"""The values the reading API returns: frozen, typed, numpy inside."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

__all__ = ["CalibrationEpoch", "CalibrationSeries", "Event", "Frame", "Info", "LostDeclaration", "NumericSeries"]

Array = npt.NDArray[Any]


@attrs.frozen
class Info:
    """What a recording is: its run, how it ended, its integrity and what it holds.

    ``name``, ``backend`` and ``seed`` come from the run metadata's ``attributes.run``
    when the recorder wrote it, else from the ``run.created`` lifecycle event (name and
    backend), else ``None``.  ``attributes`` is the run metadata's whole attribute object.
    """

    path: str
    run_id: str
    completion_id: str
    name: str | None
    backend: str | None
    seed: int | None
    completion: str | None  # normal, failed, cancelled, ... (the terminal fence)
    completion_reason: str | None
    mode: str
    integrity: str
    degraded: bool
    recovered: bool
    generations: tuple[int, ...]
    sim_time_ns: tuple[int, int] | None  # (first, last) over every record, None if empty
    records: Mapping[str, int] = attrs.field(eq=False)  # DATA records per stream
    size_bytes: int
    attributes: Mapping[str, Any] = attrs.field(eq=False, repr=False)


@attrs.frozen(eq=False)
class NumericSeries:
    """One numeric channel over time: ``values[i]`` was recorded at ``time_ns[i]``.

    ``values`` has shape ``(T, *shape)`` and the recorded dtype; ``names`` names each
    element of one sample (``robot.joint_position[0]`` ...) unless the recording carries
    element names.
    """

    channel: str
    time_ns: Array  # int64 (T,)
    generation: Array  # int64 (T,)
    values: Array
    names: tuple[str, ...]
    units: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.time_ns)


@attrs.frozen(eq=False)
class Frame:
    """One decoded camera frame: uint8 ``(H, W, C)``, C = the stream's channels (3 RGB, or
    1 grey / 4 RGBA, exactly as recorded); ``index`` counts the view's frames."""

    image: Array
    time_ns: int
    generation: int
    index: int


@attrs.frozen
class CalibrationEpoch:
    """One calibration epoch of one camera in one generation."""

    generation: int
    digest: str
    profile: Mapping[str, Any] = attrs.field(eq=False)
    first_time_ns: int


@attrs.frozen(eq=False)
class CalibrationSeries:
    """A camera's calibration per recorded sample, and its calibration epochs.

    ``k`` is ``(T, 3, 3)``, ``translation`` ``(T, 3)`` and ``quaternion_xyzw`` ``(T, 4)``
    (camera to world, OpenCV optical frame), all float64, at ``time_ns``; ``digest[i]``
    names the epoch of sample ``i``.  A tick whose calibration samples were lost (an
    optional camera under a lossy media lane) is left out; ``lost`` lists the epochs whose
    declaration was lost (rule C8): frames that reference such a digest keep the epoch the
    mark names (the last one declared before), unless an intrinsics sample declares it.
    """

    camera: str
    time_ns: Array
    generation: Array
    k: Array
    translation: Array
    quaternion_xyzw: Array
    digest: tuple[str, ...]
    epochs: tuple[CalibrationEpoch, ...]
    problems: tuple[str, ...] = ()
    lost: tuple[LostDeclaration, ...] = ()


@attrs.frozen
class LostDeclaration:
    """A calibration epoch whose declaring intrinsics samples were lost (rule C8).

    Frames of ``generation`` that reference ``digest`` were kept; their calibration is
    ``epoch``, the camera's last declared digest before ``first_tick`` (None: none), unless
    an intrinsics sample of the same generation declares ``digest``.  ``ticks``: how many
    ticks lost the declaration.
    """

    generation: int
    digest: str
    epoch: str | None
    first_tick: int
    ticks: int


@attrs.frozen
class Event:
    """One decoded JSON record (lifecycle, event or control) with its time."""

    stream: str
    time_ns: int
    generation: int
    global_sequence: int
    data: Mapping[str, Any] = attrs.field(eq=False)

    @property
    def name(self) -> str | None:
        """The record's ``event`` field, when it has one."""
        value = self.data.get("event")
        return value if isinstance(value, str) else None


def empty_int() -> Array:
    """An empty int64 array."""
    return np.empty(0, np.int64)
