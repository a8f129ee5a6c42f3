"""Where files live: local paths and URIs (``s3://``, ``hdfs://``, ``gs://``, ``file://``),
stores opened through ``pyarrow.fs``. The one module that knows about file systems.

- :func:`locate` turns a path or URI into a :class:`Location`: a store (a pyarrow
  ``FileSystem``) and the path inside it. A local path or ``file://`` has no store: it is
  looked at and read with ``os`` and pyarrow's own files (:func:`file_type`,
  :func:`open_input_file`), so that a local run does not import ``pyarrow.fs`` (about
  25 ms of its start-up); ``Location.filesystem`` is then the ``LocalFileSystem``, made
  when first asked for. ``s3://`` is an ``S3FileSystem`` built here (:func:`_s3`: the endpoint from
  ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``, which pyarrow's constructor ignores,
  bounded retries and connect timeout); every other scheme is pyarrow's
  ``FileSystem.from_uri`` (``hdfs://``, ``viewfs://``, ``gs://``). File systems are made
  once per process and store root and reused.
- :func:`expand` expands glob patterns on the store's listing.
- :func:`redact` is how a location is shown: never a password or a query's values.
- :func:`failure` turns an ``OSError`` of a store into the error the command line
  reports: an :class:`~mpieval.errors.InputError` (exit 2: missing, denied, bad
  configuration) or a :class:`~mpieval.errors.StoreError` (exit 1: a transient fault that
  outlived the retries).
- :func:`write_atomically`: every output (``--json``, ``--save-state``, a checkpoint),
  whole or not at all, with the umask's mode; :func:`read_bytes`, :func:`join`: saved
  runs at a path or URI.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import glob
import os
import re
import stat
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa

from mpieval import jsonwriter
from mpieval.errors import DataError, InputError, OutputError, StoreError

S3_ATTEMPTS = 5  # pyarrow's standard AWS retry strategy: exponential backoff, capped
S3_CONNECT_TIMEOUT = 5.0  # seconds (the SDK's default is 1 s; a loaded host needs more)
S3_REQUEST_TIMEOUT = 30.0  # seconds (pyarrow applies it on Windows and macOS only)

# What an S3 file system is made from besides its URI (a change makes another one).
_S3_ENVIRONMENT = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION")
_URI = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
_GLOB_CHARS = re.compile(r"[*?\[]")

if TYPE_CHECKING:  # imported where a store needs it (a local path never does)
    import pyarrow.fs as pafs


@dataclass(frozen=True)
class Location:
    """A file or directory: the ``store`` that holds it (None: the local disk) and ``path``
    inside it; ``text`` is what the user gave (which may hold a password: show
    :attr:`shown`)."""

    text: str
    store: pafs.FileSystem | None
    path: str

    @property
    def shown(self) -> str:
        return redact(self.text)

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The store, or for the local disk pyarrow's ``LocalFileSystem``."""
        return _local() if self.store is None else self.store

    @property
    def remote(self) -> bool:
        if self.store is None:
            return False
        import pyarrow.fs as pafs

        return not isinstance(self.store, pafs.LocalFileSystem)

    @property
    def key(self) -> str:
        """The same for two spellings of one file (for "given twice")."""
        if not self.remote:
            return os.path.realpath(self.path)
        return f"{self.filesystem.type_name}:{redact(_root(self.text))}:{self.path}"

    def child(self, path: str) -> Location:
        """Another file of the same store, by its path in the file system."""
        return Location(_with_path(self.text, path), self.store, path)


def is_uri(text: str) -> bool:
    return _URI.match(text) is not None


def redact(text: str) -> str:
    """``text`` without secrets: a URI's user info becomes ``***@`` and its query values
    ``***`` (``s3://***@bucket/key?region=***``); a plain path is shown as is."""
    if not is_uri(text):
        return text
    parts = urllib.parse.urlsplit(text)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(f"{pair.split('=', 1)[0]}=***" for pair in parts.query.split("&") if pair)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


# -- file systems ------------------------------------------------------------------------

_filesystems: dict[str, pafs.FileSystem] = {}
_lock = threading.Lock()


def locate(text: str) -> Location:
    """The file system and path of a local path or URI (an :class:`InputError` naming the
    redacted URI when the store cannot be reached or configured)."""
    match = _URI.match(text)
    if match is None:
        return Location(text, None, os.path.abspath(text))
    scheme = match.group(1).lower()
    if scheme == "file":
        path = urllib.parse.unquote(urllib.parse.urlsplit(text).path)
        return Location(text, None, path)
    root = _root(text)
    key = root + "".join(f"|{os.environ.get(name, '')}" for name in _S3_ENVIRONMENT)
    with _lock:
        filesystem = _filesystems.get(key)
        if filesystem is None:
            try:
                filesystem = _s3(text) if scheme in ("s3", "s3a") else connect(root)[0]
            except (OSError, ValueError, TypeError) as error:
                raise InputError(redact(text), f"cannot open the store: {_one_line(error)}"
                                 ) from None
            _filesystems[key] = filesystem
    return Location(text, filesystem, _path_of(text, scheme))


def stores_opened() -> bool:
    """Whether this process has made a file system other than the local one."""
    return any(key for key in _filesystems)


def connect(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's own ``FileSystem.from_uri`` (hdfs, viewfs, gs, ...); tests replace it
    to stand a local or mock file system in for a store that cannot run here."""
    import pyarrow.fs as pafs

    found: tuple[Any, str] = pafs.FileSystem.from_uri(uri)
    return found


def _local() -> pafs.FileSystem:
    import pyarrow.fs as pafs

    with _lock:
        filesystem = _filesystems.get("")
        if filesystem is None:
            filesystem = _filesystems[""] = pafs.LocalFileSystem()
    return filesystem


def _root(text: str) -> str:
    """The store root of a URI, ``scheme://[user@]host[?query]``: what makes a file
    system (one per bucket for object stores, whose region may differ by bucket)."""
    parts = urllib.parse.urlsplit(text)
    return urllib.parse.urlunsplit((parts.scheme.lower(), parts.netloc, "", parts.query, ""))


def _path_of(text: str, scheme: str) -> str:
    """The path inside the file system: ``bucket/key`` for object stores, ``/path`` for
    HDFS."""
    parts = urllib.parse.urlsplit(text)
    path = urllib.parse.unquote(parts.path)
    if scheme in ("s3", "s3a", "gs", "gcs"):
        return parts.netloc.rsplit("@", 1)[-1] + path
    return path


def _with_path(text: str, new: str) -> str:
    """``text`` (a path or URI) for the file-system path ``new``."""
    if not is_uri(text):
        return new
    parts = urllib.parse.urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme in ("s3", "s3a", "gs", "gcs"):
        bucket, _, key = new.partition("/")
        userinfo = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        return urllib.parse.urlunsplit((parts.scheme, userinfo + bucket,
                                        "/" + urllib.parse.quote(key), parts.query, ""))
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, urllib.parse.quote(new),
                                    parts.query, ""))


def _s3(text: str) -> pafs.FileSystem:
    """An S3 file system for a URI: credentials from the URI's user info or the standard
    chain (environment, ``~/.aws`` files, instance metadata); ``?region=``,
    ``?endpoint_override=``, ``?scheme=`` from the query; else the endpoint from
    ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` and the region from ``AWS_REGION`` or
    ``AWS_DEFAULT_REGION``, or asked of AWS for the bucket."""
    import pyarrow.fs as pafs

    parts = urllib.parse.urlsplit(text)
    query = dict(urllib.parse.parse_qsl(parts.query))
    options: dict[str, Any] = {
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=S3_ATTEMPTS),
        "connect_timeout": S3_CONNECT_TIMEOUT,
        "request_timeout": S3_REQUEST_TIMEOUT,
    }
    if parts.username:
        options["access_key"] = urllib.parse.unquote(parts.username)
        options["secret_key"] = urllib.parse.unquote(parts.password or "")
    known = {"region", "endpoint_override", "scheme", "anonymous"}
    unknown = sorted(set(query) - known)
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r} in the URI (known: "
                         f"{', '.join(sorted(known))})")
    endpoint = (query.get("endpoint_override") or os.environ.get("AWS_ENDPOINT_URL_S3")
                or os.environ.get("AWS_ENDPOINT_URL"))
    if endpoint:
        address = urllib.parse.urlsplit(endpoint if "://" in endpoint else "//" + endpoint)
        options["endpoint_override"] = address.netloc + address.path.rstrip("/")
        options["scheme"] = address.scheme or "https"
    if "scheme" in query:
        options["scheme"] = query["scheme"]
    if query.get("anonymous", "").lower() in ("1", "true", "yes"):
        options["anonymous"] = True
    region = (query.get("region") or os.environ.get("AWS_REGION")
              or os.environ.get("AWS_DEFAULT_REGION"))
    if region is None and not endpoint:
        region = pafs.resolve_s3_region(parts.netloc.rsplit("@", 1)[-1])
    if region:
        options["region"] = region
    return pafs.S3FileSystem(**options)


# -- listing -------------------------------------------------------------------------------


def has_glob(text: str) -> bool:
    """Whether a path or URI holds glob characters (in a URI's path: its ``?`` starts
    the query)."""
    if is_uri(text):
        text = urllib.parse.urlsplit(text).path
    return _GLOB_CHARS.search(text) is not None


def expand(text: str) -> list[str]:
    """The files a path or URI names: itself, or, when it holds glob characters and no
    such file exists, the files that match it, sorted.

    Patterns: ``*``, ``?`` and ``[...]`` within one path segment (``*`` never matches a
    ``/``), in any segment; ``**`` is not special. In a URI ``?`` starts the query (the
    store's options, ``?region=...``), so one character is matched with ``[...]``. Local
    patterns are Python's ``glob``; a store's are matched on one listing of the
    directory above the first wildcard (recursive when a wildcard is in a directory
    segment). No match is an :class:`InputError` naming the pattern.
    """
    if not has_glob(text):
        return [text]
    location = locate(text)
    if not location.remote:
        if os.path.exists(text):
            return [text]
        found = sorted(path for path in glob.glob(location.path if is_uri(text) else text)
                       if os.path.isfile(path))
        if is_uri(text):
            found = [location.child(path).text for path in found]
    else:
        import pyarrow.fs as pafs

        info = guarded(location, "list", lambda: location.filesystem.get_file_info(
            location.path))
        if info.type == pafs.FileType.File:
            return [text]
        found = [location.child(path).text for path in _matches(location)]
    if not found:
        raise InputError(redact(text), "no file matches the pattern")
    return found


def _matches(pattern: Location) -> list[str]:
    """Paths of the files of a store that match ``pattern.path`` segment by segment (a
    leading ``/`` aside: some file systems list ``dir/file`` under ``/dir``)."""
    import pyarrow.fs as pafs

    lead = "/" if pattern.path.startswith("/") else ""
    segments = pattern.path.removeprefix("/").split("/")
    first = next(i for i, segment in enumerate(segments) if has_glob(segment))
    base = lead + "/".join(segments[:first])
    selector = pafs.FileSelector(base, allow_not_found=True,
                                 recursive=first < len(segments) - 1)
    infos = guarded(pattern, "list", lambda: pattern.filesystem.get_file_info(selector))
    found = []
    for info in infos:
        parts = info.path.removeprefix("/").split("/")
        if info.type == pafs.FileType.File and len(parts) == len(segments) and all(
                fnmatch.fnmatchcase(part, want)
                for part, want in zip(parts, segments, strict=True)):
            found.append(lead + "/".join(parts))
    return sorted(found)


# -- errors --------------------------------------------------------------------------------

# A fault worth retrying and, when it outlives the retries, not the input's fault: the
# connection (refused, reset, timed out, name lookup), throttling, a server error (5xx).
_TRANSIENT = re.compile(
    r"NETWORK_CONNECTION|curlCode|SLOW_DOWN|SlowDown|Throttl|REQUEST_TIMEOUT|RequestTimeout|"
    r"SERVICE_UNAVAILABLE|ServiceUnavailable|INTERNAL_FAILURE|InternalError|"
    r"HTTP response code: 5\d\d|timed out|Connection reset|Broken pipe", re.I)
_DENIED = re.compile(r"ACCESS_DENIED|AccessDenied|Forbidden|InvalidAccessKeyId|"
                     r"SignatureDoesNotMatch|response code: 403|Permission denied", re.I)


def failure(location: Location, doing: str, error: OSError) -> DataError | StoreError:
    """The error to report for ``error``, raised by a store while ``doing`` (read, list,
    write) ``location``: one line naming the redacted location.

    - missing file or bucket, access denied, anything else the store refuses: a
      :class:`DataError` (exit 2);
    - a transient fault (connection, throttling, a server error, a timeout) still there
      after the retries: a :class:`StoreError` (exit 1).
    """
    text = _one_line(error)
    where = location.shown
    if isinstance(error, FileNotFoundError) or "NoSuchBucket" in text or "NoSuchKey" in text:
        return DataError(where, f"cannot {doing}: No such file or directory"
                         f"{_bucket_note(location)}")
    if isinstance(error, PermissionError) or _DENIED.search(text):
        return DataError(where, f"cannot {doing}: access denied ({text})")
    if location.remote and _TRANSIENT.search(text):
        import pyarrow.fs as pafs

        tries = f" after {S3_ATTEMPTS} attempts" if isinstance(
            location.filesystem, pafs.S3FileSystem) else ""
        return StoreError(f"{where}: cannot {doing}{tries}: {text}")
    return DataError(where, f"cannot {doing}: {getattr(error, 'strerror', None) or text}")


def _bucket_note(location: Location) -> str:
    """`` (no bucket B)`` when the object's bucket itself is missing (S3, GCS)."""
    bucket = missing_bucket(location)
    return "" if bucket is None else f" (no bucket {bucket})"


def missing_bucket(location: Location) -> str | None:
    """The bucket of an object store's location when the bucket does not exist."""
    if location.store is None:
        return None
    import pyarrow.fs as pafs

    if not isinstance(location.filesystem, (pafs.S3FileSystem, pafs.GcsFileSystem)):
        return None
    bucket = location.path.split("/", 1)[0]
    with contextlib.suppress(OSError):
        if location.filesystem.get_file_info(bucket).type == pafs.FileType.NotFound:
            return bucket
    return None


def guarded(location: Location, doing: str, step: Callable[[], Any]) -> Any:
    """``step()``, its ``OSError`` reported as :func:`failure` says."""
    try:
        return step()
    except OSError as error:
        raise failure(location, doing, error) from None


def file_type(location: Location) -> tuple[str, int]:
    """What ``location`` is: ``"file"`` (then its size in bytes), ``"directory"``,
    ``"missing"`` or ``"other"`` (a device, a pipe; size 0). The local disk is asked with
    ``os.stat`` (following links, as pyarrow's ``LocalFileSystem`` does), a store through
    its file system. Raises the ``OSError`` of a store or of ``os.stat``."""
    if location.store is None:
        try:
            status = os.stat(location.path)
        except (FileNotFoundError, NotADirectoryError):
            return "missing", 0
        if stat.S_ISREG(status.st_mode):
            return "file", status.st_size
        return "directory" if stat.S_ISDIR(status.st_mode) else "other", 0
    import pyarrow.fs as pafs

    info = location.store.get_file_info(location.path)
    kinds = {pafs.FileType.File: "file", pafs.FileType.Directory: "directory",
             pafs.FileType.NotFound: "missing"}
    kind = kinds.get(info.type, "other")
    return kind, info.size if kind == "file" else 0


def open_input_file(location: Location) -> pa.NativeFile:
    """A random-access file of ``location``: a local file as ``pyarrow.OSFile`` (what the
    ``LocalFileSystem`` opens too), a store's through its file system."""
    if location.store is None:
        return pa.OSFile(location.path, "rb")
    return location.store.open_input_file(location.path)


def _one_line(error: BaseException) -> str:
    """The first line of an error's message (HDFS lists every JVM path it tried)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# -- outputs -------------------------------------------------------------------------------


def join(directory: str, name: str) -> str:
    """``directory/name`` for a path or a URI."""
    if not is_uri(directory):
        return os.path.join(directory, name)
    parts = urllib.parse.urlsplit(directory)
    path = parts.path.rstrip("/") + "/" + urllib.parse.quote(name)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def check_writable(text: str, flag: str) -> None:
    """Before reading anything: a local output's directory exists and is writable; a
    store's output is not an existing directory and its bucket exists (a store's
    permissions show on write)."""
    location = locate(text)
    if location.remote:
        import pyarrow.fs as pafs

        info = guarded(location, "check", lambda: location.filesystem.get_file_info(
            location.path))
        if info.type == pafs.FileType.Directory:
            raise InputError(flag, f"cannot write {location.shown}: it is a directory")
        bucket = missing_bucket(location)
        if bucket is not None:
            raise InputError(flag, f"cannot write {location.shown}: no bucket {bucket}")
        return
    path = location.path
    directory = os.path.dirname(path)
    if os.path.isdir(path) or (os.path.exists(path) and not os.path.isfile(path)):
        raise InputError(flag, f"cannot write {text}: it exists and is not a regular file")
    if not os.path.isdir(directory):
        raise InputError(flag, f"cannot write {text}: no directory {directory}")
    if not os.access(directory, os.W_OK):
        raise InputError(flag, f"cannot write {text}: {directory} is not writable")


# Write errors that mean the path given is wrong (exit 2); any other (a full disk, an I/O
# error, a quota) is the environment's (exit 1).
_PATH_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.ENOENT, errno.ENOTDIR,
                          errno.EISDIR, errno.EROFS, errno.ENAMETOOLONG, errno.ELOOP})


def output_failure(flag: str, shown: str, error: OSError) -> InputError | OutputError:
    """The error to report when writing the output of ``flag`` (``--json``, ``stdout``,
    ...) at ``shown`` failed with ``error``: an :class:`InputError` when the path is at
    fault (denied, missing, a directory: exit 2), an :class:`OutputError` otherwise
    (a full disk, an I/O error: exit 1)."""
    reason = getattr(error, "strerror", None) or _one_line(error)
    if error.errno in _PATH_ERRNOS:
        return InputError(flag, f"cannot write {shown}: {reason}")
    return OutputError(f"{flag}: cannot write {shown}: {reason}")


def write_atomically(text: str, data: bytes | Callable[[BinaryIO], object], *,
                     flag: str | None = None) -> None:
    """Write an output (``--json``, ``--save-state``, a checkpoint, the report) to a path
    or URI so that a reader sees the old file or the whole new one: locally a temporary
    file beside it (fsynced), then a rename, the directory fsynced after it (after a
    crash the new file is there once this returned); on a store one stream whose object
    appears whole when it is closed (S3: one PUT, or a multipart upload completed on
    close) and never when writing fails. Nothing is left behind when writing fails.

    ``data``: the bytes, or a function that writes them to the file it is given (a large
    output written as it is made, not held whole in memory). A local file has the mode
    the umask gives a new file (0644 under umask 022), whoever writes it.

    Errors: with ``flag``, locally :func:`output_failure`, on a store :func:`failure`, as
    errors of ``flag``; without, the ``OSError`` as raised."""
    location = locate(text)

    def put(out: BinaryIO) -> None:
        if isinstance(data, bytes):
            out.write(data)
        else:
            data(out)

    if not location.remote:
        path = location.path
        directory, name = os.path.split(path)
        temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
        try:
            with open(temporary, "wb") as out:  # mode 0666 less the umask, as open gives
                put(out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException as error:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            if isinstance(error, OSError) and flag is not None:
                raise output_failure(flag, location.shown, error) from None
            raise
        sync_directory(directory or ".")
        return
    try:
        with location.filesystem.open_output_stream(location.path, compression=None) as out:
            put(out)
    except OSError as error:
        if flag is None:
            raise
        reported = failure(location, "write", error)
        if isinstance(reported, InputError):
            raise InputError(flag, f"{reported.field}: {reported.problem}") from None
        raise reported from None


def sync_directory(directory: str) -> None:
    """Flush a directory's entries to disk (a rename in it survives a crash); where a
    directory cannot be opened for this (not POSIX), nothing."""
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:  # some file systems refuse fsync on a directory: nothing to do
        pass
    finally:
        os.close(handle)


def make_directory(text: str) -> bool:
    """A local directory is made (with its parents); a store needs none. Whether it was
    made now (False when it was there already, or on a store)."""
    location = locate(text)
    if location.remote or os.path.isdir(location.path):
        return False
    os.makedirs(location.path, exist_ok=True)
    return True


def names_in(text: str) -> list[str]:
    """The names of the files directly in a directory (a path or URI); none when it does
    not exist."""
    location = locate(text)
    if not location.remote:
        try:
            return sorted(entry.name for entry in os.scandir(location.path)
                          if entry.is_file())
        except FileNotFoundError:
            return []
    import pyarrow.fs as pafs

    selector = pafs.FileSelector(location.path, allow_not_found=True)
    infos = guarded(location, "list", lambda: location.filesystem.get_file_info(selector))
    return sorted(info.base_name for info in infos if info.type == pafs.FileType.File)


def remove(text: str) -> None:
    """Delete a file (a path or URI) if it exists."""
    location = locate(text)
    if not location.remote:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(location.path)
        return
    try:
        location.filesystem.delete_file(location.path)
    except FileNotFoundError:
        pass
    except OSError as error:
        raise failure(location, "delete", error) from None


def remove_directory(text: str) -> None:
    """Remove a local directory if it is empty (a store has none: nothing)."""
    location = locate(text)
    if not location.remote:
        with contextlib.suppress(OSError):
            os.rmdir(location.path)


def read_bytes(text: str) -> bytes:
    """The whole of a small file (a saved run's description or state)."""
    location = locate(text)
    with guarded(location, "read", lambda: location.filesystem.open_input_stream(
            location.path, compression=None)) as stream:
        data: bytes = guarded(location, "read", stream.read)
        return data


def write_json(path: str, data: dict[str, Any], flag: str = "--json") -> None:
    """Write ``data`` as JSON to ``path`` (a local path or a URI) atomically
    (:func:`write_atomically`); NaN is refused (results write undefined values as null)."""
    def put(out: BinaryIO) -> None:
        for piece in jsonwriter.pieces(data):
            out.write(piece)

    write_atomically(path, put, flag=flag)


def json_text(data: dict[str, Any]) -> str:
    """The text of a JSON output (``--json``, ``mpieval.spark``'s ``to_json``): indented,
    NaN refused (results write undefined values as null)."""
    return jsonwriter.dumps(data) + "\n"
