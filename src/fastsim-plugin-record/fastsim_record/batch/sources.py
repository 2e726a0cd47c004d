"""SOURCES of a batch command: FSR files, folders of them and URLs (through fsspec).

    | # | SOURCE                                  | becomes                                   |
    |---|-----------------------------------------|-------------------------------------------|
    | 1 | a local file                            | itself (absolute path), whatever its name |
    | 2 | a local folder                          | every ``*.fsr`` below it, sorted          |
    | 3 | ``s3://``, ``gs://``, ``file://`` ... URL | the object, or every ``*.fsr`` under the |
    |   |                                         | prefix (fsspec ``find``), sorted          |
    | 4 | missing, or a folder without FSR files  | ``SourceError`` (exit 2)                  |

Never listed from a folder: ``*.incomplete`` (an unsealed Run), anything under a
``.quarantine`` folder, hidden temporary files (``.name.indexing-*``).  Each entry
carries what makes the incremental index cheap: size, mtime (ns) or the store's ETag.
A remote object is read in place with ranged reads (``readable``: structural validation
reads headers, tables and the footer, not the payloads), or from a temporary local copy
where a path is needed (``local_copy``: ``fsr export``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from fastsim_recording_format.files import FSR_SUFFIX, INCOMPLETE_SUFFIX, QUARANTINE_DIR
from fastsim_recording_format.reading._sources import is_url  # one rule for what a URL is

__all__ = [
    "Entry", "SourceError", "check_bucket", "etag_of", "expand", "filesystem", "is_local_fs", "is_single_file", "is_url",
    "local_copy", "local_files", "readable", "skipped", "store_error",
]


class SourceError(ValueError):
    """A SOURCE that does not exist or holds no FSR file (one line)."""


@attrs.frozen
class Entry:
    """One FSR file to work on."""

    url: str
    size: int
    mtime_ns: int | None = None
    etag: str | None = None


def is_single_file(sources: Sequence[str], args: object = None) -> bool:
    """One local path that is not a folder, and no ``--jobs``/``--ray``: the command keeps
    its single-file behaviour and output.  A folder, a URL, several sources or an executor
    option make it a batch."""
    if getattr(args, "jobs", None) is not None or getattr(args, "ray", None) is not None:
        return False
    return len(sources) == 1 and not is_url(sources[0]) and not Path(sources[0]).is_dir()


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` and the path inside it."""
    try:
        import fsspec  # type: ignore[import-untyped]
    except ImportError:
        raise SourceError(f"{url}: URLs need fsspec: pip install 'fastsim-plugin-record[s3]'") from None
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise SourceError(f"{url}: {exc}".splitlines()[0]) from None
    return fs, path


def store_error(url: str, exc: BaseException) -> SourceError:
    """One line for an object store's failure (no credentials, refused connection, ...)."""
    text = str(exc).strip().splitlines()
    return SourceError(f"{url}: {type(exc).__name__}" + (f": {text[0]}" if text else ""))


def check_bucket(url: str) -> None:
    """An ``s3://`` destination whose bucket does not exist is one ``SourceError`` line,
    before any work starts (not one failure per file).  Other stores, and a bucket the
    credentials may not look at, are left to the operations themselves."""
    if not url.startswith("s3://"):
        return
    fs, path = filesystem(url)
    bucket = path.split("/", 1)[0]
    try:
        fs.call_s3("head_bucket", Bucket=bucket)
    except FileNotFoundError:
        raise SourceError(f"{url}: the bucket {bucket!r} does not exist") from None
    except Exception as exc:  # the store's own errors: a 404 named otherwise, or no permission to look
        code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", "")) if isinstance(
            getattr(exc, "response", None), dict) else ""
        if code in ("404", "NoSuchBucket"):
            raise SourceError(f"{url}: the bucket {bucket!r} does not exist") from None
        if isinstance(exc, ConnectionError | TimeoutError) or "connect" in type(exc).__name__.lower():
            raise store_error(url, exc) from None


def skipped(name: str) -> bool:
    """Never a batch source from a listing: unsealed, quarantined or temporary files."""
    parts = name.replace("\\", "/").split("/")
    return (QUARANTINE_DIR in parts or parts[-1].endswith(INCOMPLETE_SUFFIX)
            or parts[-1].startswith("."))


def etag_of(info: dict[str, Any]) -> str | None:
    """The store's ETag (or GCS md5Hash) of an object's info, unquoted; ``None`` if none."""
    for key in ("ETag", "etag", "md5Hash"):
        value = info.get(key)
        if isinstance(value, str) and value:
            return value.strip('"')
    return None


def _mtime_ns(info: dict[str, Any]) -> int | None:
    value = info.get("mtime", info.get("LastModified", info.get("updated")))
    if isinstance(value, int | float):
        return int(value * 1e9)
    stamp = getattr(value, "timestamp", None)
    if callable(stamp):
        return int(stamp() * 1e9)
    return None


def _remote(source: str) -> list[Entry]:
    fs, path = filesystem(source)
    protocol = fs.protocol[0] if isinstance(fs.protocol, tuple | list) else fs.protocol
    try:
        info = fs.info(path)
        found = fs.find(path, detail=True) if info.get("type") == "directory" else None
    except FileNotFoundError:
        raise SourceError(f"{source}: no such file or prefix") from None
    except Exception as exc:  # the store's own errors (credentials, connection, permission)
        raise store_error(source, exc) from None
    if found is not None:
        infos = [(p, i) for p, i in sorted(found.items()) if p.endswith(FSR_SUFFIX) and not skipped(p)]
        if not infos:
            raise SourceError(f"{source}: no .fsr file under this prefix")
    else:
        infos = [(path, info)]
    return [
        Entry(url=fs.unstrip_protocol(p) if protocol != "file" else f"file://{p}",
              size=int(i.get("size") or 0), mtime_ns=_mtime_ns(i) if protocol == "file" else None,
              etag=None if protocol == "file" else etag_of(i))
        for p, i in infos
    ]


def local_files(source: str) -> list[tuple[Path, str]]:
    """The FSR files a local SOURCE names, each with its key: the path below the folder
    (a lone file's key is its name); raises ``SourceError``."""
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.fsr") if p.is_file() and not skipped(str(p.relative_to(path))))
        if not files:
            raise SourceError(f"{source}: no .fsr file in this folder")
        return [(p, p.relative_to(path).as_posix()) for p in files]
    if path.is_file():
        return [(path, path.name)]
    raise SourceError(f"{source}: no such file or folder")


def _local(source: str) -> list[Entry]:
    files = [file for file, _ in local_files(source)]
    entries = []
    for file in files:
        st = file.stat()
        entries.append(Entry(url=os.path.abspath(file), size=st.st_size, mtime_ns=st.st_mtime_ns))
    return entries


def expand(sources: Sequence[str]) -> list[Entry]:
    """Every FSR file the SOURCES name, each once, in order."""
    seen: dict[str, Entry] = {}
    for source in sources:
        for entry in _remote(source) if is_url(source) else _local(source):
            seen.setdefault(entry.url, entry)
    return list(seen.values())


def _store_of(url: str) -> tuple[Any, str]:
    """``(filesystem, path)`` of a remote object, or ``(None, local path)`` for a local path
    or a ``file://`` URL."""
    if not is_url(url):
        return None, url
    fs, path = filesystem(url)
    return (None, path) if is_local_fs(fs) else (fs, path)


def is_local_fs(fs: Any) -> bool:
    """Whether an fsspec filesystem is this machine's own files."""
    protocol = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    return "file" in protocol or "local" in protocol


@contextlib.contextmanager
def local_copy(url: str) -> Iterator[str]:
    """A local path holding the object's bytes (the path itself for a local file)."""
    fs, path = _store_of(url)
    if fs is None:
        yield path
        return
    fd, tmp = tempfile.mkstemp(prefix="fsr-", suffix=".fsr")
    os.close(fd)
    try:
        fs.get_file(path, tmp)
        yield tmp
    finally:
        os.unlink(tmp)


@contextlib.contextmanager
def readable(url: str) -> Iterator[Any]:
    """What the format's ``validate``/``FsrReader`` accept: the local path, or for a
    remote object a seekable fsspec file whose reads become ranged GETs (1 MiB blocks,
    cached)."""
    fs, path = _store_of(url)
    if fs is None:
        yield path
        return
    with fs.open(path, "rb", block_size=1 << 20, cache_type="blockcache") as handle:
        yield handle
