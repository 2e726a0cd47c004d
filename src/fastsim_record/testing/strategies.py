"""The project's one module of hypothesis strategies, shared by every test package.

Each owner adds a ``# --- <area> ---`` section; strategies build values only (no I/O).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from hypothesis import strategies as st
from numpy.typing import NDArray

__all__ = ["render_states"]


# --- render ---


def _readonly(values: list[float], dtype: str, shape: tuple[int, ...]) -> NDArray[Any]:
    array = np.array(values, dtype=dtype).reshape(shape)
    array.setflags(write=False)
    return array


_ENTITY = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789.", min_size=1, max_size=8)
_FLOAT = st.floats(allow_nan=True, allow_infinity=True, width=64)
_FLOAT_DTYPE = st.sampled_from(["<f8", "<f4", ">f8"])


@st.composite
def _vector(draw: st.DrawFn, n: int, dtype: str) -> NDArray[Any]:
    values = draw(st.lists(_FLOAT, min_size=n, max_size=n))
    with np.errstate(over="ignore"):
        return _readonly(values, dtype, (n,))


@st.composite
def render_states(draw: st.DrawFn, max_particles: int = 64) -> Mapping[str, NDArray[Any]]:
    """A valid ``render.state`` capture mapping: articulations, rigid bodies and fluids."""
    state: dict[str, NDArray[Any]] = {}
    for name in draw(st.lists(_ENTITY, max_size=3, unique=True)):
        n = draw(st.integers(0, 16))
        dtype = draw(_FLOAT_DTYPE)
        state[f"articulation/{name}/joint_position"] = draw(_vector(n, dtype))
        state[f"articulation/{name}/joint_velocity"] = draw(_vector(n, dtype))
        if draw(st.booleans()):
            state[f"articulation/{name}/root_pose"] = draw(_vector(7, dtype))
        if draw(st.booleans()):
            state[f"articulation/{name}/root_twist"] = draw(_vector(6, dtype))
    for name in draw(st.lists(_ENTITY, max_size=3, unique=True)):
        dtype = draw(_FLOAT_DTYPE)
        state[f"rigid/{name}/pose"] = draw(_vector(7, dtype))
        state[f"rigid/{name}/linear_velocity"] = draw(_vector(3, dtype))
        state[f"rigid/{name}/angular_velocity"] = draw(_vector(3, dtype))
    for name in draw(st.lists(_ENTITY, max_size=2, unique=True)):
        count = draw(st.integers(0, max_particles))
        values = draw(st.lists(st.floats(width=32), min_size=3 * count, max_size=3 * count))
        state[f"fluid/{name}/positions"] = _readonly(values, "<f4", (count, 3))
    if not state:
        state["rigid/only/pose"] = _readonly([0.0] * 6 + [1.0], "<f8", (7,))
        state["rigid/only/linear_velocity"] = _readonly([0.0] * 3, "<f8", (3,))
        state["rigid/only/angular_velocity"] = _readonly([0.0] * 3, "<f8", (3,))
    return state
