"""``fsr record`` in a real process whose output writes freeze (a frozen file system).

    python stalled_record.py AFTER_BYTES FSR-RECORD-ARGS...

The first AFTER_BYTES bytes are written; every later ``write`` blocks forever in C
(``threading.Event.wait``), as a write stuck in the kernel would.  Everything else is
the real command.
"""

from __future__ import annotations

import sys
import threading

from fastsim_embedded import output
from fastsim_record.cli import main

_original = output.FileWriteLease.write
_frozen = threading.Event()
_limit = int(sys.argv[1])
_written = [0]


def _write(self: output.FileWriteLease, data: bytes | memoryview) -> int:
    if _written[0] >= _limit:
        threading.Event().wait()  # never set: frozen
    n = _original(self, data)
    _written[0] += n
    return n


output.FileWriteLease.write = _write  # type: ignore[method-assign]

if __name__ == "__main__":
    argv = ["record", *sys.argv[2:]]
    sys.argv = ["fsr", *argv]
    sys.exit(main())
