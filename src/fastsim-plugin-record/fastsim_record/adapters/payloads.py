"""Payload encoders for lifecycle, events and control (JSON) and numeric ticks.

Both run only in the writer worker; the capture path hands over immutable values.

Numeric tick layout (one record per tick, all selected channels; the byte layout and its
``attributes.channels`` are the format's, :mod:`fastsim_recording_format.codecs.numeric`):

    | # | rule                                                                  |
    |---|-----------------------------------------------------------------------|
    | 1 | channels appear in the stream's declared order (``attributes.channels``)|
    | 2 | each channel is ``prod(shape) * itemsize`` bytes, C order, little-endian |
    | 3 | a channel's ``offset`` is the sum of the sizes before it; no padding   |
    | 4 | a sample whose dtype or shape differs from its descriptor is drift     |
    | 5 | a tick missing a channel, or carrying an unselected one, is drift      |
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, ParamSpec, TypeVar

import numpy as np

from fastsim_contract.payloads import FloatRow, FrozenDict
from fastsim_contract.values import ChannelDescriptor, ObservationTick, PackedLayout, PackedValues
from fastsim_record.adapters.numeric_columns import block_columns, numeric_columns
from fastsim_record.errors import DescriptorDriftError, RecordingFailed
from fastsim_record.ports.sinks import RecordColumns
from fastsim_recording_format.codecs import numeric
from fastsim_recording_format.encoding import canonical_json
from fastsim_recording_format.errors import PayloadError

__all__ = ["JSON_CODEC", "JsonEncoder", "NumericTickEncoder", "raising"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def raising(
    plugin_error: type[PayloadError], function: Callable[_P, _R]
) -> Callable[_P, _R]:
    """``function`` of a format codec, re-raising its payload error as ``plugin_error``.

    ``plugin_error`` subclasses both the format's error and ``RecordError``, so the
    writer worker's ``except RecordError`` keeps catching what the capture side raises.
    """
    source = plugin_error.__mro__[1]

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return function(*args, **kwargs)
        except PayloadError as exc:
            if isinstance(exc, plugin_error) or not isinstance(exc, source):
                raise
            raise plugin_error(exc.reason, **exc.fields) from None

    return wrapper

_DTYPE = operator.attrgetter("dtype")
_SHAPE = operator.attrgetter("shape")
_TOBYTES: Callable[[object], bytes] = np.ndarray.tobytes  # type: ignore[assignment]

JSON_CODEC: Final[Mapping[str, object]] = {
    "payload_codec": "json",
    "media_type": "application/json",
    "canonical": True,
}


#: ``json.encoder.c_make_encoder`` (``None`` without the C accelerator)
_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)


def _c_encoder() -> Any:
    """A C encoder with exactly ``canonical_json(..., default=_jsonable)``'s options, as
    ``json.dumps`` builds it for every call: a fresh circularity ``markers`` map, the
    ``_jsonable`` default, literal UTF-8 strings, ``":"`` and ``","``, sorted keys, no
    skipped keys, no NaN/Infinity.  Argument order: markers, default, encoder, indent,
    key separator, item separator, sort_keys, skipkeys, allow_nan."""
    return _C_ENCODER({}, _jsonable, json.encoder.encode_basestring, None, ":", ",", True, False, False)


class JsonEncoder:
    """Canonical JSON (sorted keys, UTF-8, no NaN/Infinity) for mapping payloads.

    Two records a driven tick (``command.issued``, ``command.applied``) come here, so the
    C encoder ``json.dumps`` would build for every call is built once per encoder and
    reused; it writes the same text (``canonical_json`` with ``default=_jsonable``: a test
    compares both on many payloads).  After any failure it is built again, so the
    circularity markers a failed call may leave behind never reach the next payload.
    Payloads that are not a ``dict`` (or its subclass ``FrozenDict``), and interpreters
    without the C accelerator, take ``canonical_json`` itself."""

    codec: Mapping[str, object] = JSON_CODEC

    def __init__(self, stream: str) -> None:
        self._stream = stream
        self._c = _c_encoder() if _C_ENCODER is not None else None

    def encode(self, payload: object) -> bytes:
        """Encode one JSON-able mapping; anything else is a recording failure."""
        if payload.__class__ is FrozenDict:  # a host-frozen event: its FloatRows' text kept
            try:
                return _frozen_json(payload).encode("utf-8")
            except Exception:  # anything unusual: the C encoder decides (and names any problem)
                pass
        try:
            c = self._c
            if c is not None and isinstance(payload, dict):
                try:
                    return "".join(c(payload, 0)).encode("utf-8")
                except BaseException:
                    self._c = _c_encoder()  # fresh markers for the next payload
                    raise
            return canonical_json(payload, default=_jsonable)
        except (TypeError, ValueError) as exc:
            raise RecordingFailed(
                f"{self._stream}: payload is not canonical JSON ({exc})", stream=self._stream
            ) from None


_STRING: Callable[[str], str] = json.encoder.encode_basestring  # a JSON string literal, as the C encoder writes it
_FLOAT: Callable[[float], str] = float.__repr__  # ... a float, ...
_INT: Callable[[int], str] = int.__repr__  # ... an int
_MAPS = (FrozenDict, dict)


#: ``_frozen_json``'s per-shape facts, bounded (the same few shapes come every tick): a
#: mapping's keys in their order -> the sorted keys; a key -> its literal and colon; a
#: tuple of exact strings (a result's actuator names) -> its JSON array
_ORDERS: dict[tuple[Any, ...], list[str]] = {}
_KEY_TEXT: dict[str, str] = {}
_NAMES_TEXT: dict[tuple[str, ...], str] = {}
_CACHED = 1024


def _frozen_json(payload: Mapping[str, Any]) -> str:
    """``canonical_json(payload)``'s text (the C encoder's, key for key) for the values a
    host freezes into control and event payloads, with each ``FloatRow`` written from the
    text its sizing kept instead of from its floats (a driven tick's targets and ``ctrl``,
    issue 24): exact strings (keys too, sorted), ``true``/``false``/``null``, exact ints,
    finite exact floats, nested ``FrozenDict``/``dict`` values, tuples of exact strings.
    Anything else raises, and the caller takes the C encoder.  The sorted keys, each key's
    literal and each tuple of names are kept (bounded; perf42): the text is the same."""
    keys = tuple(payload)
    order = _ORDERS.get(keys)
    if order is None:
        order = sorted(payload)  # TypeError for keys that cannot be sorted
        if len(_ORDERS) < _CACHED:
            _ORDERS[keys] = order
    parts = []
    for key in order:
        value = payload[key]
        kind = value.__class__
        if kind is str:
            text = _STRING(value)
        elif kind is FloatRow:
            text = "[" + value.json + "]"
        elif value is True:
            text = "true"
        elif value is False:
            text = "false"
        elif value is None:
            text = "null"
        elif kind is int:
            text = _INT(value)
        elif kind in _MAPS:
            text = _frozen_json(value)
        elif kind is float and value - value == 0.0:  # finite
            text = _FLOAT(value)
        elif kind is tuple:
            text = _NAMES_TEXT.get(value) or _names(value)
        else:
            raise TypeError(kind)
        prefix = _KEY_TEXT.get(key)
        if prefix is None:
            prefix = _STRING(key) + ":"  # TypeError for a key that is not a string
            if key.__class__ is str and len(_KEY_TEXT) < _CACHED:
                _KEY_TEXT[key] = prefix
        parts.append(prefix + text)
    return "{" + ",".join(parts) + "}"


def _names(value: tuple[Any, ...]) -> str:
    """A tuple of exact strings as its JSON array (kept); ``TypeError`` for anything else."""
    if list(map(type, value)).count(str) != len(value):
        raise TypeError(tuple)
    text = "[" + ",".join(map(_STRING, value)) + "]"
    if len(_NAMES_TEXT) < _CACHED:
        _NAMES_TEXT[value] = text
    return text


def _jsonable(value: object) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple | frozenset | set):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class NumericTickEncoder:
    """All selected numeric channels of one tick -> one atomic record payload."""

    def __init__(self, stream: str, channels: Sequence[ChannelDescriptor]) -> None:
        self._stream = stream
        self._order = tuple(c.name for c in channels)
        offset, layout = numeric.channel_entries(
            [(c.name, c.dtype, c.shape, c.units, c.entity) for c in channels]
        )
        self._dtypes: dict[str, np.dtype[Any]] = {
            str(e["name"]): np.dtype(str(e["dtype"])) for e in layout
        }
        self._shapes: dict[str, tuple[int, ...]] = {
            str(e["name"]): tuple(e["shape"]) for e in layout  # type: ignore[arg-type]
        }
        self.record_bytes = offset
        self._packed_row = tuple((self._dtypes[c.name].str, self._shapes[c.name]) for c in channels)
        self._packed_ok: PackedLayout | None = None  # the last packed layout found identical
        self._dtype_row = tuple(self._dtypes[c.name] for c in channels)
        self._shape_row = tuple(self._shapes[c.name] for c in channels)
        self.codec: Mapping[str, object] = numeric.codec_description(offset)
        self.attributes: Mapping[str, object] = {"channels": layout}

    def encode(self, payload: object) -> bytes:
        """Pack one :class:`ObservationTick` in the declared channel order."""
        if not isinstance(payload, ObservationTick):
            raise DescriptorDriftError(
                f"{self._stream}: expected an ObservationTick, got {type(payload).__name__}",
                stream=self._stream,
            )
        channels = payload.channels  # column-wise: no per-channel objects on a SampleBlock
        if channels is self._order or channels == self._order:  # fast path: declared order
            values = payload.values
            if values.__class__ is PackedValues:  # one buffer: one copy (layout checked once)
                layout = values.layout
                if layout is self._packed_ok or self._packed_matches(layout):
                    packed: bytes = values.buffer.tobytes()
                    return packed
            try:  # C-level maps: exact dtype and shape of every channel, then one join
                if tuple(map(_DTYPE, values)) == self._dtype_row and (
                    tuple(map(_SHAPE, values)) == self._shape_row
                ):
                    return b"".join(map(_TOBYTES, values))
            except (AttributeError, TypeError):  # not arrays: the slow path names the channel
                pass
        return self._encode_slow(payload)

    def encode_columns(self, carriers: Sequence[Any]) -> RecordColumns | None:
        """A run of carriers column-wise (``numeric_columns``), or ``None``."""
        return numeric_columns(self._stream, self._order, self.record_bytes, self._layout_ok, carriers)

    def encode_block(self, carrier: Any) -> RecordColumns | None:
        """A block carrier's ticks column-wise (``block_columns``, issue 26), or ``None``."""
        return block_columns(self._stream, self.record_bytes, self._layout_ok, carrier)

    def _layout_ok(self, layout: PackedLayout) -> bool:
        """Rules 1-3 for a packed layout: the remembered one, or one that matches."""
        return layout is self._packed_ok or self._packed_matches(layout)

    def _packed_matches(self, layout: PackedLayout) -> bool:
        """A packed layout is the record layout (rules 1-3) when every channel has the
        declared little-endian dtype and shape; remembered by identity (Core shares one)."""
        if layout.fields != self._packed_row or layout.nbytes != self.record_bytes:
            return False
        self._packed_ok = layout
        return True

    def _encode_slow(self, payload: ObservationTick) -> bytes:
        """Rules 1-5 in full: any order, convertible byte orders, precise drift messages."""
        by_name = {s.channel: s.value for s in payload.samples}
        if len(by_name) != len(self._order) or len(payload.samples) != len(self._order):
            extra = sorted(set(by_name) - set(self._order))
            missing = [n for n in self._order if n not in by_name]
            raise DescriptorDriftError(
                f"{self._stream}: tick {payload.capture_sequence} channels differ from the "
                f"declared set (missing {missing}, unexpected {extra})",
                stream=self._stream,
            )
        parts: list[bytes] = []
        for name in self._order:
            value = by_name.get(name)
            if value is None:
                raise DescriptorDriftError(
                    f"{self._stream}: tick {payload.capture_sequence} lacks channel {name!r}",
                    stream=self._stream, channel=name,
                )
            array = np.asarray(value)
            dtype = self._dtypes[name]
            if array.shape != self._shapes[name] or array.dtype.kind != dtype.kind or (
                array.dtype.itemsize != dtype.itemsize
            ):
                raise DescriptorDriftError(
                    f"{self._stream}.{name}: expected {dtype.name}{list(self._shapes[name])}, "
                    f"got {array.dtype.name}{list(array.shape)}",
                    stream=self._stream, channel=name,
                )
            parts.append(np.ascontiguousarray(array, dtype=dtype).tobytes())
        return b"".join(parts)
