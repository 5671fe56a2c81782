"""Seccomp filters that refuse a few system calls, as bubblewrap's `--seccomp FD` installs them
(a classic BPF program, struct sock_filter[]): the grading sandbox's (sandbox.py) and every hub
server's (grading/hub/no_keyrings.py). A refused call fails with ENOSYS, as if the kernel had
none; a call of an architecture the filter does not list fails too, and so does every x32 call
(its numbers carry X32_SYSCALL_BIT on x86-64), which would otherwise get around the numbers.

    refusing({AUDIT_ARCH: (number, ...), ...})  the program, bytes

The numbers are each architecture's own (arch/*/entry/syscalls, include/uapi/asm-generic).
"""

import errno
import struct

X86_64, I386, AARCH64, ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028  # AUDIT_ARCH_*
NATIVE = {"x86_64": X86_64, "aarch64": AARCH64}  # platform.machine() -> its AUDIT_ARCH

# System V IPC objects: shmget, semget, msgget (x86-64, aarch64; i386 and arm multiplex them)
SYSV_IPC = {X86_64: (29, 64, 68), AARCH64: (194, 190, 186)}
# POSIX message queues: mq_open (every other mq_ call needs the descriptor it gives)
MQUEUE = {X86_64: (240,), AARCH64: (180,)}
# prlimit64, allowed on the caller itself only (pid 0: what setrlimit and getrlimit send)
OWN_LIMITS = {X86_64: (302,), AARCH64: (261,)}
# The kernel's key retention service: add_key, request_key, keyctl
KEYRINGS = {
    X86_64: (248, 249, 250),
    I386: (286, 287, 288),  # also 32-bit programs on x86-64
    AARCH64: (217, 218, 219),
    ARM: (309, 310, 311),  # also 32-bit programs on aarch64
}

X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000


def refusing(calls, own=None):
    """The program refusing, for each architecture of `calls`, the system calls numbered there;
    every call of any other architecture, and every x32 call, is refused too. `own`: for each
    architecture, calls allowed only when their first argument (a process id) is 0, the
    caller itself."""
    ld_arch, ld_nr = (0x20, 0, 0, 4), (0x20, 0, 0, 0)  # BPF_LD|BPF_W|BPF_ABS: arch, nr
    deny = (0x06, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS)  # BPF_RET
    allow = (0x06, 0, 0, SECCOMP_RET_ALLOW)
    program = [ld_arch]
    for arch, numbers in calls.items():
        block = [ld_nr]
        if arch == X86_64:  # x32's calls carry this bit: none is allowed
            block += [(0x35, 0, 1, X32_SYSCALL_BIT), deny]  # BPF_JMP|BPF_JGE|BPF_K
        for number in numbers:
            block += [(0x15, 0, 1, number), deny]  # BPF_JMP|BPF_JEQ|BPF_K
        for number in (own or {}).get(arch, ()):
            block += [
                (0x15, 0, 6, number),  # not this call: on to the next
                (0x20, 0, 0, 16),  # its first argument's low 32 bits (little-endian)
                (0x15, 0, 2, 0),
                (0x20, 0, 0, 20),  # and its high 32 bits
                (0x15, 1, 0, 0),
                deny,  # another process's
                allow,  # the caller's own
            ]
        block += [allow]
        program += [(0x15, 0, len(block), arch)] + block  # not this arch: skip its block
    program += [deny]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
