"""Whether a path can be an embedded memory's directory, said before anything is made.

A data directory is a setting a person types. The ways it goes wrong are few and each
has its own fix: a file where the directory (or one of its parents) should be, a link
that leads nowhere or round in a circle, a name longer than the file system takes, a
place nobody may write. ``problem`` finds the first of them by looking, never by
creating, so a command can refuse before it has made a single folder.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_NAME_MAX, _PATH_MAX = 255, 4096  # Linux's; pathconf gives the file system's own
# Room the store's own files need below the directory (textindex/..., graph.lbdb.wal).
_INSIDE = 64

_WHY = {
    errno.ENAMETOOLONG: "the path is longer than the file system allows",
    errno.ELOOP: "its links lead round in a circle",
    errno.EACCES: "a folder on the way may not be looked into",
    errno.EPERM: "a folder on the way may not be looked into",
}


def problem(data_dir: Path) -> str | None:
    """Why ``data_dir`` cannot hold (or become) a memory's directory, or None."""
    wanted = Path(os.path.abspath(data_dir))
    path = wanted
    while True:
        try:
            found = os.stat(path)
            break
        except (FileNotFoundError, NotADirectoryError):
            # Missing, or a file further up: the walk up finds which.
            if os.path.islink(path):
                return f"{path} is a link to nothing"
            if path == path.parent:
                return f"{wanted} has no folder above it"
            path = path.parent
        except OSError as exc:
            why = _WHY.get(exc.errno or 0, exc.strerror or str(exc))
            return f"{wanted} cannot be used: {why}"
    if not stat.S_ISDIR(found.st_mode):
        return f"{path} is a file, not a folder"
    if not os.access(path, os.W_OK | os.X_OK):
        if path == wanted:
            return f"{wanted} is not writable"
        return f"cannot create {wanted}: {path} is not writable"
    return _too_long(wanted, path)


def _too_long(wanted: Path, existing: Path) -> str | None:
    """The parts still to be made must fit the file system's limits (a part that already
    exists did, or its stat above would have said so)."""
    name_max = _limit(existing, "PC_NAME_MAX", _NAME_MAX)
    for part in wanted.relative_to(existing).parts:
        size = len(os.fsencode(part))
        if size > name_max:
            return (
                f"{wanted} cannot be used: a folder name in it is {size} bytes; "
                f"the file system takes {name_max}"
            )
    size = len(os.fsencode(str(wanted))) + _INSIDE
    path_max = _limit(existing, "PC_PATH_MAX", _PATH_MAX)
    if size > path_max:
        return (
            f"{wanted} cannot be used: the path is {size - _INSIDE} bytes, and the store's "
            f"files below it would pass the {path_max} the file system takes"
        )
    return None


def _limit(path: Path, name: str, default: int) -> int:
    try:
        value = os.pathconf(path, name)
    except (OSError, ValueError):
        return default
    return value if value > 0 else default
