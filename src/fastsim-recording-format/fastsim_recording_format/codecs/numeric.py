"""``numeric-tick/1``: all selected numeric channels of one tick in one record.

The stream attribute ``channels`` lists, in order, each channel's ``name``, ``dtype`` (a
little-endian numpy type string), ``shape``, ``units``, ``entity``, ``offset`` and
``nbytes``; the codec's ``record_bytes`` is the payload size.  The plugin's
``NumericTickEncoder`` writes the layout with :func:`channel_entries`; readers parse it
back with :func:`numeric_layout`.

    | # | rule (checked when a stream is first decoded)                                 |
    |---|-------------------------------------------------------------------------------|
    | 1 | every channel entry has a name, a numeric little-endian dtype and a shape     |
    | 2 | ``nbytes == prod(shape) * itemsize`` and channels tile ``[0, record_bytes)``  |
    |   | in declared order, C order, no padding                                        |
    | 3 | every DATA record's payload is exactly ``record_bytes`` long                  |

Diagnostic ``channel_sequence`` (rule CS1, the writer worker's): a DATA record's metadata
``{"channel_sequence": n}`` gives the tick's live channel sequence; a record without it
has its predecessor's (the stream's previous DATA record) plus one.  The recorder writes
the key on the first record of every run of ticks and on every tick that does not
follow its predecessor by one; :func:`channel_sequences` reads it back.  It is
diagnostic only and never used for continuity.

Per-step channels: the stream attribute ``per_step_channels`` (a list of channel names,
optional) names channels that hold one sample per *step* rather than per tick (a
Gymnasium env's action, reward, flags and info).  The stream's last tick of each
generation holds a fill for them (the tick is atomic: every channel has bytes in every
record); readers drop that fill (``Channel.per_step``; docs/reading.md).  A reader that
does not know the attribute returns the fill as one more sample.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs
import numpy as np

from fastsim_recording_format.errors import NumericPayloadError
from fastsim_recording_format.model import StreamSpec

__all__ = [
    "NUMERIC_CODEC",
    "Channel",
    "channel_sequences",
    "channel_entries",
    "codec_description",
    "numeric_layout",
]

NUMERIC_CODEC: Final = "numeric-tick/1"


def channel_entries(
    channels: Sequence[tuple[str, str, Sequence[int], Sequence[str], str | None]],
) -> tuple[int, list[dict[str, object]]]:
    """``(record_bytes, attributes.channels)`` for ``(name, dtype, shape, units, entity)`` rows."""
    layout: list[dict[str, object]] = []
    offset = 0
    for name, dtype_name, dims, units, entity in channels:
        dtype = np.dtype(dtype_name).newbyteorder("<")
        shape = [int(d) for d in dims]
        nbytes = math.prod(shape) * dtype.itemsize
        layout.append({
            "name": name,
            "dtype": dtype.str,
            "shape": shape,
            "units": list(units),
            "entity": entity,
            "layout": "C-contiguous little-endian",
            "offset": offset,
            "nbytes": nbytes,
        })
        offset += nbytes
    return offset, layout


def codec_description(record_bytes: int) -> dict[str, object]:
    """The stream's codec description."""
    return {
        "payload_codec": NUMERIC_CODEC,
        "media_type": "application/octet-stream",
        "record_bytes": record_bytes,
    }


@attrs.frozen
class Channel:
    """One channel of a numeric-tick stream: where its bytes are and what they hold."""

    stream: str
    name: str
    dtype: np.dtype[Any] = attrs.field(eq=False)
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    units: tuple[str, ...]
    element_names: tuple[str, ...]
    per_step: bool = False  # named by ``per_step_channels``: no sample in a generation's last tick


def _all_str(values: list[Any]) -> bool:
    """Whether every item is a ``str``: ``str.join`` checks that in C (one pass, no Python
    call per item), raising ``TypeError`` at the first item that is not."""
    try:
        "".join(values)
    except TypeError:
        return False
    return True


def _element_names(
    name: str, shape: tuple[int, ...], size: int, entry: Mapping[str, Any], by_channel: Mapping[str, Any] | None
) -> tuple[str, ...]:
    """The channel entry's own names, else the stream's ``element_names`` map, else
    ``name[i,...]`` (C order)."""
    given = entry.get("names") or entry.get("element_names")
    if not given and by_channel is not None:
        given = by_channel.get(name)
    if isinstance(given, list) and len(given) == size and _all_str(given):
        return tuple(given)
    if not shape:
        return (name,)
    if len(shape) == 1:
        return tuple([f"{name}[{i}]" for i in range(shape[0])])
    return tuple([f"{name}[{','.join(map(str, ix))}]" for ix in itertools.product(*map(range, shape))])


def numeric_layout(spec: StreamSpec) -> tuple[int, tuple[Channel, ...]]:
    """``(record_bytes, channels)`` of a numeric-tick stream (rules 1-2).

    Runs at every open, for every channel (90 in the benchmark's file), so the loop is
    kept to C-level calls: each distinct dtype string is parsed once per call.
    """
    where = f"stream {spec.name!r} attributes.channels"
    record_bytes = spec.codec.get("record_bytes")
    entries = spec.attributes.get("channels")
    if not isinstance(record_bytes, int) or record_bytes < 0:
        raise NumericPayloadError(f"stream {spec.name!r} codec.record_bytes: not a byte count")
    if not isinstance(entries, list):
        raise NumericPayloadError(f"{where}: missing")
    by_channel = spec.attributes.get("element_names")  # {channel: [names]} (the recorder's)
    names_map = by_channel if isinstance(by_channel, Mapping) else None
    per_step = spec.attributes.get("per_step_channels")
    steps = frozenset(str(n) for n in per_step) if isinstance(per_step, list) else frozenset()
    dtypes: dict[str, np.dtype[Any]] = {}
    out: list[Channel] = []
    at = 0
    for k, entry in enumerate(entries):
        try:
            name, shape = str(entry["name"]), tuple(map(int, entry["shape"]))
            text = str(entry["dtype"])
            dtype = dtypes.get(text)
            if dtype is None:
                dtype = dtypes[text] = np.dtype(text)
            offset, nbytes = int(entry["offset"]), int(entry["nbytes"])
        except (KeyError, TypeError, ValueError) as exc:
            raise NumericPayloadError(f"{where}[{k}]: malformed ({exc})") from None
        size = math.prod(shape)
        if dtype.kind not in "biuf" or dtype.byteorder == ">" or (shape and min(shape) < 0):
            raise NumericPayloadError(f"{where}[{k}] ({name}): unsupported dtype {dtype.str} or shape")
        if nbytes != size * dtype.itemsize or offset != at:
            raise NumericPayloadError(f"{where}[{k}] ({name}): offset/nbytes do not tile the record")
        at += nbytes
        units = tuple(map(str, entry.get("units", [])))
        out.append(Channel(spec.name, name, dtype, shape, offset, nbytes, units,
                           _element_names(name, shape, size, entry, names_map), name in steps))
    if at != record_bytes:
        raise NumericPayloadError(f"{where}: channels cover {at} bytes, record_bytes is {record_bytes}")
    return record_bytes, tuple(out)


def channel_sequences(metadata: Iterable[Mapping[str, Any] | None]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Rule CS1 over a stream's DATA records' metadata, in order: each tick's
    ``channel_sequence`` (``-1`` until a record names one)."""
    out: list[int] = []
    last: int | None = None
    for meta in metadata:
        value = meta.get("channel_sequence") if meta else None
        if isinstance(value, int) and not isinstance(value, bool):
            last = value
        elif last is not None:
            last += 1
        out.append(-1 if last is None else last)
    return np.asarray(out, np.int64)
