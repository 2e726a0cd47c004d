"""Making a Gymnasium MuJoCo viewer's GL context current before a capture, only when it is not.

Gymnasium's MuJoCo viewer makes its GL context current only when it is created.  Another
env on this thread that renders, or frees its context, leaves the recorded env's frames
drawn in the wrong context (black), so ``RecordEpisodes`` makes the viewer's context current
before every frame it captures.  That call is not free: measured in a recorded 640x480
HalfCheetah loop, ``make_context_current()`` cost 78 us of the env thread's CPU and
287 us of its wall time a step (PyOpenGL's ``eglMakeCurrent`` releases the GIL, and the
env thread then waits for Record's threads to hand it back); the bare env never calls it.

    | # | the viewer's context                                    | what ``ensure`` does        |
    |---|---------------------------------------------------------|-----------------------------|
    | 1 | EGL (``MUJOCO_GL=egl``), the same viewer as the last     | nothing: it is current      |
    |   | call, and libEGL's current context on this thread is the |                             |
    |   | one that call left current                               |                             |
    | 2 | EGL, anything else (first call, another viewer, another  | ``make_context_current()``, |
    |   | context current, none current)                           | then notes what is current  |
    | 3 | not EGL (GLFW, OSMesa), or libEGL cannot be asked        | ``make_context_current()``  |

The question goes to the libEGL PyOpenGL loaded (so the same per-thread state), through a
``ctypes.PyDLL`` binding that keeps the GIL for that one thread-local read; nothing of
MuJoCo's or Gymnasium's private state is read.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["CurrentContext"]

@functools.cache
def _egl_current_context() -> Callable[[], int | None] | None:
    """``eglGetCurrentContext`` of the libEGL PyOpenGL loaded, holding the GIL; None if unavailable.

    Asked only for a viewer whose context is ``mujoco.egl``'s, which imported PyOpenGL's EGL."""
    platform = sys.modules.get("OpenGL.platform")
    name = getattr(getattr(getattr(platform, "PLATFORM", None), "EGL", None), "_name", None)
    if not isinstance(name, str):
        return None
    try:
        function = ctypes.PyDLL(name).eglGetCurrentContext
    except (OSError, AttributeError):
        return None
    function.argtypes = []
    function.restype = ctypes.c_void_p
    return function


def _is_egl(viewer: Any) -> bool:
    egl = sys.modules.get("mujoco.egl")
    context_type = getattr(egl, "GLContext", None)
    return isinstance(context_type, type) and isinstance(getattr(viewer, "opengl_context", None), context_type)


class CurrentContext:
    """One wrapper's viewer context, made current only when it is not (module table)."""

    __slots__ = ("_context", "_viewer")

    def __init__(self) -> None:
        self._viewer: weakref.ref[Any] | None = None  # the viewer the last make_current was for (EGL)
        self._context: int | None = None  # libEGL's current context right after that call

    def ensure(self, viewer: Any) -> None:
        """Make ``viewer``'s GL context current on this thread unless it already is."""
        last = self._viewer
        if last is not None and last() is viewer:
            ask = _egl_current_context()
            current = ask() if ask is not None else None
            if current and current == self._context:
                return  # row 1
        viewer.make_context_current()  # rows 2 and 3
        ask = _egl_current_context() if _is_egl(viewer) else None
        self._context = ask() if ask is not None else None
        self._viewer = weakref.ref(viewer) if self._context else None
