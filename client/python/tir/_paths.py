"""Where tir keeps this user's files, and the checks that keep every other
local user out of them (as tirctl's: compiler/support/private_dir.h).

A directory is trusted when nobody but this user (and root) can change what
its path names: every directory on the way is owned by root or this user and
not writable by group or others (a sticky one such as /tmp excepted, as an
ancestor only), every symbolic link on the way is owned by root or this
user, and the directory itself is this user's (0700 for a private one).
Levels made here are made 0700. Anything else is UNSAFE_DIRECTORY.
"""

import os
import pwd
import stat

import grpc

from tir.client import TirError

_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION


def cache_dir():
    """$XDG_CACHE_HOME/tir (absolute; a relative one is ignored), else
    $HOME/.cache/tir, else the passwd entry's home + /.cache/tir; never a
    shared directory such as /tmp: NO_CACHE_DIRECTORY when there is none."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "tir")
    home = os.environ.get("HOME", "")
    if home.startswith("/"):
        return os.path.join(home, ".cache", "tir")
    try:
        home = pwd.getpwuid(os.geteuid()).pw_dir or ""
    except KeyError:
        home = ""
    if home.startswith("/"):
        return os.path.join(home, ".cache", "tir")
    raise TirError(_PRECONDITION, "NO_CACHE_DIRECTORY",
                   "this user has no cache directory: XDG_CACHE_HOME and HOME are unset and the user has no home "
                   "directory; set one of them or pass a directory")


def _unsafe(path, st, why):
    return TirError(_PRECONDITION, "UNSAFE_DIRECTORY",
                    "%s %s (owner uid %d, mode %04o); tir keeps its caches, builds and service only under directories "
                    "that nobody but root and this user (uid %d) can change"
                    % (path, why, st.st_uid, stat.S_IMODE(st.st_mode), os.geteuid()))


def _root_unmapped():
    """In a user namespace that does not map root (a rootless container,
    Bazel's sandbox), every owner outside it, root included, shows as the
    overflow uid: taken as root for directories and links on the way (never
    for the directory itself, which must be this user's)."""
    try:
        with open("/proc/self/uid_map") as f:
            rows = [line.split() for line in f if line.strip()]
        with open("/proc/sys/kernel/overflowuid") as f:
            overflow = int(f.read())
    except (OSError, ValueError):
        return None
    return overflow if rows and all(r[0] != "0" for r in rows) else None


_UNMAPPED = _root_unmapped()


def _trusted_owner(uid):
    return uid in (0, os.geteuid()) or (_UNMAPPED is not None and uid == _UNMAPPED)


def _check_ancestor(path, st):
    if not stat.S_ISDIR(st.st_mode):
        raise _unsafe(path, st, "is not a directory")
    if not _trusted_owner(st.st_uid):
        raise _unsafe(path, st, "is owned by another user")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        raise _unsafe(path, st, "is writable by group or others and not sticky")


def _check_final(path, private, tighten):
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise _unsafe(path, st, "is a symbolic link, not a directory")
    if not stat.S_ISDIR(st.st_mode):
        raise _unsafe(path, st, "is not a directory")
    if st.st_uid != os.geteuid():
        raise _unsafe(path, st, "is not this user's")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise _unsafe(path, st, "is writable by group or others")
    if private and st.st_mode & 0o077:
        if not tighten:
            raise _unsafe(path, st, "is open to group or others (0700 needed)")
        os.chmod(path, 0o700)  # this user's own, made open by an older tir: closed again


def _resolve(path):
    """(the deepest existing directory, the components missing below it),
    every directory and link on the way checked."""
    todo = [c for c in os.path.abspath(path).split("/") if c]
    _check_ancestor("/", os.lstat("/"))
    cur, links = "/", 0
    while todo:
        c = todo.pop(0)
        if c == ".":
            continue
        if c == "..":
            cur = os.path.dirname(cur)  # `cur` holds no links: its parent is what ".." names
            continue
        nxt = os.path.join(cur, c)
        try:
            st = os.lstat(nxt)
        except FileNotFoundError:
            missing = [c] + [r for r in todo if r != "."]
            if ".." in missing:
                raise TirError(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT",
                               "%s goes up (..) from a directory that does not exist" % path)
            return cur, missing
        if stat.S_ISLNK(st.st_mode):
            if not todo:
                return nxt, []  # the directory itself: the caller refuses a link
            if not _trusted_owner(st.st_uid):
                raise _unsafe(nxt, st, "is a symbolic link owned by another user")
            links += 1
            if links > 40:
                raise TirError(_PRECONDITION, "UNSAFE_DIRECTORY", "%s passes too many symbolic links" % path)
            target = os.readlink(nxt)
            todo = [p for p in target.split("/") if p] + todo
            if target.startswith("/"):
                cur = "/"
            continue
        if not todo:
            return nxt, []
        _check_ancestor(nxt, st)
        cur = nxt
    return cur, []


def trusted_dir(path, private=True, create=True):
    """`path`, made where missing (each level 0700) when `create`, and
    checked with every ancestor as above; `private`: 0700 (else this user's
    and not writable by others). UNSAFE_DIRECTORY; NOT_FOUND (not `create`)
    when it does not exist."""
    cur, missing = _resolve(path)
    if missing and not create:
        raise TirError(grpc.StatusCode.NOT_FOUND, "NOT_FOUND", "%s does not exist" % path)
    for i, c in enumerate(missing):
        cur = os.path.join(cur, c)
        try:
            os.mkdir(cur, 0o700)
        except FileExistsError:
            pass  # made by someone else just now: checked below
        if i + 1 < len(missing):
            _check_final(cur, private=False, tighten=False)
    _check_final(cur, private, tighten=create)
    return path
