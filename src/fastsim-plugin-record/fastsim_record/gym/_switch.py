"""The interpreter's switch interval while a wrapper records frames (option ``switch_interval``).

A frame is published and written by Record's threads while the env thread renders the next
one.  Their Python holds the GIL.  When the env thread comes back from the renderer (MuJoCo's
calls run without the GIL) while one of them holds it, CPython lets the env thread wait up to
the switch interval (5 ms by default) before it takes the GIL back.  A wrapper that records
frames therefore shortens the interval while it is open:

    | # | when                                  | the interval                                        |
    |---|---------------------------------------|-----------------------------------------------------|
    | 1 | the first hold opens                  | the interpreter's value is saved; it becomes        |
    |   |                                       | ``min(saved, asked)``                               |
    | 2 | another hold opens                    | lowered to its ``asked`` if that is less, unless    |
    |   |                                       | someone else set the interval since (theirs stays)  |
    | 3 | the last hold closes                  | the saved value comes back, unless someone else set |
    |   |                                       | the interval since Record did (theirs stays)        |
    | 4 | ``switch_interval=None``              | never changed by that wrapper                       |

A shorter interval only matters when threads wait for the GIL: a single-threaded program is
unchanged, and other threads of the process switch more often while the wrapper is open.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["DEFAULT_SWITCH_INTERVAL", "SwitchInterval"]

DEFAULT_SWITCH_INTERVAL = 100e-6  # seconds; measured against 5 ms, 1 ms, 200 us and 50 us (docs/notes/stop-50.md)

_LOCK = threading.Lock()
_HOLDS: list[SwitchInterval] = []
# saved: the interval before the first hold; expected: what it is while nobody else sets it (None:
# somebody did, so it is theirs); changed: whether Record set it (only then is it restored)
_STATE: dict[str, float | bool | None] = {"saved": None, "expected": None, "changed": False}


class SwitchInterval:
    """One wrapper's hold on the interpreter's switch interval (module table)."""

    def __init__(self, asked: float | None) -> None:
        self.asked = asked
        self._held = False

    def hold(self) -> None:
        """Rows 1, 2 and 4."""
        if self.asked is None or self._held:
            return
        with _LOCK:
            self._held = True
            current = sys.getswitchinterval()
            if not _HOLDS:
                _STATE.update(saved=current, expected=current, changed=False)
            _HOLDS.append(self)
            if _STATE["expected"] != current:  # set by someone else since: theirs stays
                _STATE["expected"] = None
                return
            if self.asked < current:
                sys.setswitchinterval(self.asked)
                _STATE.update(expected=sys.getswitchinterval(), changed=True)  # as the interpreter rounded it

    def release(self) -> None:
        """Row 3 (idempotent)."""
        if not self._held:
            return
        with _LOCK:
            self._held = False
            _HOLDS.remove(self)
            if _HOLDS:
                return
            saved, expected, changed = _STATE["saved"], _STATE["expected"], _STATE["changed"]
            _STATE.update(saved=None, expected=None, changed=False)
            if changed and isinstance(saved, float) and expected is not None and sys.getswitchinterval() == expected:
                sys.setswitchinterval(saved)
