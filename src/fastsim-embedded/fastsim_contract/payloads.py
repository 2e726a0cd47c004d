"""Immutable envelope payloads and their producer-computed portable byte size (Core's side
of the contract; the embedded host and the fake Core both use it).

Event-like payloads (lifecycle, plugin events, control) are frozen into
:class:`FrozenDict` (a read-only ``dict`` subclass, so ``json.dumps`` still accepts it)
with tuples for sequences.  Their *portable size* is the byte length of the canonical
JSON text (sorted keys, compact separators, UTF-8): a fact Core computes once, on the
producer side, so Record can admit small events without charging the 1 MiB ceiling.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn

from fastsim_recording_format.encoding import canonical_json

__all__ = ["EMPTY", "FloatRow", "FrozenDict", "freeze", "freeze_sized", "portable_size"]


class FrozenDict(dict[str, Any]):
    """A read-only dict: every mutator raises ``TypeError``."""

    def _refuse(self, *_: object, **__: object) -> NoReturn:
        raise TypeError("envelope payloads are immutable")

    __setitem__ = _refuse
    __delitem__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse
    __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: kv[0])))

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        """Pickled as a plain dict rebuilt by the constructor (unpickling a dict subclass
        item by item would call the refused ``__setitem__``)."""
        return FrozenDict, (dict(self),)


class FloatRow(tuple[float, ...]):
    """A frozen list of finite floats (a command's targets, a result's ``ctrl``) that
    keeps the canonical JSON of its elements, ``json`` (``float.__repr__`` of each,
    joined by commas, no brackets), as ``freeze_sized`` wrote it to size it: the
    writer worker then encodes the payload without writing each float again.  A tuple
    in every other respect (equal to, and hashed as, the plain tuple of its elements);
    pickled as that plain tuple.  Made only by ``_float_row``, from exact floats it
    checked finite, so ``json`` is always its elements' text."""

    json: str

    def __reduce__(self) -> tuple[type[tuple[float, ...]], tuple[tuple[float, ...]]]:
        return tuple, (tuple(self),)


def _float_row(values: Any, text: str) -> FloatRow:
    row = FloatRow(values)
    row.json = text
    return row


_SCALARS = frozenset({str, int, float, bool, type(None)})


def freeze(value: object) -> Any:
    """A deep immutable copy of JSON-like data (mappings, lists, scalars).

    Runs on the simulation thread for every event (twice per control command): scalars
    inside a mapping or a sequence are taken as they are, without a call per element, and
    the plain types (``dict``, ``FrozenDict``, ``list``, ``tuple``) are told apart by
    their exact type before the slower ``Mapping`` check."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or kind is FrozenDict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
        return FrozenDict(
            {str(k): v if type(v) in _SCALARS else freeze(v) for k, v in value.items()}  # type: ignore[attr-defined]
        )
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        return tuple([v if type(v) in _SCALARS else freeze(v) for v in value])  # type: ignore[attr-defined]
    return value


# ``canonical_json``'s options through the C encoder directly: ``JSONEncoder.encode``
# builds a new C encoder on every call.  No circularity check (``markers`` None): a frozen
# payload cannot refer to itself (``freeze`` copies it).  Keys sorted as there, so a
# mapping whose keys cannot be sorted fails the same way.  ``None`` without the C
# accelerator.  Argument order: markers, default, encoder, indent, key separator, item
# separator, sort_keys, skipkeys, allow_nan.
_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
_SIZE_ENCODER: Any = (
    None if _C_ENCODER is None else _C_ENCODER(
        None, json.JSONEncoder().default, json.encoder.encode_basestring, None, ":", ",", True, False, False,
    )
)
_STRING: Any = json.encoder.encode_basestring  # a JSON string literal, as that encoder writes it


def portable_size(payload: object) -> int:
    """Byte length of the canonical JSON encoding of ``payload``
    (``fastsim_recording_format.encoding.canonical_json``, the one every layer uses).

    Same length, same errors (``ValueError`` for NaN/Infinity, ``TypeError`` for a value
    JSON cannot encode): a test pins it to ``len(canonical_json(payload))``."""
    if type(payload) is str:  # the common part of an event (ids, names): no encoder call
        return _string_size(payload)
    encoder = _SIZE_ENCODER
    if encoder is None:
        return len(canonical_json(payload))
    text = "".join(encoder(payload, 0))
    return len(text) if text.isascii() else len(text.encode("utf-8"))


#: The frozen empty mapping (a command's empty ``detail`` or ``args``): one shared
#: immutable object instead of a new one per event.
EMPTY: FrozenDict = FrozenDict()
_FLOAT_REPR: Any = float.__repr__  # what the JSON encoder writes for a float (subclasses too)
_INT_REPR: Any = int.__repr__  # ... and for an int (exact ints only: bool and IntEnum are not)


def _string_size(text: str) -> int:
    """``portable_size`` of a string: its JSON literal's UTF-8 length."""
    literal = _STRING(text)
    return len(literal) if literal.isascii() else len(literal.encode("utf-8"))


#: ``freeze_sized``'s keys and their sizes plus one (the colon): the same few keys come
#: every tick ("event", "tick", a command's argument names); bounded
_KEY_SIZES: dict[str, int] = {}
_KEY_SIZES_MAX = 4096
#: ... and the lists of names (a MuJoCo result's actuators) and their sizes, as many
_NAMES_SIZES: dict[tuple[str, ...], int] = {}


def _key_size(key: str) -> int:
    size = _string_size(key) + 1
    if len(_KEY_SIZES) < _KEY_SIZES_MAX:
        _KEY_SIZES[key] = size
    return size


def _sized_value(value: Any) -> tuple[Any, int]:
    """``value`` frozen and its portable size, for a finite float, a string, an int, a
    bool, ``None``, a list/tuple of finite floats (a ``FloatRow``) or of strings;
    ``TypeError``/``ValueError`` otherwise (the caller then takes the general path, which
    raises the canonical error if there is one)."""
    kind = type(value)
    if kind is float:
        text = _FLOAT_REPR(value)
    elif kind is list or kind is tuple:
        if value and type(value[0]) is str:  # names (a result's actuators): each a JSON string
            names = tuple(value)
            if list(map(type, names)).count(str) != len(names):
                raise TypeError(kind)
            size = _NAMES_SIZES.get(names)  # the same names every tick: sized once (bounded)
            if size is None:
                size = len(names) + 1 + sum(map(_string_size, names))  # brackets, commas
                if len(_NAMES_SIZES) < _KEY_SIZES_MAX:
                    _NAMES_SIZES[names] = size
            return names, size
        text = ",".join(map(_FLOAT_REPR, value))  # TypeError unless every element is a float
        if "n" in text:  # nan, inf, -inf
            raise ValueError(text)
        return _float_row(value, text), len(text) + 2
    elif kind is str:
        return value, _string_size(value)
    elif kind is int:
        return value, len(_INT_REPR(value))  # ValueError past the int/str digit limit, as the encoder
    elif value is None:
        return None, 4
    elif kind is bool:
        return value, 4 if value else 5
    else:
        raise TypeError(kind)
    if "n" in text:  # nan, inf, -inf
        raise ValueError(text)
    return value, len(text)


def freeze_sized(value: object) -> tuple[Any, int]:
    """``(frozen, portable_size(frozen))`` with ``frozen = freeze(value)``, in one pass.

    The fast path is a flat ``dict`` of ``str`` keys to scalars (strings, ints, floats,
    bools, ``None``) or lists of floats -- a command's arguments, a lifecycle or plugin
    event's data -- whose canonical JSON length is summed from its parts (keys,
    punctuation, each value as the encoder writes it) without building the text; the
    value is the same ``FrozenDict`` ``freeze`` makes.  Anything else, and any non-finite
    float (its error), goes through ``freeze`` and ``portable_size``; a test pins both
    results to theirs."""
    if type(value) is dict:
        if not value:
            return EMPTY, 2
        frozen: dict[str, Any] = {}
        size = len(value) + 1  # the braces and the commas between n items
        try:
            for key, item in value.items():
                if type(key) is not str:
                    raise TypeError(key)
                kind = type(item)
                if kind is str:  # the common scalars inline, the rest in _sized_value
                    item_size = _string_size(item)
                elif kind is int:
                    item_size = len(_INT_REPR(item))
                else:
                    item, item_size = _sized_value(item)
                frozen[key] = item
                size += (_KEY_SIZES.get(key) or _key_size(key)) + item_size  # "key":value
        except (TypeError, ValueError):
            pass
        else:
            return FrozenDict(frozen), size
    frozen_value = freeze(value)
    return frozen_value, portable_size(frozen_value)
