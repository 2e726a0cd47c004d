"""Which output names a Run may commit: one rule, one limit, for ``fsr check`` and the host.

A plugin authors a bare name (Core owns the directory); the host writes it as a hidden
staging file ``.<name>.incomplete-<12 hex>`` beside the final name, so the longest name
is the file system's limit minus what staging adds (:data:`STAGING_OVERHEAD`).  A
committed name must also be one the batch tools list (``fsr index``, ``upload``,
folder validation skip hidden, unsealed and quarantined files).

    | # | name                                          | refusal                       |
    |---|-----------------------------------------------|-------------------------------|
    | 1 | empty, ``.``, ``..``, a separator or NUL      | not a bare file name          |
    | 2 | a control character                           | names the character           |
    | 3 | starts with ``.`` (``.fsr``, ``.hidden.fsr``, | a hidden name: the batch tools|
    |   | ``.quarantine``)                              | never list it                 |
    | 4 | ends with ``.incomplete``                     | an unsealed Run's name        |
    | 5 | longer than ``name_max - STAGING_OVERHEAD``   | names the sizes and the limit |
    |   | bytes (UTF-8)                                 |                               |

``fastsim_record.config`` (``fsr check``) and ``fastsim_embedded.output.names`` (``fsr
record``) both call :func:`output_name_refusal`, so they never disagree.
"""

from __future__ import annotations

__all__ = ["NAME_MAX", "STAGING_OVERHEAD", "STAGING_SUFFIX", "STAGING_TOKEN", "output_name_refusal", "staging_name"]

#: the suffix of an unsealed Run's file
STAGING_SUFFIX = ".incomplete"
#: hex characters of the token that makes a staging name unique
STAGING_TOKEN = 12
#: the usual file-system name limit, in bytes
NAME_MAX = 255


def staging_name(name: str, token: str) -> str:
    """The hidden staging file of ``name``: ``.<name>.incomplete-<token>``."""
    return f".{name}{STAGING_SUFFIX}-{token}"


#: the bytes staging adds to a name (25: ``.`` + ``.incomplete-`` + 12)
STAGING_OVERHEAD = len(staging_name("", "0" * STAGING_TOKEN))


def output_name_refusal(name: str, name_max: int = NAME_MAX) -> str | None:
    """Why ``name`` may not be committed (the module table), or ``None``."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        return f"{name!r} is not a bare file name"
    control = next((c for c in name if ord(c) < 32 or ord(c) == 127), None)
    if control is not None:
        return f"{name!r} contains a control character ({control!r}); use printable characters only"
    if name.startswith("."):
        return f"{name!r} is a hidden name; fsr index, fsr upload and folder validation never list it"
    if name.endswith(STAGING_SUFFIX):
        return f"{name!r} ends with {STAGING_SUFFIX!r}, the name of an unsealed Run's file"
    size = len(name.encode("utf-8", "surrogateescape"))
    limit = name_max - STAGING_OVERHEAD
    if size > limit:
        shown = repr(name) if len(name) <= 40 else repr(name[:24] + "...")
        return (f"{shown} is too long: {size} bytes, over {limit} (the file system's {name_max}-byte limit "
                f"minus the {STAGING_OVERHEAD} bytes of its staging name {staging_name('<name>', 'x' * STAGING_TOKEN)})")
    return None
