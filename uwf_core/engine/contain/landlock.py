"""Landlock scopes for a sandboxed agent (Linux 6.12+, Landlock ABI 6): it cannot connect to an
abstract unix socket, nor signal a process, outside its own sandbox.

With the network on, every sandbox shares the host's network namespace, and with it the abstract
unix sockets: two agents at once could meet on one and pass each other a file descriptor of their
workspace — a write through it is a write no sandbox or check of the other step sees — and any
agent could reach a host service listening on one (an X server, a session bus). A Landlock domain
per run, made in the child just before it becomes bubblewrap, scopes both away; loopback TCP and
the network stay. Where the kernel has no such scopes (or bubblewrap is setuid, which the
no_new_privs an unprivileged domain needs would break), runs go on without it: `scoped()` says so.
"""

from __future__ import annotations

import os
import stat

SYS_CREATE_RULESET, SYS_RESTRICT_SELF = 444, 446  # the same on every architecture
CREATE_RULESET_VERSION = 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
PR_SET_NO_NEW_PRIVS = 38
SCOPES_ABI = 6

_STATE: dict = {}


def scoped(bwrap: str):
    """A function for the child to call before it execs bubblewrap (preexec_fn), or None where
    scopes cannot be had here. Prepared once: the child only makes three system calls."""
    if bwrap not in _STATE:
        _STATE[bwrap] = _prepare(bwrap)
    return _STATE[bwrap]


def _prepare(bwrap: str):
    try:
        import ctypes
        import struct

        libc = ctypes.CDLL(None, use_errno=True)
        syscall, prctl = libc.syscall, libc.prctl
        syscall.restype = prctl.restype = ctypes.c_long
        if syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION) < SCOPES_ABI:
            return None
        privileged = os.geteuid() == 0
        if not privileged and os.stat(bwrap).st_mode & stat.S_ISUID:
            return None  # no_new_privs would make a setuid bubblewrap fail
    except (OSError, AttributeError, ImportError):
        return None
    attr = ctypes.create_string_buffer(struct.pack("=QQQ", 0, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL))
    size = ctypes.c_size_t(ctypes.sizeof(attr))

    def restrict() -> None:  # in the child, between fork and exec
        if not privileged:
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        fd = syscall(SYS_CREATE_RULESET, attr, size, 0)
        if fd >= 0:
            syscall(SYS_RESTRICT_SELF, ctypes.c_int(fd), 0)
            os.close(fd)

    return restrict
