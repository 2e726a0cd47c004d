"""A real process that writes one output name through the embedded output service.

    python output_contender.py DIR NAME TOKEN HOLD_S

Prints ``committed`` (exit 0) or ``refused: <line>`` (exit 2).  Used by the lock race
test: two of these started together contend for one name.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_embedded.output.transaction import FileOutputService, OutputRefused


def main() -> int:
    """Reserve, write TOKEN, hold the transaction open HOLD_S seconds, commit."""
    directory, name, token, hold = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    service = FileOutputService(directory, RunOutputPolicy(), f"cid-{token}")
    try:
        lease = service.open_write(name)
    except OutputRefused as exc:
        print(f"refused: {exc}", flush=True)
        return 2
    lease.write(token.encode())
    time.sleep(hold)
    service.seal(lease)
    readback = service.open_readback(lease)
    readback.close()
    size = len(token.encode())
    service.confirm_validation(readback, {
        "validator": "t", "validated_bytes": size, "integrity": "structural", "completion_id": f"cid-{token}",
    })
    try:
        service.commit(lease)
    except Exception as exc:
        print(f"commit failed: {exc}", flush=True)
        service.abort(lease)
        return 1
    print("committed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
