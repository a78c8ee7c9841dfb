"""Output sets written whole or not at all, for the command line: the library's
:mod:`dpggm.io` (staged, crash-safe, owner-only until charged), named here for the
commands."""

from __future__ import annotations

from dpggm.io import (
    STAGING_PREFIX,
    StagedOutput,
    check_target,
    check_writable_dir,
    commit_directory,
    current_umask,
    place,
    recover_pending,
    write_atomic,
)

__all__ = [
    "STAGING_PREFIX", "StagedOutput", "check_target", "check_writable_dir",
    "commit_directory", "current_umask", "place", "recover_pending", "write_atomic",
]
