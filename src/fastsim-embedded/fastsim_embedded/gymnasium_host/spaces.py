"""Gymnasium spaces as named numeric channels, and one recorded row packed into one buffer.

    | # | space                        | channel(s)                                   | dtype, shape           |
    |---|------------------------------|----------------------------------------------|------------------------|
    | 1 | ``Box``                      | ``<path>``                                   | the space's, its shape |
    | 2 | ``Discrete``                 | ``<path>``                                   | int64, ()              |
    | 3 | ``MultiDiscrete``            | ``<path>``                                   | int64, its shape       |
    | 4 | ``MultiBinary``              | ``<path>``                                   | int8, its shape        |
    | 5 | ``Dict``                     | ``<path>.<key>`` for each key, recursively   |                        |
    | 6 | ``Tuple``                    | ``<path>.<i>`` for each item, recursively    |                        |
    | 7 | anything else (``Graph``,    | refused with ``UnmappableSpace`` naming the  |                        |
    |   | ``Sequence``, ``Text``, ...) | path, before anything is recorded            |                        |

A ``Box(uint8, (H, W, 3))`` leaf is an *image*: the recorder may present it as a camera; so
are ``Box(uint8, (H, W))`` and ``(H, W, 1)`` (grey) and ``(H, W, 4)`` (RGBA) whose bounds are 0
and 255 (Gymnasium's image space), H and W at least 8 (a uint8 board of other bounds stays numeric).
Frame-stacked images (``(k, H, W)``, ``(k, H, W, 3)``, ``(H, W, 3k)``) are ordinary numeric
channels (a stack of four grey frames along the last axis, ``(H, W, 4)``, cannot be told from
RGBA: it is recorded as an RGBA PNG camera, each frame exact).
Spaces are inspected by their class name, so this module does not import gymnasium.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

__all__ = ["Leaf", "RowPacker", "UnmappableSpace", "leaf_value", "plain_value", "space_leaves"]

_MAPPABLE = "Box, Discrete, MultiDiscrete, MultiBinary, Dict and Tuple"


class UnmappableSpace(ValueError):
    """A space (at a named path) that has no channel mapping."""


@attrs.frozen
class Leaf:
    """One channel of a flattened space: its name, where it sits in a value, dtype and shape."""

    name: str
    path: tuple[str | int, ...]
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    image: bool = False


def _kind(space: object) -> str:
    for cls in type(space).__mro__:
        if cls.__module__.startswith("gymnasium.spaces"):
            return cls.__name__
    return type(space).__name__


def space_leaves(space: Any, name: str, path: tuple[str | int, ...] = ()) -> tuple[Leaf, ...]:
    """Every channel of ``space`` named under ``name`` (module table); ``UnmappableSpace`` else."""
    kind = _kind(space)
    if kind == "Dict":
        leaves = tuple(
            leaf for key, sub in space.spaces.items()
            for leaf in space_leaves(sub, f"{name}.{key}", (*path, key))
        )
        seen: set[str] = set()
        for leaf in leaves:  # {"a.b": ..., "a": {"b": ...}}: two leaves, one channel name
            if leaf.name in seen:
                raise UnmappableSpace(f"{leaf.name}: two leaves of the space have this channel name (a key holds a '.')")
            seen.add(leaf.name)
        return leaves
    if kind == "Tuple":
        return tuple(
            leaf for i, sub in enumerate(space.spaces)
            for leaf in space_leaves(sub, f"{name}.{i}", (*path, i))
        )
    shape = tuple(int(d) for d in (getattr(space, "shape", None) or ()))
    if kind == "Box":
        dtype = np.dtype(space.dtype)
        return (Leaf(name, path, dtype, shape, _image(space, dtype, shape)),)
    if kind in ("Discrete", "MultiDiscrete"):
        return (Leaf(name, path, np.dtype(np.int64), shape),)
    if kind == "MultiBinary":
        return (Leaf(name, path, np.dtype(np.int8), shape),)
    raise UnmappableSpace(f"{name}: a {kind} space cannot be recorded (only {_MAPPABLE} spaces map to channels)")


def _image(space: Any, dtype: np.dtype[Any], shape: tuple[int, ...]) -> bool:
    """Whether a Box is an image (module text): RGB, or grey/RGBA with Gymnasium's image bounds."""
    if dtype != np.uint8 or len(shape) not in (2, 3) or min(shape[:2]) < 8:
        return False
    if len(shape) == 3 and shape[2] == 3:
        return True
    if len(shape) == 2 or shape[2] in (1, 4):
        return bool(np.all(np.asarray(space.low) == 0) and np.all(np.asarray(space.high) == 255))
    return False


def leaf_value(value: Any, leaf: Leaf) -> Any:
    """The part of a (nested) space value that ``leaf`` records."""
    for key in leaf.path:
        value = value[key]
    return value


def cast(field: tuple[str, np.dtype[Any], tuple[int, ...]], value: Any) -> npt.NDArray[Any]:
    """``value`` in field ``(name, dtype, shape)``'s dtype; ``ValueError`` naming the channel
    when it does not have the field's shape."""
    name, dtype, shape = field
    array = np.asarray(value, dtype=dtype)
    if array.shape != shape:
        raise ValueError(f"{name}: the env returned shape {array.shape}, its space declares {shape}")
    return array


class RowPacker:
    """Packs one recorded row (every numeric channel) into one new read-only buffer.

    ``fields`` is ``(name, dtype, shape)`` in buffer order, back to back, no padding:
    the ``PackedSampling`` layout of the Gymnasium backend.
    """

    def __init__(self, fields: Sequence[tuple[str, np.dtype[Any], tuple[int, ...]]]) -> None:
        self.fields = tuple((name, np.dtype(dtype).newbyteorder("="), tuple(shape)) for name, dtype, shape in fields)
        self._slots: list[tuple[int, int, np.dtype[Any], tuple[int, ...]]] = []
        at = 0
        for _, dtype, shape in self.fields:
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            self._slots.append((at, nbytes, dtype, shape))
            at += nbytes
        self.nbytes = at
        self.offsets = tuple(slot[0] for slot in self._slots)  # each field's byte offset in the row
        self.index = {name: i for i, (name, _, _) in enumerate(self.fields)}
        self._casts = self.fields  # (name, dtype, shape) per field: what ``encode`` walks per row

    def packing(self) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
        """``numeric_packing()``: (channel, dtype string, shape) in buffer order."""
        return tuple((name, dtype.str, shape) for name, dtype, shape in self.fields)

    def encode(self, first: int, values: Iterable[Any]) -> list[bytes]:
        """The bytes of one value per field from field ``first`` on, each cast to the field's
        dtype; ``ValueError`` naming the channel when a value does not have its shape."""
        return [cast(field, value).tobytes() for field, value in zip(self._casts[first:], values, strict=False)]

    def join(self, parts: Iterable[bytes]) -> npt.NDArray[np.uint8]:
        """One read-only row from the bytes of every field, in order (no copy beyond the join)."""
        row = np.frombuffer(b"".join(parts), dtype=np.uint8)
        if row.nbytes != self.nbytes:
            raise ValueError(f"a recorded row of {row.nbytes} bytes, the layout has {self.nbytes}")
        return row

    def unpack(self, row: npt.NDArray[np.uint8]) -> Mapping[str, npt.NDArray[Any]]:
        """The row's values by channel (views; tests and examples)."""
        return {
            name: row[at:at + nbytes].view(dtype).reshape(shape)
            for (name, _, _), (at, nbytes, dtype, shape) in zip(self.fields, self._slots, strict=True)
        }


def plain_value(value: object) -> object:
    """``value`` as JSON-able data (reset options recorded in the ``gym.reset`` event)."""
    if isinstance(value, Mapping):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_value(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)
