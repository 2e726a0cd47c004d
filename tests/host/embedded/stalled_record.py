"""``fsr record`` in a real process whose output writes freeze (a frozen file system).

    python stalled_record.py AFTER_BYTES FSR-RECORD-ARGS...
    python stalled_record.py close FSR-RECORD-ARGS...

The first AFTER_BYTES bytes are written; every later ``write`` blocks forever in C
(``threading.Event.wait``), as a write stuck in the kernel would.  With ``close`` the
writes are real and the synthetic backend's ``close`` (teardown, on the main thread,
after the commit) never returns.  Everything else is the real command.
"""

from __future__ import annotations

import sys
import threading

from fastsim_embedded.backends.synthetic import SyntheticBackend
from fastsim_embedded.output import leases as output
from fastsim_record.cli import main

_original = output.FileWriteLease.write
_frozen = threading.Event()
_limit = -1 if sys.argv[1] == "close" else int(sys.argv[1])
_written = [0]


def _write(self: output.FileWriteLease, data: bytes | memoryview) -> int:
    if 0 <= _limit <= _written[0]:
        threading.Event().wait()  # never set: frozen
    n = _original(self, data)
    _written[0] += n
    return n


def _close(self: SyntheticBackend) -> None:
    threading.Event().wait()  # never set: teardown hangs


output.FileWriteLease.write = _write  # type: ignore[method-assign]
if _limit < 0:
    SyntheticBackend.close = _close  # type: ignore[method-assign]

if __name__ == "__main__":
    argv = ["record", *sys.argv[2:]]
    sys.argv = ["fsr", *argv]
    sys.exit(main())
