"""A seccomp filter that takes the kernel's keyrings away from everything in a server's sandbox.

The kernel's key retention service (add_key, request_key, keyctl) is not namespaced by user
namespaces the way files and processes are: a key belongs to a uid of the machine, and every
process of that uid, in any sandbox, sees the keyrings of that uid in /proc/keys and may use
them by serial number. A process that links its uid's user keyring (`_uid.<uid>`, writable and
linkable by its owner) into its own session keyring then *possesses* every key in it, and reads
what only the processes that put them there could read. So:

- a student's submission, autograded by the instructor on the hub (as the instructor's user, in
  the grading sandbox inside her server), linked the instructor's user keyring and read every
  key in it: what her logins keep there (a Kerberos ticket in a `KEYRING:` credential cache,
  sssd's default; a passphrase a tool stored with `keyctl padd user ... @u`), played in
  tests/test_jupyterhub.py against the hub without this filter; it could also fill the
  instructor's key quota (200 keys) or clear her keyring;
- a student's keys outlived her server and her sessions, and outlive `userdel`: the user
  keyrings of the machine's first namespace live until a reboot, so the next student given
  the same uid reads them.

The same filter refuses io_setup, native asynchronous I/O: each context takes its events from
one pool of the machine's (fs.aio-max-nr, 65,536 by default), and a student's kernel took it
all with 16 calls (a sixteenth tester's, played), after which no other process of the machine,
whoever's, could set one up (EAGAIN) until her server ended. Nothing of the course uses it
(glibc's POSIX aio is threads; io_uring is counted per user, not from this pool).

It refuses io_uring too (io_uring_setup, io_uring_enter, io_uring_register): no pool of the
machine's, but the kernel's largest surface reached by unprivileged calls, and nothing the
course runs in a server uses it (JupyterLab, a kernel, git and pip traced with strace: no
io_uring call; the hub's proxy, node's libuv, runs outside the servers and falls back without
it anyway).

And it refuses a socket of the kernel's socket dumps (`socket(AF_NETLINK, ..., NETLINK_SOCK_DIAG)`,
what `ss` reads; EACCES): servers share the machine's network namespace, and a dump lists every
TCP connection of the machine with its `tcp_info`, whose byte counters are exact. From her
kernel a student found whose server listens on which loopback port (`/user/<name>/api` answers
without a credential, with the version) and read, for each connection the proxy holds to
alice's server, how many bytes alice's browser sent and got (a save of 12,394 bytes read as
12,590 with its headers): how much alice wrote and ran, and when (the fifty-eighth tester's
table, played against a running hub). `/proc/net/tcp` has no such counters (its queues only).
32-bit x86 programs open sockets through `socketcall` too, whose arguments a filter cannot
read: there, `socketcall(SYS_SOCKET, ...)` is refused whatever it asks for (their direct
`socket` call is judged as above). Nothing the course runs in a server lists sockets.

Nothing a server, a kernel, the course or the grading sandbox runs needs a keyring. bubblewrap
installs the filter (`--seccomp FD`) for the server and everything it starts, the instructor's
grading sandboxes too (a filter is inherited and cannot be taken off): the refused calls fail
with ENOSYS, as if the kernel had no keyrings (nor native aio, nor io_uring). Calls of an
architecture the filter does not know (x32's) all fail; 32-bit programs on a 64-bit machine
(i386, arm) keep every other call. The program is grading/host/seccomp.py's, whose table of
keyring calls the grading sandbox refuses too (grading/host/sandbox.py).
"""

import errno
import os
import platform
import struct

from grading.host import seccomp

# io_setup's numbers (arch/*/entry/syscalls, include/uapi/asm-generic/unistd.h)
AIO_SETUP = {
    seccomp.X86_64: (206,),
    seccomp.I386: (245,),
    seccomp.AARCH64: (0,),
    seccomp.ARM: (243,),
}

# io_uring_setup, io_uring_enter, io_uring_register: one numbering on every architecture (5.1)
IO_URING = (425, 426, 427)


# socket's numbers, and i386's socketcall with its SYS_SOCKET (arm's EABI has no socketcall)
SOCKET = {seccomp.X86_64: 41, seccomp.I386: 359, seccomp.AARCH64: 198, seccomp.ARM: 281}
I386_SOCKETCALL, SYS_SOCKET = 102, 1
AF_NETLINK, NETLINK_SOCK_DIAG = 16, 4
REFUSED_SOCKET = (0x06, 0, 0, seccomp.SECCOMP_RET_ERRNO | errno.EACCES)  # BPF_RET


def _when(arch, number, *values):
    """Instructions that refuse the call `number` of `arch` (EACCES) when its first arguments'
    low 32 bits (ints: all the kernel reads) are `values` (None: any), and else fall through."""
    checks = []
    for i, value in enumerate(values):
        if value is not None:
            checks += [(0x20, 0, 0, 16 + 8 * i), value]  # BPF_LD|BPF_W|BPF_ABS: argument i
    block = [(0x20, 0, 0, 0), number, *checks, REFUSED_SOCKET]
    block = [(0x20, 0, 0, 4), arch, *block]  # its architecture first
    for j, value in enumerate(block):
        if isinstance(value, int):  # not this value: past the block's end
            block[j] = (0x15, 0, len(block) - 1 - j, value)  # BPF_JMP|BPF_JEQ|BPF_K
    return block


def socket_dumps():
    """The instructions, before the rest of the program, that refuse a NETLINK_SOCK_DIAG
    socket on each architecture, and i386's socketcall(SYS_SOCKET) (see the docstring)."""
    block = [_when(arch, n, AF_NETLINK, None, NETLINK_SOCK_DIAG) for arch, n in SOCKET.items()]
    block.append(_when(seccomp.I386, I386_SOCKETCALL, SYS_SOCKET))
    return b"".join(struct.pack("=HBBI", *step) for part in block for step in part)


def program():
    """The classic BPF program (struct sock_filter[]) that bubblewrap's --seccomp installs."""
    return socket_dumps() + seccomp.refusing(
        {arch: numbers + AIO_SETUP[arch] + IO_URING for arch, numbers in seccomp.KEYRINGS.items()}
    )


def check_machine():
    """A clear error where the filter would not know the machine's own system calls."""
    machine = platform.machine()
    if machine not in seccomp.NATIVE:
        raise SystemExit(
            f"grading/hub/no_keyrings.py knows the system calls of {', '.join(seccomp.NATIVE)} "
            f"only, not of this machine ({machine}): add its numbers of add_key, request_key "
            "and keyctl to KEYRINGS in grading/host/seccomp.py"
        )


def descriptor():
    """A new descriptor from which bubblewrap reads the program (its own: bwrap reads to the
    end, so each sandbox needs a descriptor at offset 0); the caller passes and closes it."""
    fd = os.memfd_create("lm10-no-keyrings", os.MFD_CLOEXEC)
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
