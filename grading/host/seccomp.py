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
# Calls that change another process of the same uid for good, allowed on the caller itself
# only: each number with the values its first arguments must have (a process id of 0 is the
# caller). prlimit64 (pid 0: what setrlimit and getrlimit send), setpriority (PRIO_PROCESS, 0:
# os.nice), sched_setattr (pid 0: it sets a nice value too), ioprio_set (IOPRIO_WHO_PROCESS,
# 0). Not sched_setscheduler, sched_setparam, sched_setaffinity: libzmq calls them on its own
# threads by their ids (and aborts when refused); what they change can be undone (the grading
# sandbox's executor undoes it for each notebook), but for the idle policy, which an
# unprivileged process never leaves: sched_setscheduler to SCHED_IDLE is refused (IDLE_POLICY).
OWN_PROCESS = {
    X86_64: {302: (0,), 141: (0, 0), 314: (0,), 251: (1, 0)},
    AARCH64: {261: (0,), 140: (0, 0), 274: (0,), 30: (1, 0)},
}
IDLE_POLICY = {X86_64: (144,), AARCH64: (119,)}  # sched_setscheduler(pid, SCHED_IDLE, ...)
SCHED_IDLE, SCHED_RESET_ON_FORK = 5, 0x40000000
# The kernel's key retention service: add_key, request_key, keyctl
KEYRINGS = {
    X86_64: (248, 249, 250),
    I386: (286, 287, 288),  # also 32-bit programs on x86-64
    AARCH64: (217, 218, 219),
    ARM: (309, 310, 311),  # also 32-bit programs on aarch64
}

X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000


def refusing(calls, own=None, idle=None):
    """The program refusing, for each architecture of `calls`, the system calls numbered there;
    every call of any other architecture, and every x32 call, is refused too. `own`: for each
    architecture, {number: values}, calls allowed only when their first arguments are those
    values (the caller itself), refused otherwise. `idle`: for each architecture, calls
    refused when their second argument is SCHED_IDLE (with or without SCHED_RESET_ON_FORK)."""
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
        for number, values in (own or {}).get(arch, {}).items():
            checks = []  # argument i at offset 16 + 8 i: its low, then high 32 bits
            for i, value in enumerate(values):
                checks += [(0x20, 0, 0, 16 + 8 * i), value, (0x20, 0, 0, 20 + 8 * i), 0]
            rest = [*checks, allow, deny]  # the caller's own; another process's
            for j, value in enumerate(rest[: len(checks)]):
                if isinstance(value, int):  # not this value: to `deny`, the last
                    rest[j] = (0x15, 0, len(rest) - 2 - j, value)
            block += [(0x15, 0, len(rest), number), *rest]  # not this call: on to the next
        for number in (idle or {}).get(arch, ()):
            block += [
                (0x15, 0, 5, number),  # not this call: on to the next
                (0x20, 0, 0, 24),  # its second argument's low 32 bits, the policy
                (0x54, 0, 0, 0xFFFFFFFF ^ SCHED_RESET_ON_FORK),  # BPF_ALU|BPF_AND|BPF_K
                (0x15, 0, 1, SCHED_IDLE),
                deny,
                allow,
            ]
        block += [allow]
        program += [(0x15, 0, len(block), arch)] + block  # not this arch: skip its block
    program += [deny]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
