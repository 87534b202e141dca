"""Files inside a server's root, written without following anything the tenant controls.

Everything under a server's root belongs to its tenant, who may replace
``etc``, ``etc/hosts``, ``home/.bashrc`` or ``mnt`` with a symbolic link to
anywhere on the host. The controller, which writes into that tree (hosts
file, environment, shell rc, ``vipu-cli.hcl``, volume links), must never
follow such a link: it would write where the tenant points, with the
controller's rights. So every access here walks from a directory file
descriptor of the root, one component at a time, with ``O_NOFOLLOW``
(``openat`` semantics, :func:`os.open` with ``dir_fd``): a link where a
directory is expected is refused (:class:`Escape`), and a file is replaced
by renaming a fresh private file over its name, which replaces a link
itself and never writes through it. Reading a file that is a link yields
nothing. The root itself is the controller's (a path it chose), opened
once.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Escape(OSError):
    """A path inside a server's root is a link (or not a directory) where a directory
    belongs: the tenant replaced it; nothing was written."""


def _parts(relative: str) -> list[str]:
    parts = [p for p in Path(relative).parts if p not in ("", ".")]
    if not parts or any(p == ".." or p.startswith("/") for p in parts):
        raise ValueError(f"{relative!r} is not a path inside a server's root")
    return parts


@contextlib.contextmanager
def _directory(root: Path, parts: list[str], *, create: bool) -> Iterator[int]:
    """A descriptor of ``root/parts...``, each step opened without following links."""
    fd = os.open(root, _DIR)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                child = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:  # ELOOP (a link), ENOTDIR (a file)
                raise Escape(
                    exc.errno, f"{part} in a server's root is not a directory (a link?)"
                ) from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def make_dirs(root: Path, relative: str) -> None:
    """``mkdir -p root/relative`` without following links."""
    with _directory(root, _parts(relative), create=True):
        pass


@contextlib.contextmanager
def _replacing(root: Path, relative: str, suffix: str) -> Iterator[tuple[int, str]]:
    """``(directory fd, temporary name)`` beside ``root/relative`` for the caller to create;
    when the block ends the temporary replaces it atomically (a link there is replaced, never
    followed), or is removed if the block failed. Directories are made as needed."""
    *dirs, name = _parts(relative)
    with _directory(root, dirs, create=True) as fd:
        temp = f".{name}.{secrets.token_hex(6)}.{suffix}"
        try:
            yield fd, temp
            os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=fd)
            raise


def write(
    root: Path, relative: str, text: str, mode: int = 0o644, owner: int | None = None
) -> None:
    """Replace ``root/relative`` with ``text`` (atomically; a link there is replaced, never
    followed); its directories are made as needed. ``owner``: chown the file to that uid."""
    with _replacing(root, relative, "tmp") as (fd, temp):
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(temp, flags, mode, dir_fd=fd), "w") as out:
            os.fchmod(out.fileno(), mode)
            if owner is not None:
                os.fchown(out.fileno(), owner, owner)
            out.write(text)


def read(root: Path, relative: str) -> str | None:
    """The text of ``root/relative``; ``None`` when missing, a link or under a link."""
    *dirs, name = _parts(relative)
    try:
        with _directory(root, dirs, create=False) as fd:
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            with os.fdopen(handle) as source:
                return source.read()
    except (FileNotFoundError, Escape, IsADirectoryError, NotADirectoryError):
        return None
    except OSError:  # ELOOP: the file itself is a link
        return None


def link(root: Path, relative: str, target: Path) -> None:
    """Make ``root/relative`` a link to ``target`` (replacing a link already there)."""
    with _replacing(root, relative, "lnk") as (fd, temp):
        os.symlink(target, temp, dir_fd=fd)


def link_target(root: Path, relative: str) -> str | None:
    """Where the link ``root/relative`` points (``None``: nothing there); FileExistsError when
    something that is not a link is there."""
    *dirs, name = _parts(relative)
    with _directory(root, dirs, create=True) as fd:
        try:
            return os.readlink(name, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError:  # EINVAL: not a link
            raise FileExistsError(relative) from None


def unlink_links_to(root: Path, directory: str, target: Path) -> None:
    """Remove the links in ``root/directory`` that point to ``target``."""
    try:
        with _directory(root, _parts(directory), create=False) as fd:
            for name in os.listdir(fd):
                with contextlib.suppress(OSError):
                    if os.readlink(name, dir_fd=fd) == str(target):
                        os.unlink(name, dir_fd=fd)
    except (FileNotFoundError, Escape):
        return


def unlink(root: Path, relative: str) -> None:
    """Remove the entry ``root/relative`` (a link is removed, not what it points to)."""
    *dirs, name = _parts(relative)
    with contextlib.suppress(FileNotFoundError), _directory(root, dirs, create=False) as fd:
        os.unlink(name, dir_fd=fd)


__all__ = [
    "Escape",
    "link",
    "link_target",
    "make_dirs",
    "read",
    "unlink",
    "unlink_links_to",
    "write",
]
