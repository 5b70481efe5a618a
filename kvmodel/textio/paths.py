"""Which paths are read, and how far a directory walk or a glob goes.

Every path a user names (a trace, a config.json, a measurement, a folder or a glob of Parquet
files) comes through here first:

- **Only regular files.** A character or block device (``/dev/zero``, ``/dev/urandom``), a
  named pipe (FIFO), a socket or a directory where a file is expected is refused by its kind,
  before it is opened (opening a FIFO blocks until someone writes to it).  So is any file under
  ``/proc``, ``/sys`` or ``/dev``: their files say they are regular and empty, and then never
  end (``/proc/kmsg``) or change as they are read.  A file is opened without blocking and
  checked again once open (it may have been swapped meanwhile).
- **Bounded reads.** :func:`read_bounded` reads at most ``max_bytes`` (+1, to tell) whatever
  the file's size says.
- **Bounded walks.** :class:`Walk` lists the files under a directory or matching a glob
  (``*``, ``?``, ``[...]``, ``**``) with a budget: at most :data:`MAX_WALK_ENTRIES` directory
  entries looked at, :data:`MAX_WALK_FILES` files kept and :data:`MAX_WALK_BYTES` bytes in
  them; past one of them the walk stops with an error that says which.  A directory is entered
  once even when symbolic links lead to it again (a link loop ends there), and a link that
  loops on itself is skipped.  Names starting with ``.`` or ``_`` (Spark's ``_SUCCESS``,
  ``.crc`` files) are left out unless the pattern names them.

Errors are ``error`` (a :class:`~.lines.TextError` unless the caller passes its own class).
"""

from __future__ import annotations

import os
import stat
from fnmatch import fnmatchcase
from pathlib import Path

from .lines import TextError

PSEUDO_ROOTS = ("/proc", "/sys", "/dev")  # files here are not data: they never end or change
MAX_WALK_ENTRIES = 100_000  # directory entries a walk or glob looks at (~1 s on a local disk)
MAX_WALK_FILES = 10_000  # files a walk keeps (a warehouse export has tens to thousands)
MAX_WALK_BYTES = 100_000_000_000  # bytes in those files: 100 GB
_GLOB = frozenset("*?[")
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def pseudo_root(path) -> str | None:
    """The pseudo filesystem (``/proc``, ``/sys``, ``/dev``) ``path`` really lies in, or None."""
    real = os.path.realpath(path)
    return next((r for r in PSEUDO_ROOTS if real == r or real.startswith(r + "/")), None)


def regular_file(path, error: type[Exception] = TextError, *, what: str = "") -> os.stat_result:
    """The ``stat`` of ``path`` (links followed), or ``error`` unless it is a regular file
    outside the pseudo filesystems; ``what`` names it in the message (default: the path)."""
    name = what or str(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise error(f"cannot read {name}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(
            f"{name} is {_kind(st.st_mode)}, not a regular file; expected a file (or, for "
            "traces, a directory or glob of Parquet files)"
            if stat.S_ISDIR(st.st_mode)
            else f"{name} is {_kind(st.st_mode)}, not a regular file; expected a file on disk"
        )
    root = pseudo_root(path)
    if root is not None:
        raise error(
            f"{name} is in {root}, a system directory whose files are not data (they may never "
            "end); expected a file on disk"
        )
    return st


def open_regular(path, error: type[Exception] = TextError, *, what: str = ""):
    """``path`` opened for binary reading, unbuffered, after :func:`regular_file` (checked
    again on the open file)."""
    regular_file(path, error, what=what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise error(f"cannot read {what or path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error(f"{what or path} is not a regular file; expected a file on disk")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path, max_bytes: int, error: type[Exception] = TextError, *, what: str = ""):
    """The bytes of the regular file ``path``, or ``error`` when it holds more than
    ``max_bytes`` (told by reading one byte more, whatever its size claims)."""
    with open_regular(path, error, what=what) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise error(
            f"{what or path} is over the {max_bytes / 1e6:g} MB limit for this kind of file; "
            "expected a smaller file"
        )
    return data


def has_glob(text: str) -> bool:
    return bool(_GLOB & set(str(text)))


class Walk:
    """The regular files under directories or matching a glob, within the budget (module
    doc); ``error`` is raised, naming ``shown``, when the budget runs out."""

    def __init__(self, shown: str, error: type[Exception] = TextError):
        self.shown, self.error = shown, error
        self.entries = self.n_files = self.n_bytes = 0
        self.skipped: list[str] = []  # not regular files: devices, pipes, sockets, broken links
        self._seen: set = set()  # (device, inode, pattern position) of directories entered

    def _over(self, what: str) -> Exception:
        return self.error(
            f"{self.shown}: the walk stopped at {what}; point at the export's own folder or a "
            "narrower glob"
        )

    def _scan(self, folder: Path):
        """``(entry, is_dir)`` of the entries of ``folder``; each counts against the budget."""
        try:
            it = os.scandir(folder)
        except OSError:
            return
        with it:
            for entry in it:
                self.entries += 1
                if self.entries > MAX_WALK_ENTRIES:
                    raise self._over(f"{MAX_WALK_ENTRIES:,} directory entries (the limit)")
                try:
                    is_dir = entry.is_dir()  # follows links: a loop is cut by _enter
                except OSError:
                    is_dir = False
                yield entry, is_dir

    def _enter(self, folder, position: int) -> bool:
        """True the first time the directory ``folder`` is reached at ``position`` (of the
        pattern; -1 for :meth:`files_under`), never for a link into a pseudo filesystem."""
        try:
            st = os.stat(folder)
        except OSError:
            return False
        if os.path.islink(folder) and pseudo_root(folder):
            self.skipped.append(str(folder))
            return False
        key = (st.st_dev, st.st_ino, position)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def keep(self, path: Path) -> Path | None:
        """``path`` when it is a regular file (counted against the budget), else None (and
        listed in ``skipped``)."""
        try:
            st = os.stat(path)
        except OSError:  # a broken link or a link loop
            self.skipped.append(str(path))
            return None
        if not stat.S_ISREG(st.st_mode) or (os.path.islink(path) and pseudo_root(path)):
            self.skipped.append(str(path))
            return None
        self.n_files += 1
        self.n_bytes += st.st_size
        if self.n_files > MAX_WALK_FILES:
            raise self._over(f"{MAX_WALK_FILES:,} files (the limit)")
        if self.n_bytes > MAX_WALK_BYTES:
            raise self._over(f"{MAX_WALK_BYTES / 1e9:,.0f} GB in its files (the limit)")
        return path

    def files_under(self, root: Path) -> list[Path]:
        """The regular files under the directory ``root``, names starting with ``.`` or ``_``
        (below ``root``) left out, sorted."""
        if not self._enter(root, -1):  # already walked (under another match)
            return []
        out, stack = [], [Path(root)]
        while stack:
            folder = stack.pop()
            for entry, is_dir in self._scan(folder):
                if entry.name.startswith((".", "_")):
                    continue
                path = Path(entry.path)
                if is_dir:
                    if self._enter(path, -1):
                        stack.append(path)
                elif self.keep(path) is not None:
                    out.append(path)
        return sorted(out)

    def glob(self, pattern: str) -> list[Path]:
        """The paths (files and directories) ``pattern`` matches, sorted; ``**`` matches any
        number of directories."""
        parts = Path(pattern).parts
        cut = next(i for i, p in enumerate(parts) if has_glob(p) or p == "**")
        base, segs = Path(*parts[:cut]) if cut else Path("."), parts[cut:]
        found: set[Path] = set()
        stack = [(base, 0)] if os.path.isdir(base) else []
        while stack:
            folder, i = stack.pop()
            if i == len(segs):
                found.add(folder)
                continue
            seg = segs[i]
            if seg == "**":
                if self._enter(folder, i):
                    stack.append((folder, i + 1))
                    stack += [(Path(e.path), i) for e, d in self._scan(folder)
                              if d and not e.name.startswith((".", "_"))]  # fmt: skip
                continue
            for entry, is_dir in self._scan(folder):
                if not fnmatchcase(entry.name, seg):
                    continue
                if entry.name.startswith((".", "_")) and not seg.startswith(entry.name[0]):
                    continue
                if i + 1 == len(segs):
                    found.add(Path(entry.path))
                elif is_dir and self._enter(entry.path, i + 1):
                    stack.append((Path(entry.path), i + 1))
        return sorted(found)
