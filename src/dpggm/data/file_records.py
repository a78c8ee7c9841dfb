"""A data file parsed once, in a background thread, into blocks kept for every pass.

:class:`FileRecords` is the source of the passes that read a file several times (the main
job: ranges, norm bound, moments): parsing (the costly part) happens once, and every pass
reads the parsed float64 blocks -- the first pass as they arrive, the later ones from
memory or from an owner-only temporary file. A file larger than :data:`MEMORY_LIMIT` goes
to that file from its first block, so memory stays ``O(p^2 + a few blocks)`` whatever the
number of records.

Privacy
-------
The temporary file holds parsed private records: it never has a name while it holds any,
is readable by its owner only and is freed by the system when the records are closed or
the process ends (see :class:`_SpillWriter`). Nothing here adds noise or is released.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import queue
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from dpggm.data.passes import PassTask, Records, run_in_order, run_split

__all__ = ["MEMORY_LIMIT", "FileRecords", "release_free_memory"]

#: Parsed file blocks are kept in memory up to this many bytes, beyond it in a temporary
#: file (so a file larger than memory is read with memory O(p^2 + a few blocks)).
MEMORY_LIMIT = 64 << 20


def release_free_memory() -> None:
    """Hand the free memory of pyarrow's pool and of the C heap back to the system
    (glibc's ``malloc_trim``; nothing on other C libraries): the blocks of a large file,
    parsed by several threads, leave free but fragmented memory behind that would
    otherwise stay counted against the process."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return
    trim(0)


class _Recycler:
    """Column-major matrices for the parser, drawn from buffers handed back once their
    block is written: parsing a large file then allocates a handful of blocks, not one
    per block (repeated large allocations fragment the heap, which then keeps the
    memory)."""

    def __init__(self) -> None:
        self._free: queue.SimpleQueue[np.ndarray] = queue.SimpleQueue()
        self._owner: dict[int, np.ndarray] = {}

    def matrix(self, rows: int, width: int) -> np.ndarray:
        size = rows * width
        try:
            flat = self._free.get_nowait()
            if flat.size < size:
                flat = np.empty(size + size // 8)
        except queue.Empty:
            flat = np.empty(size + size // 8)
        block = flat[:size].reshape(width, rows).T
        self._owner[id(block)] = flat
        return block

    def give_back(self, block: np.ndarray) -> None:
        flat = self._owner.pop(id(block), None)
        if flat is not None:
            self._free.put(flat)


class _SpillWriter:
    """Appends blocks to the temporary file from a background thread (a throttled disk
    then delays the parsing only when it falls ``depth`` blocks behind), reports each
    block once it is written (``written(rows)``) and hands its buffer back to the
    recycler; :meth:`read_into` reads them back.

    Column-major bytes: a block reads back as a column-major ``m x p`` array; the
    transpose of a column-major block is C-contiguous, so it is written without a copy.

    Privacy: the file holds parsed private records, so it never has a name while it holds
    any. It is created anonymous where the system allows (``O_TMPFILE`` in the directory
    of ``path``) or created at ``path`` and unlinked before anything is written; it is
    readable by its owner only (mode 0600 whatever the umask), reached through this
    object's descriptor only, and its directory (made for it) is removed at once. When
    the process ends -- :meth:`release`, an exception, or ``kill -9`` -- the system frees
    the file: no copy of the records is left behind. (Where an open file cannot be
    unlinked, on Windows, it keeps its name until :meth:`release`.)
    """

    def __init__(self, path: str, recycler: _Recycler, written: Callable[[int], None], *,
                 depth: int = 2) -> None:
        self._fd = _anonymous_file(path)
        self._named = path if os.path.exists(path) else None
        self._recycler = recycler
        self._written = written
        self._queue: queue.Queue[np.ndarray | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._finished = False
        self._thread = threading.Thread(target=self._drain, name="dpggm-spill", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            block = self._queue.get()
            if block is None:
                return
            if self._error is None:
                try:
                    self._write(memoryview(np.asfortranarray(block).T).cast("B"))
                    self._written(block.shape[0])
                except BaseException as exc:  # raised in the parsing thread
                    self._error = exc
            self._recycler.give_back(block)
            del block

    def _write(self, data: memoryview) -> None:
        done = 0
        while done < len(data):
            done += os.write(self._fd, data[done:])

    def put(self, block: np.ndarray) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(block)

    def close(self, *, raising: bool = True) -> None:
        """No more blocks: wait until every block is written (the file stays readable
        until :meth:`release`)."""
        if not self._finished:
            self._finished = True
            self._queue.put(None)
            self._thread.join()
        if raising and self._error is not None:
            raise self._error

    def read_into(self, view: memoryview, offset: int) -> None:
        """Fill ``view`` (bytes) from ``offset`` of the file (positional reads: any number
        of threads at once)."""
        done = 0
        while done < len(view):
            if hasattr(os, "preadv"):
                count = os.preadv(self._fd, [view[done:]], offset + done)
            else:  # pragma: no cover - systems without preadv
                chunk = os.pread(self._fd, len(view) - done, offset + done)
                view[done:done + len(chunk)] = chunk
                count = len(chunk)
            if not count:
                raise OSError("the temporary file of the parsed records was truncated")
            done += count

    def release(self) -> None:
        """Close the file: the system frees it (and its name, where it kept one)."""
        self.close(raising=False)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._named is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._named)


def _anonymous_file(path: str) -> int:
    """A read-write descriptor of a new owner-only file without a name in the directory of
    ``path`` (see :class:`_SpillWriter`); the directory is removed if it is left empty."""
    directory = os.path.dirname(path) or "."
    flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
    fd = -1
    if hasattr(os, "O_TMPFILE"):
        try:
            fd = os.open(directory, flags | os.O_TMPFILE, 0o600)
        except OSError:  # a file system without anonymous files
            fd = -1
    if fd < 0:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o600)
        with contextlib.suppress(OSError):  # Windows keeps it until release()
            os.unlink(path)
    try:
        os.fchmod(fd, 0o600)
    except (OSError, AttributeError):  # pragma: no cover - no fchmod on Windows
        pass
    if hasattr(os, "posix_fadvise"):  # the passes read it from start to end
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    with contextlib.suppress(OSError):  # not empty where the name could not be removed
        os.rmdir(directory)
    return fd


class _Closed(RuntimeError):
    pass


class FileRecords(Records):
    """A CSV or Parquet file, parsed once, in a background thread, into float64 blocks:
    the first ones kept in memory (up to :data:`MEMORY_LIMIT` bytes), the rest appended to
    an owner-only temporary file deleted by :meth:`close`.

    Every pass (:meth:`run`) reads the blocks by index, on
    :data:`~dpggm.data.passes.PASS_WORKERS` threads (an ``in_order`` task: in order, in
    the caller's thread), as soon as they are parsed: the first pass counts block ``k`` while the parser parses
    block ``k + 1`` (pyarrow and the numba kernels release the GIL), and :meth:`start`
    lets the parsing begin before anything else (the command line starts it before it
    imports the estimator). A file larger than the memory limit goes to the temporary
    file from its first block, so memory stays O(p^2 + a few blocks) whatever the number
    of records; the blocks are written by a background thread without copies and read
    back by each thread with its own handle into its own buffer.

    ``n_samples`` and ``columns`` are complete after the first pass. ``scratch`` is the
    directory of the temporary file (default: ``source.scratch`` if the source is a
    :class:`~dpggm.data.tables.TableFile` that names one, else the system's temporary
    directory, ``TMPDIR``): it needs room for ``8 n p`` bytes.

    Privacy
    -------
    The temporary file holds the parsed private records: it is created in a fresh
    directory of mode 0700 (:func:`tempfile.mkdtemp`) and removed when the records are
    closed, also on errors.
    """

    def __init__(self, source: Any, *, memory_limit: int | None = None,
                 scratch: str | os.PathLike | None = None, missing: str = "refuse") -> None:
        self.source = source
        self.missing = missing
        self.memory_limit = int(MEMORY_LIMIT if memory_limit is None else memory_limit)
        if scratch is None:
            scratch = getattr(source, "scratch", None)
        self.scratch = scratch
        super().__init__()
        self._kept: list[np.ndarray] = []
        self._kept_bytes = 0
        self._spill_dir: str | None = None
        self._spill: _SpillWriter | None = None
        self._spill_offsets: list[int] = [0]  # rows before each spilled block
        self._condition = threading.Condition()
        self._available = 0  # blocks that can be read, in order
        self._parsed = False
        self._failure: BaseException | None = None
        self._stop = threading.Event()
        self._parser: threading.Thread | None = None
        # The curator's warnings about the columns, gathered by the parser (a thread) and
        # issued by the first pass that reads the whole file (in the caller's thread).
        self._notes: list[str] = []
        self._noted = False

    # -- parsing (background thread) -------------------------------------------------

    def start(self) -> FileRecords:
        """Start parsing the file in a background thread (once)."""
        if self._parser is None:
            # The parser runs in the caller's context, so that a progress reporter the
            # caller installed (dpggm.progress) hears about the file being read.
            context = contextvars.copy_context()
            self._parser = threading.Thread(target=context.run, args=(self._parse,),
                                            name="dpggm-parse", daemon=True)
            self._parser.start()
        return self

    def _spill_path(self) -> str:
        assert self._spill_dir is not None
        return os.path.join(self._spill_dir, "records.f64")

    def _file_bytes(self) -> int:
        path = getattr(self.source, "path", self.source)
        try:
            return os.path.getsize(path)
        except (OSError, TypeError):
            return 0

    def _arrived(self, rows: int) -> None:
        """One more block can be read (in order)."""
        with self._condition:
            self._available += 1
            self.n_samples += rows
            self._condition.notify_all()

    def _parse(self) -> None:
        from dpggm.data.tables import iter_chunks

        recycler = _Recycler()
        writer: _SpillWriter | None = None
        try:
            spill_all = self._file_bytes() > self.memory_limit
            chunks = iter_chunks(self.source, matrix=recycler.matrix, missing=self.missing,
                                 notes=self._notes)
            with contextlib.closing(chunks):
                for block, columns, _ in chunks:
                    if self._stop.is_set():
                        break
                    if self.n_features == 0:
                        with self._condition:
                            self.columns = list(columns)
                            self.n_features = block.shape[1]
                            self._condition.notify_all()
                    if writer is None and not spill_all and (
                            self._kept_bytes + block.nbytes <= self.memory_limit):
                        self._kept.append(block)
                        self._kept_bytes += block.nbytes
                        self._arrived(block.shape[0])
                    else:
                        if writer is None:
                            self._spill_dir = tempfile.mkdtemp(prefix="dpggm-records-",
                                                               dir=self.scratch)
                            writer = self._spill = _SpillWriter(self._spill_path(), recycler,
                                                                self._arrived)
                        self._spill_offsets.append(self._spill_offsets[-1] + block.shape[0])
                        writer.put(block)
                    del block
            if writer is not None:
                writer.close()
            if self._stop.is_set():
                raise _Closed("the records were closed")
            with self._condition:
                self._parsed = True
                self._condition.notify_all()
        except BaseException as exc:  # raised in the threads that read the blocks
            if writer is not None:
                writer.release()
            # The parsed records are incomplete and of no further use: deleted at once.
            if self._spill_dir is not None:
                shutil.rmtree(self._spill_dir, ignore_errors=True)
            with self._condition:
                self._failure = exc
                self._condition.notify_all()

    # -- reading -----------------------------------------------------------------------

    def _wait(self, ready: Callable[[], bool]) -> None:
        with self._condition:
            while not ready():
                if self._failure is not None:
                    raise self._failure
                self._condition.wait()
            if self._failure is not None:
                raise self._failure

    def _exists(self, index: int) -> bool:
        """Whether block ``index`` exists, waiting for the parser if need be."""
        with self._condition:
            while True:
                if self._failure is not None:
                    raise self._failure
                if index < self._available:
                    return True
                if self._parsed:
                    return False
                self._condition.wait()

    def run(self, task: PassTask) -> Any:
        """``task`` over every block (the first run follows the parsing)."""
        self.start()
        self._wait(lambda: self.n_features > 0 or self._parsed)
        p = self.n_features
        buffers: dict[int, np.ndarray] = {}

        def read(index: int, worker: int) -> np.ndarray:
            if index < len(self._kept):
                return self._kept[index]
            spilled = index - len(self._kept)
            first, last = self._spill_offsets[spilled], self._spill_offsets[spilled + 1]
            rows = last - first
            # Each worker reads into its own buffer (positional reads of the one file).
            buffer = buffers.get(worker)
            if buffer is None or buffer.size < rows * p:
                buffer = buffers[worker] = np.empty(rows * p + rows * p // 8)
            flat = buffer[:rows * p]
            assert self._spill is not None
            self._spill.read_into(memoryview(flat).cast("B"), first * 8 * p)
            return flat.reshape(p, rows).T

        def in_order() -> Any:
            index = 0
            while self._exists(index):
                yield read(index, 0)
                index += 1

        try:
            result = (run_in_order(task, p, in_order()) if task.in_order
                      else run_split(task, p, self._exists, read))
            if not self._noted:
                self._noted = True
                from dpggm.exceptions import CuratorWarning

                for note in self._notes:
                    warnings.warn(CuratorWarning(note), stacklevel=2)
            return result
        except BaseException:
            # A reader may have tripped over the parser's failure before seeing it.
            failure = self._failure
            if failure is not None and not isinstance(failure, _Closed):
                raise failure from None
            raise

    def close(self) -> None:
        """Stop the parser, delete the temporary file and release the blocks' memory."""
        self._stop.set()
        if self._parser is not None:
            self._parser.join()
        with self._condition:
            if self._failure is None and not self._parsed:
                self._failure = _Closed("the records were closed")
            self._condition.notify_all()
        had_blocks = bool(self._kept) or self._spill_dir is not None
        self._kept = []
        self._kept_bytes = 0
        if self._spill is not None:
            self._spill.release()
            self._spill = None
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None
        if had_blocks:
            release_free_memory()

