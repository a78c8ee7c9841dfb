"""Output written whole or not at all, for the library and the command line alike.

One helper writes one file (:func:`write_atomic`: an owner-only temporary sibling, synced,
then one rename -- or, without ``overwrite``, a hard link that never clobbers a file that
appeared meanwhile); one class writes a set of files (:class:`StagedOutput`). Every file
the package writes goes through one of them.

A set of outputs (``result.json``, matrices, ``edges.csv``) is written into a staging
directory beside the target, ``.dpggm-staging-<name>-<id>``, and the staging directory is
renamed onto the target once, when everything is written and synced. A reader therefore
sees the whole set or nothing.

Permissions. An uncharged release must be readable by its owner only, at every moment:
the staging directory is created with mode 0700 and every file in it with mode 0600
(``os.open`` with an explicit mode, then set again whatever the umask), so there is no
window in which another user can read them, and a process killed before the charge leaves
nothing readable by others. Only when the output is delivered -- after the charge when a
ledger is involved, at the commit otherwise -- do the files and the directory get the
ordinary permissions (``0666`` and ``0777`` less the user's umask).

Releases charged to a ledger (:meth:`StagedOutput.deliver`, the ``save`` of a fitted
estimator, the command line). The staging directory holds ``.pending.json`` naming the
ledger, dataset and an output id. The order is: check the target, fit in memory, write
every file into staging, charge the ledger (the spend's details carry the output id),
write ``ledger.json`` (the spend's sequence number) and rename into place. If the process
dies:

* before the charge, nothing was spent; the staging directory is debris and is removed
  by the next delivery into the same parent directory (:func:`recover_pending`);
* after the charge, the staging directory already holds the complete output. The next
  delivery into the same parent finds the spend carrying its output id in the ledger and
  finishes the delivery (writes ``ledger.json``, renames), saying so. Nothing is charged
  twice and nothing blocks the re-run.

So after any crash and the next delivery, every output directory is complete or absent,
no staging debris remains, and every spend in the ledger has its output.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "STAGING_PREFIX", "StagedOutput", "check_target", "check_writable_dir",
    "commit_directory", "current_umask", "place", "recover_pending", "write_atomic",
]

STAGING_PREFIX = ".dpggm-staging-"
_PENDING = ".pending.json"


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
        if entry.is_file() and not entry.is_symlink():
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
    tmp = path.parent / f"{STAGING_PREFIX}{path.name}-{uuid.uuid4().hex}.tmp"
    try:
        _write_file(tmp, write, binary=binary)
        os.chmod(tmp, 0o666 & ~current_umask())
        place(tmp, path, overwrite=overwrite)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def check_writable_dir(directory: Path, *, option: str = "--out") -> None:
    """Refuse a directory where files cannot be created, by creating (and removing) one."""
    probe = Path(directory) / f"{STAGING_PREFIX}probe-{uuid.uuid4().hex}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _OWNER_FILE))
    except OSError as exc:
        raise OSError(
            f"cannot write into {directory} ({exc.strerror or exc}); choose another {option}"
        ) from None
    probe.unlink(missing_ok=True)


def _staging_name(target: Path, output_id: str) -> str:
    return f"{STAGING_PREFIX}{target.name}-{output_id}"


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


class StagedOutput:
    """A set of output files for ``target``, made visible all at once by :meth:`commit`.

    The staging directory is created at construction, so an unusable location (a file,
    no permission, a read-only or virtual file system) is found before any work is done.
    """

    def __init__(self, target: Path, *, overwrite: bool = False,
                 pending: dict[str, Any] | None = None) -> None:
        self.target = Path(target)
        self.overwrite = overwrite
        check_target(self.target, overwrite=overwrite)
        parent = self.target.parent
        self.output_id = uuid.uuid4().hex
        self.staging = parent / _staging_name(self.target, self.output_id)
        try:
            parent.mkdir(parents=True, exist_ok=True)
            # Owner-only from its creation (the umask can only remove bits), and set again
            # in case the umask removed the owner's own.
            os.mkdir(self.staging, _OWNER_DIR)
            os.chmod(self.staging, _OWNER_DIR)
        except OSError as exc:
            raise OSError(
                f"cannot write into {parent} ({exc.strerror or exc}); choose another --out"
            ) from None
        self.names: list[str] = []
        try:
            self._write(_PENDING, lambda fh: json.dump(
                {"output_id": self.output_id, "target": self.target.name, "pid": os.getpid(),
                 "host": socket.gethostname(), **(pending or {})}, fh))
        except BaseException:
            self.discard()
            raise

    def _write(self, name: str, write: Callable[[Any], None], *, binary: bool = False) -> Path:
        path = self.staging / name
        _write_file(path, write, binary=binary)
        return path

    def json(self, name: str, data: Any) -> None:
        self._write(name, lambda fh: json.dump(data, fh, indent=2))
        self.names.append(name)

    def npy(self, name: str, array: Any) -> None:
        import numpy as np

        self._write(name, lambda fh: np.save(fh, np.asarray(array)), binary=True)
        self.names.append(name)

    def text(self, name: str, text: str) -> None:
        self._write(name, lambda fh: fh.write(text))
        self.names.append(name)

    def bytes(self, name: str, content: bytes) -> None:
        self._write(name, lambda fh: fh.write(content), binary=True)
        self.names.append(name)

    @property
    def written(self) -> list[Path]:
        return [self.target / name for name in self.names]

    def commit(self) -> None:
        """Rename the staging directory onto the target (one rename; see the module docs).

        Call it only once the release is charged (when a ledger is involved): the files
        become readable by others here."""
        _fsync_dir(self.staging)
        (self.staging / _PENDING).unlink()
        _deliver(self.staging, self.target, overwrite=self.overwrite)

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    def deliver(self, *, ledger: Any = None, dataset: str | None = None, guarantee: Any = None,
                mechanism: str = "", details: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Charge ``guarantee`` to ``dataset`` in ``ledger`` (when given), write
        ``ledger.json``, and commit: the staged files appear whole, charged for.

        A refusal of the charge (another process spent meanwhile, an unconvertible notion,
        an invalid release) discards the staged output unseen. If the rename fails after
        the charge, the complete output stays in the staging directory and the next
        delivery into the same parent finishes it (:func:`recover_pending`).

        Returns the ledger record (``ledger``, ``dataset``, ``spend``, ``output_id``), or
        ``None`` without a ledger.
        """
        record = None
        try:
            if ledger is not None:
                spend = ledger.spend(dataset, guarantee, mechanism=mechanism,
                                     details={**(details or {}), "output_id": self.output_id})
                record = _ledger_record(str(Path(ledger.path).resolve()), str(dataset),
                                        spend.sequence, self.output_id)
                self.json("ledger.json", record)
        except BaseException:
            self.discard()
            raise
        try:
            self.commit()
        except OSError as exc:
            spent = "" if record is None else (
                f"; {guarantee.budget} was charged to {dataset!r} (spend #{record['spend']}) "
                f"and the complete output is kept in {self.staging}: the next delivery into "
                "the same directory finishes it")
            raise OSError(f"could not move the output into {self.target}: {exc}{spent}") from None
        return record


def commit_directory(staging: Path, target: Path, *, overwrite: bool) -> None:
    """Rename a complete staging directory onto ``target`` (one rename, the old target
    removed after), with the ordinary permissions (see the module documentation)."""
    _deliver(Path(staging), Path(target), overwrite=overwrite)


def _deliver(staging: Path, target: Path, *, overwrite: bool) -> None:
    """Rename a complete (and, with a ledger, charged) staging directory onto ``target``,
    with the ordinary permissions."""
    _ordinary_permissions(staging)
    old = None
    if target.is_dir():
        if any(target.iterdir()) and not overwrite:
            raise FileExistsError(f"--out {target} appeared meanwhile; nothing was replaced")
        old = target.parent / f"{STAGING_PREFIX}{target.name}-{uuid.uuid4().hex}-old"
        os.rename(target, old)
    os.rename(staging, target)
    _fsync_dir(target.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def recover_pending(parent: Path, *, report: Callable[[str], None] = print) -> list[Path]:
    """Clean up after interrupted runs in ``parent``: finish deliveries that were paid for,
    remove everything else. Returns the targets delivered."""
    parent = Path(parent)
    delivered: list[Path] = []
    if not parent.is_dir():
        return delivered
    for entry in sorted(parent.iterdir()):
        if not entry.name.startswith(STAGING_PREFIX):
            continue
        if entry.is_file() or entry.name.endswith("-old"):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            continue
        try:
            pending = json.loads((entry / _PENDING).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            # Just created by a running process that has not written its record yet?
            if _age(entry) < 60:
                continue
            shutil.rmtree(entry, ignore_errors=True)
            continue
        if _running(pending):
            continue
        record = _paid_spend(pending)
        target = parent / str(pending.get("target", ""))
        if record is None or not pending.get("target"):
            shutil.rmtree(entry, ignore_errors=True)
            report(f"removed the unfinished output of an interrupted run ({entry.name}); "
                   "nothing had been charged for it")
            continue
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            shutil.rmtree(entry, ignore_errors=True)
            report(f"an interrupted run was charged (ledger spend #{record.sequence}) but "
                   f"{target} now holds other files; its output was discarded")
            continue
        _write_file(entry / "ledger.json", lambda fh, r=record, p=pending: json.dump(
            _ledger_record(p["ledger"], p["dataset"], r.sequence, p["output_id"]), fh, indent=2),
            binary=False)
        (entry / _PENDING).unlink()
        _deliver(entry, target, overwrite=True)
        delivered.append(target)
        report(f"finished the output of an interrupted run into {target} (it had been charged "
               f"as ledger spend #{record.sequence}; nothing new was charged)")
    return delivered


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def _running(pending: dict[str, Any]) -> bool:
    """Whether the run that owns a staging directory is still alive (on this host)."""
    pid = pending.get("pid")
    if pending.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _paid_spend(pending: dict[str, Any]) -> Any:
    if not pending.get("ledger"):
        return None
    from dpggm.privacy.ledger import Ledger

    try:
        book = Ledger(pending["ledger"], create=False)
        for record in reversed(book.history(pending["dataset"])):
            if record.details.get("output_id") == pending.get("output_id"):
                return record
    except Exception:
        # An unreadable ledger proves no payment: the output is not delivered.
        return None
    return None


def _ledger_record(ledger: str, dataset: str, sequence: int, output_id: str) -> dict[str, Any]:
    """The receipt (``ledger.json``) of an output charged as spend ``sequence``: the ledger,
    dataset, spend and output id, with the ledger's identity and the spend's event and
    chain hash, so that the output can be checked against the ledger (``dpggm budget
    verify LEDGER --output DIR``)."""
    from dpggm.privacy.ledger import spend_receipt

    return spend_receipt(ledger, dataset, sequence, output_id)

