"""Output written whole or not at all, for the library and the command line alike.

One helper writes one file (:func:`write_atomic`: an owner-only temporary sibling, synced,
then one rename -- or, without ``overwrite``, a hard link that never clobbers a file that
appeared meanwhile); one class writes a set of files (:class:`StagedOutput`). Every file
the package writes goes through one of them.

A set of outputs (``result.json``, matrices, ``edges.csv``) is written into a staging
directory beside the target, ``.dpggm-staging-<name>-<id>``, and the staging directory is
renamed onto the target once, when everything is written and synced. A reader therefore
sees the whole set or nothing. A set of sibling files (``dpggm publish``: the noisy CSV
and its metadata) is staged the same way and then placed file by file, the metadata
first; an interrupted placement is finished by the next delivery (below).

Permissions. An uncharged release must be readable by its owner only, at every moment:
the staging directory is created with mode 0700 and every file in it with mode 0600
(``os.open`` with an explicit mode, then set again whatever the umask), so there is no
window in which another user can read them, and a process killed before the charge leaves
nothing readable by others. Only when the output is delivered -- after the charge when a
ledger is involved, at the commit otherwise -- do the files and the directory get the
ordinary permissions (``0666`` and ``0777`` less the user's umask).

Releases charged to a ledger. :func:`deliver` is the one delivery: the ``save`` of every
estimator, every command that writes its output and the publication of noisy records call
it (it drives a :class:`StagedOutput`). The staging directory holds ``.pending.json`` (the
pending record: ledger, dataset, target, an output id, the owner's process) from its
creation until after the rename. The steps, in order:

1. check the target; create the staging directory with its pending record (made under
   a name that carries the creating process, ``.dpggm-staging-<id>.<pid>-<host>.new``,
   and renamed to its staging name once the record is written);
2. fit in memory and write every file into staging (a failure after the fit's first draw
   is charged: what ran is spent, although nothing is delivered -- :func:`failed_release`);
3. charge the ledger (the spend's details carry the output id);
4. write the receipt (``ledger.json``: the spend's sequence number and the output id) into
   staging -- from here on the staging directory proves its own payment;
5. give the files the ordinary permissions; with ``overwrite``, rename the old output
   aside to ``<staging>-old``;
6. rename the staging directory onto the target (a set of files: place each one);
7. remove the pending record (now inside the target), then the old output.

If the process dies, the next delivery into the same parent directory
(:func:`recover_pending`, which every delivery runs first) puts things right:

* a staging directory whose owner is still running is left alone;
* one still under its creating name, one whose removal was cut short (a staging
  directory is renamed to ``.dpggm-staging-<id>.<pid>-<host>.del`` before it is
  removed), a temporary file or a probe is removed once the process it names is gone
  (one named for another host, or for no process, after :data:`RECORDLESS_GRACE`
  seconds);
* one that holds its receipt -- or whose pending record names a spend the ledger holds
  (killed between steps 3 and 4) -- is finished: the receipt written, the directory
  renamed onto its target (with ``overwrite``, replacing what is there; without it, onto
  ``<target>-recovered-<id>`` if the target now holds other files), saying so. Nothing is
  charged twice and a paid-for output is never deleted;
* one without a receipt or a spend was never charged: it is removed;
* ``<staging>-old`` (killed during step 5 or 6 of an ``--overwrite``) is renamed back onto
  its target when the target is missing, and removed otherwise;
* a pending record left inside a delivered target (killed in step 7) is removed.

Only a process of this host can be asked whether it runs: a staging directory whose
pending record names another host is treated as its run's leftovers. Deliveries from
several hosts into one shared directory at the same time are not supported.

So after any crash and the next delivery, every output is complete or absent, no staging
debris remains, every spend in the ledger has its output and every output its spend (an
output replaced with ``overwrite`` is replaced only by a complete, charged one).

Fault injection. :func:`delivery_step` is called at every step boundary; it does nothing.
The tests replace it to kill the process at each boundary in turn.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "FORMULA_TRIGGERS", "RECEIPT_NAME", "STAGING_PREFIX", "StagedOutput", "check_target",
    "check_ledger_pair", "check_writable_dir", "csv_name", "csv_names_frame", "current_umask", "deliver",
    "delivery_step", "failed_release", "name_from_csv", "owned_scratch_dir", "place",
    "recover_pending", "write_atomic",
]

STAGING_PREFIX = ".dpggm-staging-"
#: The receipt a charged output carries: the ledger, dataset, spend and output id.
RECEIPT_NAME = "ledger.json"
_PENDING = ".pending.json"
# A set of files whose placement has begun (so that recovery finishes it, charged or not).
_PLACING = ".placing"
_OLD_SUFFIX = "-old"
_STAGING_NAME = re.compile(r"^" + re.escape(STAGING_PREFIX) + r"(?P<target>.+)-(?P<id>[0-9a-f]{32})$")
#: A file or directory being created or removed carries its process in its name, after a
#: random id (a fixed length, whatever the target's name): ``.<pid>-<host>`` before ``.tmp``
#: (a temporary file, a probe), ``.new`` (a staging directory before its pending record is
#: in place) or ``.del`` (a staging directory being removed, renamed first so that a
#: removal cut short never leaves a staging directory without its pending record),
#: ``<host>`` being the first 8 hex digits of the SHA-256 of the host's name (host names
#: may hold ``-`` and ``.``).
_OWNED_NAME = re.compile(r"\.(?P<pid>[0-9]+)-(?P<host>[0-9a-f]{8})\.(?:tmp|new|del)$")
#: Seconds an entry whose owner cannot be asked (created on another host sharing the
#: directory, or by a dpggm that did not name its creator) is presumed to belong to a
#: process that is still creating it.
RECORDLESS_GRACE = 60.0
# The names of the entries this process is creating or holding (temporary files, staging
# directories under their creating and staging names): another thread's recovery asks here
# about an entry that names this process. Names hold a random id, so they are unique.
_LIVE_NAMES: set[str] = set()


# ------------------------------------------------------------------ names in CSV files

#: The first characters that make a spreadsheet (Excel, LibreOffice Calc, Google Sheets)
#: read a CSV cell as a formula: the OWASP "CSV injection" list (= + - @, tab, carriage
#: return) and the null and line-feed characters of OWASP ASVS 5.0 (requirement 1.2.10).
FORMULA_TRIGGERS = frozenset("=+-@\t\r\n\0")


def csv_name(name: Any) -> str:
    """A name (a column, a variable, a term) as it goes into a CSV file the library writes:
    unchanged, unless a spreadsheet would read it as a formula -- its first character, or
    its first after leading spaces, is one of :data:`FORMULA_TRIGGERS` -- and then with a
    ``'`` in front, which spreadsheets take as "this cell is text" (OWASP's advice for
    CSV injection).

    Every name gets the same treatment whatever it looks like: ``"-2+3"`` (a legitimate
    name that looks like arithmetic) and ``"-1"`` are written ``'-2+3`` and ``'-1`` in
    every CSV file, so that a name never turns into a number or a formula in one file and
    stays a name in another. Numbers in value cells are not names and are never changed.
    :func:`name_from_csv` reads a name back.
    """
    text = str(name)
    return "'" + text if _read_as_formula(text) else text


def _read_as_formula(text: str) -> bool:
    """Whether ``text`` needs the quote: a formula's first character (after spaces), or a
    quote already in front of such a name (quoted again, so that reading back is exact)."""
    stripped = text.lstrip(" ")
    if not stripped:
        return False
    if stripped[0] in FORMULA_TRIGGERS:
        return True
    return text.startswith("'") and _read_as_formula(text[1:])


def name_from_csv(cell: Any) -> str:
    """The name :func:`csv_name` wrote into ``cell`` (the ``'`` it added taken off)."""
    text = str(cell)
    if text.startswith("'") and csv_name(text[1:]) == text:
        return text[1:]
    return text


def csv_names_frame(frame: Any, name_columns: Sequence[str] = ()) -> Any:
    """A copy of a table about to be written as CSV with its header and the cells of
    ``name_columns`` (columns of names, such as ``source``/``target``) passed through
    :func:`csv_name`; every other cell is left as it is."""
    out = frame.copy()
    out.columns = [csv_name(c) for c in frame.columns]
    for column in name_columns:
        if column in frame.columns:
            out[csv_name(column)] = [csv_name(v) for v in frame[column]]
    return out


# ------------------------------------------------------------------ delivery


def delivery_step(step: str) -> None:
    """Called at every step boundary of a delivery (see the module documentation); does
    nothing. The fault-injection tests replace it to kill the process there."""


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_OWNER_FILE = 0o600
_OWNER_DIR = 0o700


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows
    (``/proc/self/status``); otherwise set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _write_file(path: Path, write: Callable[[Any], None], *, binary: bool) -> None:
    """Write ``path`` readable and writable by the owner only (from its creation)."""
    flags = (os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    fd = os.open(path, flags, _OWNER_FILE)
    try:
        # The umask can only have removed bits; this also restores the owner's.
        os.fchmod(fd, _OWNER_FILE)
        fh = os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"}))
    except BaseException:
        os.close(fd)
        raise
    with fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())


def _ordinary_permissions(directory: Path) -> None:
    """Give a delivered output the permissions a plain ``open``/``mkdir`` would have
    given it (``0666`` / ``0777`` less the umask): called only once it is charged for."""
    mask = current_umask()
    for entry in directory.iterdir():
        # The pending record stays owner-only: it is removed just after the rename.
        if entry.is_file() and not entry.is_symlink() and entry.name != _PENDING:
            os.chmod(entry, 0o666 & ~mask)
    os.chmod(directory, 0o777 & ~mask)


def place(source: Path, target: Path, *, overwrite: bool = True) -> None:
    """Move a complete file onto ``target`` in one step: a rename (``overwrite``), or a hard
    link that fails if ``target`` exists -- so a file that appeared meanwhile is never
    clobbered -- and the removal of ``source`` (a file system without hard links falls
    back to a rename once ``target`` is known to be absent).

    Raises
    ------
    FileExistsError
        ``target`` exists and ``overwrite`` is false.
    """
    source, target = Path(source), Path(target)
    if overwrite:
        os.replace(source, target)
        return
    try:
        os.link(source, target)
    except FileExistsError:
        raise FileExistsError(f"{str(target)!r} exists; pass overwrite=True to replace it") from None
    except OSError:
        if target.exists():
            raise FileExistsError(
                f"{str(target)!r} exists; pass overwrite=True to replace it") from None
        os.replace(source, target)
        return
    source.unlink(missing_ok=True)


def write_atomic(path: Path, write: Callable[[Any], None], *, binary: bool = False,
                 overwrite: bool = True) -> Path:
    """Write one file through an owner-only temporary sibling and :func:`place`; the file
    gets the ordinary permissions (``0666`` less the umask) just before it appears.

    ``write`` receives an open file (text, UTF-8, or ``binary``). Without ``overwrite`` an
    existing file is refused, before and after the write. Returns ``path``.
    """
    path = Path(path)
    if not overwrite and path.exists():
        raise FileExistsError(f"{str(path)!r} exists; pass overwrite=True to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f"{STAGING_PREFIX}{uuid.uuid4().hex}.{_owner_tag()}.tmp"
    _LIVE_NAMES.add(tmp.name)
    try:
        _write_file(tmp, write, binary=binary)
        os.chmod(tmp, 0o666 & ~current_umask())
        place(tmp, path, overwrite=overwrite)
    finally:
        tmp.unlink(missing_ok=True)
        _LIVE_NAMES.discard(tmp.name)
    return path


def check_writable_dir(directory: Path, *, option: str = "--out") -> None:
    """Refuse a directory where files cannot be created, by creating (and removing) one."""
    probe = Path(directory) / f"{STAGING_PREFIX}probe-{uuid.uuid4().hex}.{_owner_tag()}.tmp"
    _LIVE_NAMES.add(probe.name)
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _OWNER_FILE))
    except OSError as exc:
        raise OSError(
            f"cannot write into {directory} ({exc.strerror or exc}); choose another {option}"
        ) from None
    finally:
        probe.unlink(missing_ok=True)
        _LIVE_NAMES.discard(probe.name)


def _staging_name(target: Path, output_id: str) -> str:
    return f"{STAGING_PREFIX}{target.name}-{output_id}"


def _owner_tag() -> str:
    """This process, as it goes into the name of an entry it is creating (``_OWNED_NAME``)."""
    host = hashlib.sha256(socket.gethostname().encode("utf-8", "surrogateescape"))
    return f"{os.getpid()}-{host.hexdigest()[:8]}"


def _remove_tree(directory: Path) -> None:
    """Remove a staging directory: renamed at once to a name that carries this process
    (``.del``), then removed. A removal cut short leaves a directory the next recovery
    removes, never a staging directory that has lost its pending record and must be left
    alone in case it is being created."""
    doomed = directory.with_name(f"{STAGING_PREFIX}{uuid.uuid4().hex}.{_owner_tag()}.del")
    _LIVE_NAMES.add(doomed.name)
    try:
        try:
            os.rename(directory, doomed)
        except FileNotFoundError:
            return  # removed meanwhile (by another process's recovery, say)
        except OSError:
            # Cannot be renamed (a busy mount point, say): removed in place; a kill during
            # this removal leaves what only ages out.
            doomed = directory
        shutil.rmtree(doomed, ignore_errors=True)
    finally:
        _LIVE_NAMES.discard(doomed.name)
        _LIVE_NAMES.discard(directory.name)


#: The largest process id a kernel hands out (Linux's ``pid_max`` is at most ``2**22``);
#: a name with a larger one (or none) was not made by a dpggm process.
_MAX_PID = 2 ** 31 - 1


def _alive(pid: int, name: str) -> bool:
    """Whether process ``pid`` of this host, which ``name`` says owns an entry, runs.
    This process answers from the entries it holds: one of its own pid that it does not
    hold is a former process's (a restarted container reuses its pids)."""
    if pid == os.getpid():
        return name in _LIVE_NAMES
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # another user's process
    except (OSError, OverflowError):
        return False
    return True


def _abandoned(entry: Path, *, grace: float) -> bool:
    """Whether an entry being created or removed (a temporary file, a probe, a staging
    directory before its pending record or during its removal) was left by a process that
    is gone.

    The process named in the entry is asked when it runs on this host; an entry made on
    another host, or without a process in its name, is presumed abandoned after ``grace``
    seconds."""
    match = _OWNED_NAME.search(entry.name)
    if match is not None and match.group("host") == _owner_tag().split("-")[1]:
        pid = int(match.group("pid"))
        if 0 < pid <= _MAX_PID:
            return not _alive(pid, entry.name)
    return _age(entry) >= grace


@contextlib.contextmanager
def owned_scratch_dir(directory: Path, *, prefix: str) -> Iterator[Path]:
    """A hidden owner-only scratch directory in ``directory`` for files about to be moved
    in (``<prefix><random>.<pid>-<host>.tmp``), removed on leaving the block.

    Scratch directories of ``prefix`` left by processes that are gone (killed, say) are
    removed first, by the rule :func:`recover_pending` applies to temporary files."""
    directory = Path(directory)
    for entry in directory.iterdir():
        if (entry.name.startswith(prefix) and _OWNED_NAME.search(entry.name)
                and entry.is_dir() and not entry.is_symlink()
                and _abandoned(entry, grace=RECORDLESS_GRACE)):
            shutil.rmtree(entry, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(dir=directory, prefix=prefix,
                                    suffix=f".{_owner_tag()}.tmp"))
    _LIVE_NAMES.add(scratch.name)
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        _LIVE_NAMES.discard(scratch.name)


def check_target(target: Path, *, overwrite: bool) -> None:
    """Refuse, before any work, an output location that cannot be used."""
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"--out {target} is a file; give a directory path")
    if target.is_dir() and not overwrite and any(target.iterdir()):
        raise FileExistsError(
            f"--out {target} already exists and is not empty; choose another --out or pass "
            "--overwrite"
        )
    parent = target.parent
    if parent.exists() and not parent.is_dir():
        raise NotADirectoryError(f"--out {target}: {parent} is a file, not a directory")


def _check_file_targets(paths: Sequence[Path], *, overwrite: bool) -> None:
    for path in paths:
        if path.is_dir():
            raise IsADirectoryError(f"--out {path} is a directory; give the name of a file")
        if path.exists() and not overwrite:
            raise FileExistsError(f"{path} exists; choose another --out or pass --overwrite")
    parent = paths[0].parent
    if parent.exists() and not parent.is_dir():
        raise NotADirectoryError(f"--out {paths[0]}: {parent} is a file, not a directory")


class StagedOutput:
    """A set of output files for ``target``, made visible all at once by :meth:`commit`
    (or :meth:`deliver`, charging a ledger first).

    The staging directory is created at construction, so an unusable location (a file,
    no permission, a read-only or virtual file system) is found before any work is done.

    Parameters
    ----------
    target : path
        The output directory; with ``files``, the first of the files (it names the
        staging directory).
    overwrite : bool
        Replace what is at the target(s).
    pending : dict, optional
        ``ledger`` (resolved path) and ``dataset`` of the charge to come, kept in the
        pending record so that an interrupted delivery can be finished.
    files : sequence of paths, optional
        Deliver these sibling files (in this order) rather than a directory: each is
        staged under its own name and placed onto its path.
    receipt : str, default "ledger.json"
        The name of the receipt in a delivered directory (``_ledger.json`` for a Parquet
        data set, whose readers skip names starting with ``_``).
    receipt_into : str, optional
        A staged JSON file that also carries the receipt (under ``"ledger"``): the
        metadata of a set of files, say.
    """

    def __init__(self, target: Path, *, overwrite: bool = False,
                 pending: dict[str, Any] | None = None, files: Sequence[Path] | None = None,
                 receipt: str = RECEIPT_NAME, receipt_into: str | None = None) -> None:
        self.target = Path(target)
        self.overwrite = overwrite
        self.files = None if files is None else [Path(f) for f in files]
        if self.files is not None:
            if not self.files or len({f.parent.resolve() for f in self.files}) != 1:
                raise ValueError("files must be one or more paths in one directory")
            if receipt_into is not None and receipt_into not in {f.name for f in self.files}:
                raise ValueError(f"receipt_into={receipt_into!r} is not one of the files")
            _check_file_targets(self.files, overwrite=overwrite)
        else:
            check_target(self.target, overwrite=overwrite)
        self.receipt = receipt
        self.receipt_into = receipt_into
        parent = self.target.parent
        self.output_id = uuid.uuid4().hex
        self.staging = parent / _staging_name(self.target, self.output_id)
        # The directory is made under a name that carries this process, with its pending
        # record, and only then renamed to its staging name: a staging directory always
        # holds its record, and a process killed before the rename leaves a directory
        # whose creator the next delivery can ask about (rather than wait for it to age).
        creating = parent / f"{STAGING_PREFIX}{self.output_id}.{_owner_tag()}.new"
        _LIVE_NAMES.update((creating.name, self.staging.name))
        try:
            parent.mkdir(parents=True, exist_ok=True)
            # Owner-only from its creation (the umask can only remove bits), and set again
            # in case the umask removed the owner's own.
            os.mkdir(creating, _OWNER_DIR)
            os.chmod(creating, _OWNER_DIR)
        except BaseException as exc:
            _LIVE_NAMES.difference_update((creating.name, self.staging.name))
            if not isinstance(exc, OSError):
                raise
            raise OSError(
                f"cannot write into {parent} ({exc.strerror or exc}); choose another --out"
            ) from None
        self.names: list[str] = []
        self.pending = {
            "output_id": self.output_id, "target": self.target.name, "pid": os.getpid(),
            "host": socket.gethostname(), "overwrite": bool(overwrite),
            "files": None if self.files is None else [f.name for f in self.files],
            "receipt": receipt, "receipt_into": receipt_into, **(pending or {})}
        try:
            _write_file(creating / _PENDING, lambda fh: json.dump(self.pending, fh),
                        binary=False)
            _fsync_dir(creating)
            os.rename(creating, self.staging)
        except BaseException:
            shutil.rmtree(creating, ignore_errors=True)
            _LIVE_NAMES.difference_update((creating.name, self.staging.name))
            raise
        finally:
            _LIVE_NAMES.discard(creating.name)
        delivery_step("created")

    def _write(self, name: str, write: Callable[[Any], None], *, binary: bool = False) -> Path:
        path = self.staging / name
        _write_file(path, write, binary=binary)
        return path

    def _add(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)
        delivery_step("wrote")

    def json(self, name: str, data: Any) -> None:
        self._write(name, lambda fh: json.dump(data, fh, indent=2))
        self._add(name)

    def npy(self, name: str, array: Any) -> None:
        import numpy as np

        self._write(name, lambda fh: np.save(fh, np.asarray(array)), binary=True)
        self._add(name)

    def text(self, name: str, text: str) -> None:
        self._write(name, lambda fh: fh.write(text))
        self._add(name)

    def bytes(self, name: str, content: bytes) -> None:
        self._write(name, lambda fh: fh.write(content), binary=True)
        self._add(name)

    @property
    def written(self) -> list[Path]:
        if self.files is not None:
            return list(self.files)
        return [self.target / name for name in self.names]

    def commit(self) -> None:
        """Make the staged output visible (see the module documentation).

        Call it only once the release is charged (when a ledger is involved): the files
        become readable by others here."""
        try:
            _fsync_dir(self.staging)
            _finish(self.staging, self.pending, report=None)
        finally:
            # Delivered, or left for the next delivery (this process's too) to finish.
            _LIVE_NAMES.discard(self.staging.name)

    def discard(self) -> None:
        _remove_tree(self.staging)

    def _perhaps_paid(self, ledger: Any, dataset: str | None) -> bool:
        if ledger is None:
            return False
        try:
            return _paid_spend({"ledger": str(Path(ledger.path).resolve()),
                                "dataset": dataset, "output_id": self.output_id}) is not None
        except _LedgerUnreadable:
            return True

    def deliver(self, *, ledger: Any = None, dataset: str | None = None, guarantee: Any = None,
                mechanism: str = "", details: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Charge ``guarantee`` to ``dataset`` in ``ledger`` (when given), write the
        receipt, and commit: the staged files appear whole, charged for.

        A refusal of the charge (another process spent meanwhile, an unconvertible notion,
        an invalid release) discards the staged output unseen. If the delivery fails after
        the charge, the complete output stays in the staging directory with its receipt
        and the next delivery into the same parent finishes it (:func:`recover_pending`).

        Returns the ledger record (``ledger``, ``dataset``, ``spend``, ``output_id``), or
        ``None`` without a ledger.
        """
        record = spend = None
        try:
            if ledger is not None:
                spend = ledger.spend(dataset, guarantee, mechanism=mechanism,
                                     details={**(details or {}), "output_id": self.output_id})
        except Exception:
            # Refused: the ledger checks before it spends, so nothing was charged, and the
            # staged output goes unseen.
            self.discard()
            raise
        except BaseException:
            # An interrupt may arrive after the ledger committed the spend: a paid-for
            # output (or one whose payment cannot be told) stays in staging, with its
            # pending record, for the next delivery to finish or remove by the ledger.
            if self._perhaps_paid(ledger, dataset):
                _LIVE_NAMES.discard(self.staging.name)
            else:
                self.discard()
            raise
        try:
            if spend is not None:
                delivery_step("charged")
                record = _ledger_record(str(Path(ledger.path).resolve()), str(dataset),
                                        spend.sequence, self.output_id)
                _write_receipt(self.staging, record, self.pending)
            self.commit()
        except BaseException as exc:
            # The staging directory is left to the next delivery, which finishes it when
            # it was charged (and removes it otherwise).
            _LIVE_NAMES.discard(self.staging.name)
            if not isinstance(exc, OSError):
                raise
            spent = "" if spend is None else (
                f"; {getattr(guarantee, 'budget', guarantee)} was charged to {dataset!r} "
                f"(spend #{spend.sequence}) "
                f"and the complete output is kept in {self.staging}: the next delivery into "
                "the same directory finishes it")
            raise OSError(f"could not move the output into {self.target}: {exc}{spent}") from None
        return record


def check_ledger_pair(ledger: Any, dataset: str | None) -> None:
    """A charge needs both a ledger and a dataset of it; neither means no charge."""
    if (ledger is None) != (dataset is None):
        raise ValueError(
            "ledger and dataset go together: give both (to charge the release) or "
            f"neither; got ledger={ledger!r}, dataset={dataset!r}")


def deliver(out: Path, write: Callable[[StagedOutput], None], *, overwrite: bool = False,
            ledger: Any = None, dataset: str | None = None,
            guarantee: Callable[[], Any] | None = None, drawn: Callable[[], Any] | None = None,
            mechanism: str = "a release", details: dict[str, Any] | None = None,
            report: Callable[[str], None] | None = None, files: Sequence[Path] | None = None,
            receipt: str = RECEIPT_NAME, receipt_into: str | None = None) -> dict[str, Any]:
    """Deliver the files ``write(staged)`` writes into the directory ``out``: all of them or
    none, owner-only until delivered, and -- with ``ledger`` (a
    :class:`~dpggm.privacy.ledger.Ledger`) and ``dataset`` -- charged ``guarantee()``
    before they appear. The one delivery of the package: the ``save`` of every estimator,
    every command that writes its output and the publication of noisy records go through
    it (the steps, and the recovery after a crash, are in the module documentation).

    Parameters
    ----------
    out : path
        The output directory (refused if it holds files, unless ``overwrite``), checked
        and staged before ``write`` runs: a fit inside ``write`` reads nothing when
        ``out`` cannot be used.
    write : callable
        ``write(staged)`` writes every file into the :class:`StagedOutput` (and may compute
        them: fit an estimator, draw its pictures).
    guarantee : callable, optional
        ``guarantee()``: what the delivery is charged, asked once ``write`` has returned.
    drawn : callable, optional
        ``drawn()``, asked when ``write`` fails: the guarantee of the release ``write`` had
        drawn by then, or ``None`` (nothing drawn, or nothing to charge; a
        :class:`~dpggm.exceptions.ReleaseFailedError` carries its own). A failure after
        the draw is charged with a ledger and reported without its reason
        (:func:`failed_release`): what ran is spent although nothing is delivered.
    mechanism, details
        The spend's description in the ledger.
    report : callable, optional
        ``report(line)`` hears what the recovery of interrupted deliveries into the same
        parent directory did (:func:`recover_pending`, run first).
    files, receipt, receipt_into
        A set of sibling files instead of a directory (``out`` is then the first of them),
        and where the receipt goes, as for :class:`StagedOutput`.

    Returns
    -------
    dict
        ``written`` (the paths of the files delivered) and ``ledger`` (the ledger record
        -- ``ledger``, ``dataset``, ``spend``, ``output_id`` -- or ``None``).
    """
    out = Path(out)
    check_ledger_pair(ledger, dataset)
    recover_pending(out.parent if str(out.parent) else Path("."),
                    report=report if report is not None else (lambda line: None))
    pending = {} if ledger is None else {"ledger": str(Path(ledger.path).resolve()),
                                         "dataset": dataset}
    staged = StagedOutput(out, overwrite=overwrite, pending=pending, files=files,
                          receipt=receipt, receipt_into=receipt_into)
    try:
        write(staged)
    except BaseException as exc:
        staged.discard()
        failure = failed_release(exc, None if drawn is None else drawn(), ledger=ledger,
                                 dataset=dataset, mechanism=mechanism, details=details)
        if failure is exc:
            raise
        raise failure from None
    record = staged.deliver(ledger=ledger, dataset=dataset,
                            guarantee=None if guarantee is None else guarantee(),
                            mechanism=mechanism, details=details)
    return {"written": staged.written, "ledger": record}


def failed_release(exc: BaseException, guarantee: Any, *, ledger: Any = None,
                   dataset: str | None = None, mechanism: str = "a release",
                   details: dict[str, Any] | None = None) -> BaseException:
    """What to raise for ``exc``, raised while a release was being computed or delivered.

    ``guarantee`` is the release's (``privacy_`` of a completed fit), or ``None`` before
    any draw; a :class:`~dpggm.exceptions.ReleaseFailedError` (a fit that failed after its
    first draw) carries its own. Nothing drawn, or no valid release (a seeded run is an
    experiment and shows its reasons), or an interruption: ``exc`` itself. Otherwise the
    failure may depend on the noise: with a ``ledger`` the run is charged first (what ran
    is spent although nothing is delivered; the spend's details say so), and a
    :class:`~dpggm.exceptions.ReleaseFailedError` with a generic message is returned.
    """
    from dpggm.exceptions import ReleaseFailedError

    if isinstance(exc, ReleaseFailedError) and exc.guarantee is not None:
        guarantee = exc.guarantee
    if (guarantee is None or not isinstance(exc, Exception)
            or getattr(guarantee, "validity", None) != "valid"):
        return exc
    if ledger is not None:
        try:
            spend = ledger.spend(dataset, guarantee,
                                 mechanism=f"{mechanism} (failed after its noise was drawn; "
                                           "nothing delivered)",
                                 details={**(details or {}), "output_id": None, "failed": True})
            booked = (f"{guarantee.budget} was charged to {dataset!r} (ledger spend "
                      f"#{spend.sequence}): what ran is spent although nothing was delivered")
        except Exception as refusal:
            booked = (f"it could not be charged to {dataset!r} ({refusal}); count it as spent "
                      f"({guarantee.budget})")
    else:
        booked = f"no ledger was given: count the run as spent ({guarantee.budget})"
    return ReleaseFailedError(
        "the release failed after its noise was drawn; the reason is withheld because it "
        "may depend on the noisy release (a seeded run, an experiment, shows it); nothing "
        f"was written; {booked}", guarantee=guarantee)


def _read_pending(staging: Path) -> dict[str, Any] | None:
    """The pending record of a staging directory; ``None`` when it has none (or a damaged
    one). A record that cannot be read now (too many open files, say) raises ``OSError``:
    the directory may be a live run's and is left for the next recovery."""
    try:
        value = json.loads((staging / _PENDING).read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _write_receipt(staging: Path, record: dict[str, Any], pending: dict[str, Any]) -> None:
    """The receipt into staging (and, for a set of files, into the file that carries it):
    from here on the staging directory proves that it was paid for."""
    receipt = str(pending.get("receipt") or RECEIPT_NAME)
    carrier = pending.get("receipt_into")
    if carrier and (staging / carrier).exists():
        data = json.loads((staging / carrier).read_text(encoding="utf-8"))
        data["ledger"] = record
        tmp = staging / f"{carrier}.tmp"
        _write_file(tmp, lambda fh: json.dump(data, fh, indent=2), binary=False)
        os.replace(tmp, staging / carrier)
    _write_file(staging / receipt, lambda fh: json.dump(record, fh, indent=2), binary=False)
    _fsync_dir(staging)
    delivery_step("receipt written")


def _read_receipt(staging: Path, pending: dict[str, Any] | None) -> dict[str, Any] | None:
    names = [str(pending["receipt"])] if pending and pending.get("receipt") else [
        RECEIPT_NAME, "_" + RECEIPT_NAME]
    for name in names:
        try:
            value = json.loads((staging / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(value, dict) and value.get("output_id"):
            return value
    return None


def _finish(staging: Path, pending: dict[str, Any], *, report: Callable[[str], None] | None,
            target: Path | None = None) -> Path:
    """Deliver a complete (and, with a ledger, charged) staging directory: steps 5-7 of
    the module documentation. Returns where it went."""
    parent = staging.parent
    if target is None:
        target = parent / str(pending.get("target") or _parse_staging(staging.name)[0])
    if pending.get("files") is not None:
        return _place_files(staging, pending, report=report)
    _ordinary_permissions(staging)
    delivery_step("permissions")
    old = None
    if target.is_dir():
        if any(target.iterdir()) and not pending.get("overwrite"):
            raise FileExistsError(f"--out {target} appeared meanwhile; nothing was replaced")
        old = parent / (staging.name + _OLD_SUFFIX)
        os.rename(target, old)
        delivery_step("old moved aside")
    os.rename(staging, target)
    _fsync_dir(parent)
    delivery_step("renamed")
    (target / _PENDING).unlink(missing_ok=True)
    delivery_step("pending removed")
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
        delivery_step("old removed")
    return target


def _place_files(staging: Path, pending: dict[str, Any], *,
                 report: Callable[[str], None] | None) -> Path:
    """Place every staged file of a set onto its path (in order), then remove staging."""
    parent = staging.parent
    names = [str(n) for n in pending["files"]]
    if not (staging / _PLACING).exists():
        mask = current_umask()
        for name in names:
            os.chmod(staging / name, 0o666 & ~mask)
        _write_file(staging / _PLACING, lambda fh: None, binary=True)
        _fsync_dir(staging)
        delivery_step("permissions")
    overwrite = bool(pending.get("overwrite"))
    for name in names:
        source, destination = staging / name, parent / name
        if not source.exists():
            continue  # placed before the interruption
        if (not overwrite and destination.exists()
                and not os.path.samefile(source, destination)):
            if report is None:
                raise FileExistsError(f"{destination} appeared meanwhile; nothing was replaced")
            destination = parent / f"{name}-recovered-{pending.get('output_id', '')[:8]}"
            report(f"{parent / name} now holds another file: the interrupted run's file was "
                   f"put in {destination}")
        if destination.exists() and os.path.samefile(source, destination):
            source.unlink()
        else:
            place(source, destination, overwrite=True)
        delivery_step("placed")
    _fsync_dir(parent)
    _remove_tree(staging)
    delivery_step("pending removed")
    return parent / names[-1]


def _parse_staging(name: str) -> tuple[str, str]:
    """``(target name, output id)`` of a staging directory's name (``-old`` stripped)."""
    if name.endswith(_OLD_SUFFIX):
        name = name[: -len(_OLD_SUFFIX)]
    match = _STAGING_NAME.match(name)
    if match is None:
        return "", ""
    return match.group("target"), match.group("id")


def recover_pending(parent: Path, *, report: Callable[[str], None] = print,
                    grace: float = RECORDLESS_GRACE) -> list[Path]:
    """Put ``parent`` right after interrupted deliveries (see the module documentation):
    finish every output that was paid for, restore an old output whose replacement never
    arrived, remove everything else. Staging directories of running processes are left
    alone. Returns the outputs delivered.

    ``grace``: an entry that names no process of this host -- a temporary file or a
    staging directory being created or removed on another host, or one without a pending
    record made by an earlier dpggm -- younger than this many seconds may belong to a
    process that is still making it, and is left alone.
    """
    parent = Path(parent)
    delivered: list[Path] = []
    if not parent.is_dir():
        return delivered
    entries = sorted(parent.iterdir())
    for entry in entries:
        if not entry.name.startswith(STAGING_PREFIX):
            continue
        if not entry.is_dir() or _OWNED_NAME.search(entry.name):
            # A temporary file of write_atomic, a probe of check_writable_dir, a staging
            # directory that never got its pending record, or one whose removal was cut
            # short: none of them charged for.
            if _abandoned(entry, grace=grace):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
            continue
        if entry.name.endswith(_OLD_SUFFIX):
            continue
        try:
            where = _recover_staging(entry, report=report, grace=grace)
        except OSError as exc:
            # Another process recovering the same directory, say: never fatal here.
            report(f"could not finish {entry.name} yet ({exc}); it is left for the next run")
            continue
        if where is not None:
            delivered.append(where)
    for entry in entries:
        if entry.name.startswith(STAGING_PREFIX) and entry.name.endswith(_OLD_SUFFIX):
            try:
                _recover_old(entry, report=report)
            except OSError as exc:
                report(f"could not restore {entry.name} yet ({exc}); it is left for the next run")
    for entry in entries:
        if not entry.name.startswith(STAGING_PREFIX):
            _remove_stale_record(entry)
    return delivered


def _recover_staging(entry: Path, *, report: Callable[[str], None],
                     grace: float) -> Path | None:
    pending = _read_pending(entry)
    if pending is not None and _running(pending, entry.name):
        return None
    receipt = _read_receipt(entry, pending)
    if pending is None:
        if receipt is None:
            # Never charged, and its creator cannot be asked: a staging directory made by
            # a dpggm that wrote the pending record after naming it (killed in between),
            # or one whose record was lost. It may be being created right now.
            if _age(entry) >= grace:
                _remove_tree(entry)
            return None
        target_name, output_id = _parse_staging(entry.name)
        pending = {"target": target_name, "output_id": output_id, "overwrite": False,
                   "ledger": receipt.get("ledger"), "dataset": receipt.get("dataset")}
    if receipt is None and pending.get("ledger"):
        # Killed between the charge and the receipt? The ledger knows.
        try:
            spend = _paid_spend(pending)
        except _LedgerUnreadable as exc:
            # Whether it was paid for cannot be told: removing a charged release would
            # lose what the ledger counts as spent, so leave it as it is.
            report(f"{entry} is an interrupted run that may have been charged, but its "
                   f"ledger cannot be read ({exc}); left as it is: check the ledger "
                   "(dpggm budget verify) and run again")
            return None
        if spend is not None:
            receipt = _ledger_record(str(pending["ledger"]), str(pending["dataset"]),
                                     spend.sequence, str(pending["output_id"]))
            _write_receipt(entry, receipt, pending)
    if receipt is None:
        if pending.get("files") is not None and (entry / _PLACING).exists():
            # An uncharged set of files whose placement had begun: finish it.
            return _finish(entry, pending, report=report)
        _remove_tree(entry)
        report(f"removed the unfinished output of an interrupted run ({entry.name}); "
               "nothing had been charged for it")
        return None
    if receipt.get("output_id") != pending.get("output_id"):
        report(f"{entry} holds a receipt of another output ({receipt.get('output_id')}); "
               "left as it is: check it against the ledger")
        return None
    target = entry.parent / str(pending.get("target") or _parse_staging(entry.name)[0])
    if pending.get("files") is None and target.exists() and (
            not target.is_dir() or (any(target.iterdir()) and not pending.get("overwrite"))):
        alternative = entry.parent / f"{target.name}-recovered-{str(pending['output_id'])[:8]}"
        report(f"an interrupted run was charged (ledger spend #{receipt.get('spend')}) but "
               f"{target} now holds other files: its output goes to {alternative}")
        target = alternative
    where = _finish(entry, pending, report=report, target=target)
    report(f"finished the output of an interrupted run into {where} (it had been charged "
           f"as ledger spend #{receipt.get('spend')}; nothing new was charged)")
    return where


def _recover_old(entry: Path, *, report: Callable[[str], None]) -> None:
    """An output moved aside by an ``overwrite``: restored if its replacement never
    arrived, removed otherwise."""
    staging = entry.parent / entry.name[: -len(_OLD_SUFFIX)]
    pending = _read_pending(staging) if staging.is_dir() else None
    if pending is not None and _running(pending, staging.name):
        return
    target_name = (pending or {}).get("target") or _parse_staging(entry.name)[0]
    target = entry.parent / str(target_name)
    if target_name and not target.exists():
        os.rename(entry, target)
        _fsync_dir(entry.parent)
        report(f"restored {target}: an interrupted run had moved it aside to replace it "
               "and never delivered its own output")
        return
    shutil.rmtree(entry, ignore_errors=True)


def _remove_stale_record(entry: Path) -> None:
    """The pending record left inside a delivered directory by a run killed just after
    the rename."""
    record = entry / _PENDING
    try:
        if not entry.is_dir() or entry.is_symlink() or not record.is_file():
            return
    except OSError:
        return
    try:
        pending = _read_pending(entry)
    except OSError:
        return
    if pending is None or not pending.get("output_id") or _running(pending, entry.name):
        return
    record.unlink(missing_ok=True)


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def _running(pending: dict[str, Any], name: str) -> bool:
    """Whether the run that owns the staging directory ``name`` is still alive. Only a run
    on this host can be asked: one on another host counts as gone (see the module
    documentation)."""
    pid = pending.get("pid")
    if pending.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    return 0 < pid <= _MAX_PID and _alive(pid, name)


class _LedgerUnreadable(Exception):
    """The ledger of an interrupted run cannot be read: whether it was charged is unknown."""


def _paid_spend(pending: dict[str, Any]) -> Any:
    """The ledger's spend of the pending output, ``None`` when the ledger holds none;
    :class:`_LedgerUnreadable` when the ledger (or its dataset) cannot be read."""
    if not pending.get("ledger"):
        return None
    from dpggm.privacy.ledger import Ledger

    try:
        book = Ledger(pending["ledger"], create=False)
        history = book.history(pending["dataset"])
    except Exception as exc:  # any failure to read it leaves the payment unknown
        raise _LedgerUnreadable(f"{type(exc).__name__}: {exc}") from exc
    for record in reversed(history):
        if record.details.get("output_id") == pending.get("output_id"):
            return record
    return None


def _ledger_record(ledger: str, dataset: str, sequence: int, output_id: str) -> dict[str, Any]:
    """The receipt (``ledger.json``) of an output charged as spend ``sequence``: the ledger,
    dataset, spend and output id, with the ledger's identity and the spend's event and
    chain hash, so that the output can be checked against the ledger (``dpggm budget
    verify LEDGER --output DIR``)."""
    from dpggm.privacy.ledger import spend_receipt

    return spend_receipt(ledger, dataset, sequence, output_id)

