"""Output sets written whole or not at all, for the command line: the library's
:mod:`dpggm.io` (staged, crash-safe, owner-only until charged), named here for the
commands."""

from __future__ import annotations

from dpggm.io import (
    RECEIPT_NAME,
    STAGING_PREFIX,
    StagedOutput,
    check_target,
    check_writable_dir,
    current_umask,
    place,
    recover_pending,
    write_atomic,
)

__all__ = [
    "RECEIPT_NAME", "STAGING_PREFIX", "StagedOutput", "check_target", "check_writable_dir",
    "current_umask", "place", "recover_pending", "write_atomic",
]
