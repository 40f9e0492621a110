"""File operations beneath a directory the server holds open: none follows a symbolic link, leaves that
directory or recurses.

A sandboxed run may rearrange its workspace while the server works in it — swap a directory for a link
between a check and an open (renameat2 RENAME_EXCHANGE) — so nothing here checks a path and then
opens it: each component is opened from the descriptor of the directory before it, with O_NOFOLLOW,
and a path that climbs out with `..` or starts at `/` is refused before anything is opened. (Per
component rather than openat2's RESOLVE_BENEATH: the same guarantee on any kernel, and in containers
whose seccomp profile refuses openat2.) Trees are walked with a stack of names instead of recursion,
one directory open at a time: a tree of any depth a task can build is handed over and removed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NO_LINKS = "the file tools do not follow links"


class PathError(OSError, ValueError):
    """A path that cannot be used, named as the caller gave it, never as where it lies on the host. An
    OSError (it did not open) and a ValueError (a refused argument), as io.UnsupportedOperation is."""


@contextmanager
def _naming(relative: str) -> Iterator[None]:
    """An OSError inside becomes a PathError naming `relative` (the OSError names host paths)."""
    try:
        yield
    except PathError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # only a last component opened O_NOFOLLOW gives it: a link
            raise PathError(f"{relative!r} is a symbolic link; {NO_LINKS}") from None
        raise PathError(f"{relative!r}: {os.strerror(exc.errno) if exc.errno else type(exc).__name__}") \
            from None


def components(relative: str) -> list[str]:
    """The names along `relative`; PathError for a path that is absolute, holds a NUL or climbs out."""
    if "\0" in relative:
        raise PathError(f"{relative!r}: contains a NUL byte")
    parts = [p for p in os.path.normpath(relative).split("/") if p not in ("", ".")]
    if relative.startswith("/") or parts[:1] == [".."]:
        raise PathError(f"{relative!r}: path escapes the workspace (give a path relative to it)")
    return parts


def _open_child(parent: int, name: str, shown: str) -> int:
    try:
        return os.open(name, DIRECTORY, dir_fd=parent)
    except NotADirectoryError:
        if stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise PathError(f"{shown!r} is a symbolic link; {NO_LINKS}") from None
        raise


def open_dir(top: int, relative: str, create: bool = False) -> int:
    """A new descriptor of the directory `relative` beneath `top`, each component opened from the one
    before it without following a link; missing components made first (0o755) if `create`."""
    parts = components(relative)
    with _naming(relative):
        fd = os.open(".", DIRECTORY, dir_fd=top)  # not dup(): a duplicate would share its read position
        try:
            for depth, name in enumerate(parts, 1):
                if create:
                    with suppress(FileExistsError):
                        os.mkdir(name, 0o755, dir_fd=fd)
                child = _open_child(fd, name, "/".join(parts[:depth]))
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
    return fd


def open_file(top: int, relative: str, flags: int) -> int:
    """A descriptor of the regular file `relative` beneath `top` (created 0o644 with O_CREAT, its
    directories too), never through a link and never blocking (a FIFO is refused, not waited on)."""
    parts = components(relative)
    if not parts:
        raise PathError(f"{relative!r}: is the workspace directory, not a file")
    parent = open_dir(top, "/".join(parts[:-1]), create=bool(flags & os.O_CREAT))
    try:
        with _naming(relative):
            fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644,
                         dir_fd=parent)
    finally:
        os.close(parent)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathError(f"{relative!r}: not a regular file")
    return fd


def _listing(fd: int) -> list[tuple[str, bool]]:
    with os.scandir(fd) as entries:
        return [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def walk(top: int, entry: Callable[[int, str, bool], None],
         left: Callable[[int, str], None] | None = None) -> None:
    """`entry(fd, name, is_dir)` for everything beneath `top` (`fd`: the directory holding it), a
    directory before what it holds; then `left(fd, name)` for each directory after what it holds.
    Iterative, one directory open at a time; a directory is entered without following a link, and
    its parent re-entered by `..` only when it is still the directory we came from: a tree moved
    while the walk is in it (only a program still running there can) ends the walk where it is."""
    fd = os.open(".", DIRECTORY, dir_fd=top)
    here, names = _identity(fd), _listing(fd)
    above: list[tuple[tuple[int, int], list[tuple[str, bool]], str]] = []  # (identity, names left, child)
    try:
        while names or above:
            if not names:
                parent = os.open("..", DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = parent
                expected, names, child = above.pop()
                if _identity(fd) != expected:
                    return
                here = expected
                if left is not None:
                    left(fd, child)
                continue
            name, is_dir = names.pop()
            entry(fd, name, is_dir)
            if is_dir:
                try:
                    child_fd = os.open(name, DIRECTORY, dir_fd=fd)
                except (FileNotFoundError, NotADirectoryError):
                    continue  # gone or replaced since it was listed
                above.append((here, names, name))
                os.close(fd)
                fd = child_fd
                here, names = _identity(fd), _listing(fd)
    finally:
        os.close(fd)


def _unlink_file(fd: int, name: str, is_dir: bool) -> None:
    if not is_dir:
        with suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(name, dir_fd=fd)


def _remove_directory(fd: int, name: str) -> None:
    with suppress(OSError):  # gone, or not empty: a program still running there added to it
        os.rmdir(name, dir_fd=fd)


def remove(parent: int, name: str) -> None:
    """Remove `name` from the directory `parent`: a file or a link, or a directory and all it holds."""
    try:
        os.unlink(name, dir_fd=parent)
        return
    except FileNotFoundError:
        return
    except IsADirectoryError:
        pass
    try:
        fd = os.open(name, DIRECTORY, dir_fd=parent)
    except (FileNotFoundError, NotADirectoryError):
        return  # gone, or no longer a directory, since the unlink
    try:
        walk(fd, _unlink_file, _remove_directory)
    finally:
        os.close(fd)
    _remove_directory(parent, name)


def chown_all(top: int, uid: int) -> None:
    """Give everything beneath `top` to `uid` (lchown: a link is re-owned, never what it points to)."""
    def chown(fd: int, name: str, is_dir: bool) -> None:
        with suppress(FileNotFoundError):
            os.chown(name, uid, uid, dir_fd=fd, follow_symlinks=False)
    walk(top, chown)
