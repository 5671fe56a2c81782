"""Execute one notebook inside the grading sandbox; the only grader code that runs there.

    python sandbox_exec.py --serve REQUESTS_FD RESULTS_FD        (in bubblewrap: see serve)
    python sandbox_exec.py --unisolated REQUESTS_FD RESULTS_FD   (LM10_GRADE_WITHOUT_ISOLATION)

The grader (grading/host/sandbox.py) starts this script, inside bubblewrap, with two pipes: it
sends frames on REQUESTS_FD (the lab's imports, then one notebook per submission, then the
calls of its tests) and reads frames on RESULTS_FD (sandbox.py's `Sandbox` reads them). The script
makes itself non-dumpable first, so the student's kernel (same user, started by this process)
can read neither its memory nor those descriptors through /proc; the kernel never inherits
them. It runs every cell with nbclient, except test cells: at a test cell it asks the grader,
which runs the test outside the sandbox (trusted_tests.py) and sends each call of the
student's code back here to run in the kernel (run_test). An error in a cell does not stop the
run, a cell still running after its time limit is interrupted and gets an error, and if the
kernel dies or stops answering, that cell and every later code cell get an error saying so,
and no later test runs. Each output is cut to the request's `limit` characters.

Everything this process writes to stdout and stderr is a log for the grader, which trusts none
of it (the kernel shares these descriptors); only RESULTS_FD carries results.
"""

import contextlib
import ctypes
import errno
import gc
import json
import os
import queue
import re
import secrets
import select
import signal
import subprocess
import sys
import time
import warnings

PR_SET_DUMPABLE = 4
INTERRUPT_GRACE = 10  # seconds an interrupted kernel has to take the next request
STOPPED = "The grader stopped this cell: {reason}. Later cells were not run; their tests score 0."


def not_dumpable():
    with contextlib.suppress(OSError, AttributeError):  # not Linux: nothing to protect
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x20000000, 0x40000000
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
# setsid, by architecture (AUDIT_ARCH, number); the sandbox's first filter (grading/host/
# seccomp.py) already refuses every call of another architecture and every x32 call
SETSID = {"x86_64": (0xC000003E, 112), "aarch64": (0xC00000B7, 157)}


def no_new_sessions(libc, check):
    """Refuse setsid (EPERM) to this process and all it starts, for good. The scheduler shares
    the cores between sessions (autogroups) wherever the processes are in the machine's root CPU
    cgroup (every grader but a root one on cgroup v1: sandbox.ProcessGroup): a submission whose
    processes each made a session of their own (`start_new_session=True`) took a share per
    process and starved the classmate graded beside it until its cells ran out of time (the
    nineteenth hub tester). Its notebook is one session, the executor's, so one share."""
    import platform
    import struct

    arch, number = SETSID[platform.machine()]
    allow, refuse = 0x7FFF0000, 0x00050000 | errno.EPERM  # SECCOMP_RET_ALLOW, _ERRNO
    program = [
        (0x20, 0, 0, 4),  # BPF_LD|BPF_W|BPF_ABS: the architecture
        (0x15, 1, 0, arch),  # BPF_JMP|BPF_JEQ|BPF_K: this one: on to the number
        (0x06, 0, 0, allow),  # another: the first filter's to refuse
        (0x20, 0, 0, 0),  # the call's number
        (0x15, 0, 1, number),
        (0x06, 0, 0, refuse),
        (0x06, 0, 0, allow),
    ]
    code = ctypes.create_string_buffer(b"".join(struct.pack("=HBBI", *i) for i in program))

    class Program(ctypes.Structure):  # struct sock_fprog
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Program(len(program), ctypes.cast(code, ctypes.c_void_p))
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


SIOCSIFFLAGS, IFF_UP, CAPABILITY_VERSION_3 = 0x8914, 0x1, 0x20080522


def own_namespaces():
    """In the process forked for one notebook, before anything of it runs: new PID, network
    and IPC namespaces, so that what a submission leaves in the sandbox's own does not reach
    the notebook graded after it (sockets it left in the network table for 60 s in TIME_WAIT,
    whose ports carry what it chose; the PID counter it advanced, though /proc, the
    sandbox's, still shows it: grading/JUPYTERHUB.md); loopback up, for the kernel's
    channels; then every capability dropped, for good. The sandbox's init holds
    CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_SETPCAP for this alone, in the sandbox's own user
    namespace (sandbox.bwrap_command). Returns in a new process, the first of the new PID
    namespace, which no process of the notebook can signal; this one waits for it and ends
    as it did."""
    import fcntl
    import socket
    import struct

    libc = ctypes.CDLL(None, use_errno=True)

    def check(result, what):
        if result != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")

    # a session of its own, so a scheduler autogroup of its own (nice 0): the sandbox's init's
    # (/proc/1/autogroup), whose nice value a process of the sandbox may raise and none lower,
    # had carried a submission's nice 19 to every kernel after it
    os.setsid()
    no_new_sessions(libc, check)  # and none of the notebook's own
    check(libc.unshare(CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
    with socket.socket() as handle:  # struct ifreq: a name, then the flags (40 bytes)
        fcntl.ioctl(handle, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", IFF_UP))
    for cap in range(64):  # the bounding set (CAP_SETPCAP does it), then every set
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() == errno.EINVAL:  # past the last capability
                break
            check(1, f"dropping capability {cap}")
    check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient")
    header, data = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0), (ctypes.c_uint32 * 6)()
    check(libc.capset(header, data), "capset")
    with open("/proc/self/status") as status:
        held = [line for line in status if line.startswith(("CapEff", "CapPrm", "CapBnd"))]
    if any(int(line.split()[1], 16) for line in held):
        raise OSError(f"capabilities left: {held}")
    child = os.fork()
    if child == 0:
        return
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # ended by a signal: this one ends by it too
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 1)


def read_oom_score():
    """This process's OOM score adjustment (/proc/self/oom_score_adj), None where there is none."""
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj") as handle:
        return handle.read().strip()
    return None


def write_oom_score(value):
    """Set this process's OOM score adjustment back to `value` (its own, read at the start)."""
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write(value)


def error_output(ename, evalue):
    return {
        "output_type": "error",
        "ename": ename,
        "evalue": evalue,
        "traceback": [f"{ename}: {evalue}"],
    }


def cut(text, limit):
    if len(text) <= limit:
        return text
    return (
        text[:limit] + f"\n[output cut by the grader: {len(text):,} characters, "
        f"only the first {limit:,} kept]\n"
    )


def cut_outputs(cell, limit):
    for output in cell.get("outputs", []):
        if "text" in output:
            text = output["text"]
            output["text"] = cut(text if isinstance(text, str) else "".join(text), limit)
        for value in list(output.get("data", {}).values()):
            # a JSON type's value may be any JSON (nbformat's schema): a list of numbers her
            # display published is not text to join (a TypeError here lost the notebook), and
            # a value of any size counts as its JSON text (past 64 MiB it lost the notebook)
            if isinstance(value, str) or (
                isinstance(value, list) and all(isinstance(v, str) for v in value)
            ):
                value = value if isinstance(value, str) else "".join(value)
            else:
                value = json.dumps(value)
            if len(value) > limit:
                output["data"] = {"text/plain": cut(value, limit)}
                break
        if "traceback" in output:
            output["traceback"] = [cut(line, limit) for line in output["traceback"][:200]]
            output["evalue"] = cut(str(output.get("evalue", "")), limit)


async def answers(kc, wait):
    """Whether the kernel, interrupted after a timeout, takes a new request within `wait` s."""
    msg_id = kc.execute("pass", silent=True, store_history=False)
    deadline = time.monotonic() + wait
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = await kc.get_shell_msg(timeout=left)
        except queue.Empty:
            return False
        if message.get("parent_header", {}).get("msg_id") == msg_id:
            return True
    return False


class ForkedKernel:
    """What nbclient needs of a kernel manager, for a kernel forked from this warm process."""

    has_kernel = True
    kernel_id = "forked"

    def __init__(self, pid, info):
        self.pid, self.info, self.status = pid, info, None

    def client(self):
        from jupyter_client.asynchronous import AsyncKernelClient

        kc = AsyncKernelClient()
        kc.load_connection_info(self.info)
        return kc

    def is_alive(self):
        if self.status is None and os.waitpid(self.pid, os.WNOHANG)[0]:
            self.status = "exited"
        return self.status is None

    def interrupt_kernel(self):
        if self.is_alive():
            os.kill(self.pid, signal.SIGINT)

    def shutdown_kernel(self, now=False, restart=False):
        if self.is_alive():
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.status = "killed"

    def cleanup_resources(self, restart=False):
        pass


def fork_kernel(alone=False):
    """Start an IPython kernel in a child of this (pre-imported) process, as
    `python -m ipykernel_launcher -f FILE` would in a new one; return its ForkedKernel.
    The kernel closes every descriptor but stdout and stderr (the executor's channel to the
    grader among them), so student code can neither forge nor spoil what the grader reads.
    `alone`: the notebook has namespaces of its own (own_namespaces), so the agent's guard
    takes every process of the sandbox but the kernel's ancestors for hers."""
    from jupyter_client.connect import write_connection_file
    from jupyter_core.paths import jupyter_runtime_dir

    os.makedirs(jupyter_runtime_dir(), exist_ok=True)  # where a kernel manager writes it too
    path, info = write_connection_file(
        fname=os.path.join(jupyter_runtime_dir(), f"kernel-{os.getpid()}.json"),
        ip="127.0.0.1",
        transport="tcp",
    )
    pid = os.fork()
    if pid:
        return ForkedKernel(pid, info)
    try:  # the kernel: dumpable as an exec'd one, stdin empty, no descriptor of the executor
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        sys.argv = [sys.executable, "-m", "ipykernel_launcher", "-f", path]
        # the agent before any cell: it keeps the standard library's functions it decodes and
        # encodes with as it finds them now (her cells can rebind them: the thirty-third hub
        # tester)
        sealed = []  # and the kernel's session packs messages with the agent's json, not hers
        with contextlib.suppress(ImportError):
            import sandbox_agent

            sandbox_agent.ALONE = alone
            sealed = [
                "--Session.packer=sandbox_agent.session_pack",
                "--Session.unpacker=sandbox_agent.session_unpack",
            ]
        from ipykernel.ipkernel import IPythonKernel
        from ipykernel.kernelapp import IPKernelApp
        from ipykernel.zmqshell import ZMQInteractiveShell
        from IPython.core.compilerop import CachingCompiler
        from traitlets import Type

        class CallShell(ZMQInteractiveShell):
            def transform_cell(self, raw_cell):
                """A cell the executor wrote (a test's calls: SERVE) or ended (the room's
                first setup cell, whose last line enters the room) is Python as it stands, its
                last line a call of the agent with megabytes of data in a string literal: IPython's
                input transformers, which would give it back unchanged, scan that text twice
                a cell (13.7 s of LM10-L3's batch, measured with py-spy). A cell of the
                student's that ends the same way is compiled as Python too, without IPython's
                syntax: nothing for her."""
                if raw_cell.rstrip("\n").rpartition("\n")[2].startswith(AGENT):
                    return raw_cell if raw_cell.endswith("\n") else raw_cell + "\n"
                return super().transform_cell(raw_cell)

        class Shell(IPythonKernel):
            """IPython's own compiler, not ipykernel's: that one names each cell's file by a
            hash computed in pure Python, for a debugger that no sandbox has, and each test's
            cell carries its first call's inputs (megabytes of LM10-L3's hidden states:
            2.3 s of each submission, measured with py-spy). The cells keep IPython's own
            names (<ipython-input-...>), which the off-limits guard knows."""

            compiler_class = Type(CachingCompiler)
            shell_class = Type(CallShell)

        class Kernel(IPKernelApp):
            kernel_class = Type(Shell)

            def init_path(self):
                """Not the working folder first on sys.path, as ipykernel puts it: there a
                file the student's code wrote under an installed module's name (tqdm.py)
                would be imported in its place, by the grader's own code among others."""

        Kernel.launch_instance([*sys.argv[3:], *sealed])
    finally:
        os._exit(0)


def clear(folders):
    """Before and after each submission: kill every process in this sandbox but its init and
    this one (what a student left running, detached or not), and empty the writable folders
    ({path: its os.stat at the start}; System V IPC objects cannot be made there:
    sandbox.ipc_filter), each given back its first mode and times, without the extended
    attributes a submission set on it (user.*, ACLs: they outlive emptying it)."""
    me = os.getpid()
    for _ in range(200):
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        alive = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in (1, me):
                with contextlib.suppress(OSError), open(f"/proc/{entry}/stat") as handle:
                    if handle.read().rsplit(")", 1)[-1].split()[0] != "Z":
                        alive.append(entry)
        if not alive:
            break
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        time.sleep(0.02)
    else:
        raise RuntimeError(f"processes left in the sandbox: {alive[:5]}")
    mounts = mount_points()
    for folder, start in folders.items():
        times = (start.st_atime_ns, start.st_mtime_ns)
        bare(folder)
        os.chmod(folder, start.st_mode & 0o7777)
        empty(folder, mounts, times)
        os.utime(folder, ns=times, follow_symlinks=False)


def bare(folder):
    """`folder` without an extended attribute: what a submission set on the folders the
    sandbox empties (user.* attributes, 64 KiB each, and its times), read back by the notebook
    graded next in that sandbox (a storage channel from one submission to the next); and a
    default ACL, which gave every file the next kernel made no rights for its owner: the
    classmate graded next lost her notebook."""
    for name in os.listxattr(folder, follow_symlinks=False):
        os.removexattr(folder, name, follow_symlinks=False)


def mount_points():
    """Every mount point in this sandbox (/proc/self/mountinfo's fifth field, octal escapes
    decoded): the read-only binds of the library and the interpreter, which can sit inside a
    writable folder when the course itself lives under /tmp."""
    with open("/proc/self/mountinfo") as handle:
        return {
            re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            for line in handle
        }


def empty(folder, mounts, times=None):
    """Remove everything in `folder` except mount points and the folders that lead to one
    (those are emptied around their mounts instead, without their extended attributes, their
    times set to `times` where given)."""
    for entry in os.scandir(folder):
        path = os.path.join(folder, entry.name)
        if path in mounts:
            continue
        if entry.is_dir(follow_symlinks=False) and any(m.startswith(path + "/") for m in mounts):
            bare(path)
            empty(path, mounts, times)
            if times is not None:
                os.utime(path, ns=times, follow_symlinks=False)
            continue
        if entry.is_dir(follow_symlinks=False):
            # GNU chmod and rm walk a tree of any depth (Python's os.walk and shutil.rmtree
            # recurse, and a student's tree 3,000 folders deep stopped them), never leaving
            # this file system; chmod first, as a student may have made folders read-only.
            for command in (
                ["chmod", "-R", "u+rwx", "--", path],
                ["rm", "-rf", "--one-file-system", "--", path],
            ):
                subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, check=False)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
    left = [
        name
        for name in os.listdir(folder)
        if os.path.join(folder, name) not in mounts
        and not any(m.startswith(os.path.join(folder, name) + "/") for m in mounts)
    ]
    if left:
        raise RuntimeError(f"could not empty {folder}: {left[:5]}")


def read_exact(stream, size, deadline=None):
    """`size` bytes from the unbuffered `stream`, or None at its end. One read of a pipe
    returns at most what the pipe holds (64 KiB on Linux), so read until there are `size`.
    TimeoutError once `deadline` (time.monotonic()) passes."""
    data = bytearray()
    while len(data) < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stream], [], [], left)[0]:
                raise TimeoutError
        chunk = stream.read(min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def write_all(stream, data):
    """All of `data` to the unbuffered `stream` (a raw write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[stream.write(view) :]


def send_frame(stream, data):
    """One frame: its length in 8 bytes, then `data` (bytes)."""
    write_all(stream, len(data).to_bytes(8, "big") + data)


def receive_frame(stream, deadline=None, limit=None):
    """The next frame's bytes, None at the end of `stream`; ValueError past `limit` bytes."""
    header = read_exact(stream, 8, deadline)
    if header is None:
        return None
    size = int.from_bytes(header, "big")
    if limit is not None and size > limit:
        raise ValueError(f"a message of {size:,} bytes, more than the {limit:,} allowed")
    data = read_exact(stream, size, deadline)
    if data is None:
        return None
    return data


class Channel:
    """JSON messages (each a mapping) in frames, read from `reader` and written to `writer`:
    the one protocol between the grader and the sandbox, and between the grader and its
    trusted test process. EOFError when the other end is gone; ValueError for a frame past
    `limit` bytes or one that is not a mapping; TimeoutError past a receive's deadline."""

    def __init__(self, reader, writer, limit=None):
        self.reader, self.writer, self.limit = reader, writer, limit

    def send(self, message):
        send_frame(self.writer, json.dumps(message).encode())

    def receive(self, deadline=None):
        data = receive_frame(self.reader, deadline, self.limit)
        if data is None:
            raise EOFError("the other end closed the channel")
        message = json.loads(data)
        if not isinstance(message, dict):
            raise ValueError("a frame that is not a message")
        return message


def serve(requests_fd, results_fd, isolated=True):
    """The sandbox's executor. It imports what the lab's setup imports (the first frame), says
    READY, then takes one notebook after another ({"notebook", "cell_timeout", "limit"}):
    for each it forks an executor, in PID, network and IPC namespaces of its own and without
    a capability (own_namespaces), that forks the kernel from this process, so every
    submission gets a new kernel without paying the imports again, and that executor answers
    the grader itself on the same descriptors ({"test"}, {"reply"}: see run_notebook) and
    ends with {"done": the executed notebook}. Between submissions every other process in the
    sandbox is killed and the home, /tmp and /dev/shm are emptied. Without isolation (no PID
    namespace: other processes of this user are the grader's own) it takes one notebook and
    kills nothing."""
    # The sandbox's init (bwrap --as-pid-1): the kernel drops every signal a process of the
    # namespace sends it that it has no handler for; Python's for SIGINT goes too, so that a
    # submission can neither stop nor interrupt the process that grades the next one.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests = os.fdopen(requests_fd, "rb", buffering=0)
    results = os.fdopen(results_fd, "wb", buffering=0)
    folders = [f for f in (os.getcwd(), "/tmp", "/dev/shm") if os.path.isdir(f)] if isolated else []
    # each folder's own mode, given back before it is emptied: a submission that took its own
    # rights to one (chmod 0 /tmp: the sandbox's user owns it) made emptying it fail, and the
    # classmate graded next lost her notebook with the sandbox
    folders = {folder: os.stat(folder) for folder in folders}
    # its scheduling, which a process of the same uid may change (SCHED_IDLE, one CPU) and
    # every kernel forked from here inherits: set back for each notebook (its limits and nice
    # value, which could not be, no process here may change: sandbox.ipc_filter)
    scheduling = os.sched_getscheduler(0), os.sched_getparam(0), os.sched_getaffinity(0)
    # and its OOM score adjustment, which a process of the same uid may raise (/proc/1/
    # oom_score_adj: 1000, the machine's first to kill) and every kernel forked from here
    # inherits; a process may lower its own back to where it started
    oom_score = read_oom_score() if isolated else None
    data = receive_frame(requests)
    warm = data.decode() if data else ""
    # What every kernel and executor forked from here needs, imported or found once here: each
    # kernel imported ipykernel's debugger module (debugpy: 5 s of the class report's 77
    # submissions, py-spy) and each executor looked up this sandbox's network interfaces (psutil).
    import ipykernel.debugger  # noqa: F401
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    import jupyter_client.asynchronous  # noqa: F401
    import nbclient  # noqa: F401
    import nbformat  # noqa: F401
    from jupyter_client.localinterfaces import localhost

    localhost()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(warm, "<lab imports>", "exec"), {"__name__": "lm10_warm"})
            if "torch" in sys.modules:
                # torch imports its compiler, torch._dynamo, the first time a function it
                # guards is called, which the off-limits guard's torch modes do on every
                # answer: imported here once, not again in each kernel forked from here
                # (4.7 s of each LM10-L3 submission, measured with py-spy).
                import torch._dynamo  # noqa: F401
        except Exception as error:  # noqa: BLE001 (fewer modules warm: slower, still right)
            print(f"warm imports failed: {type(error).__name__}: {error}", file=sys.stderr)
        # matplotlib's fonts, found once here, before any notebook: a home without its font
        # cache (each notebook's is new) made matplotlib build one at its first import and run
        # fc-list, a program; where that import fell in a graded call (her f plots), the call
        # stopped ("a process of hers ran during the call") and an honest part scored 0 (the
        # eighty-third hub tester). Every kernel forked from here finds the fonts in memory.
        try:
            import matplotlib.font_manager  # noqa: F401
        except Exception as error:  # noqa: BLE001 (said; only a plot in a graded call is hit)
            print(f"matplotlib's fonts not found: {type(error).__name__}: {error}", file=sys.stderr)
    if isolated:  # each notebook's own namespaces work here, or no notebook is taken
        pid = os.fork()
        if pid == 0:
            try:
                own_namespaces()
            except BaseException as error:  # noqa: BLE001 (said, then this process ends)
                print(f"no namespaces of its own for a notebook: {error}", file=sys.stderr)
                os._exit(1)
            os._exit(0)
        if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
            sys.exit(1)
    # What the warm imports made is left out of every executor's and kernel's garbage
    # collections, forked from here (the trusted host does the same before each session).
    gc.freeze()
    write_all(results, b"READY\n")
    # Only each request's length is read here: its notebook is read by the executor forked
    # for it, after that has forked the kernel. Every kernel is a copy of this process's
    # memory, where the notebooks read before stayed in freed memory: a submission graded
    # after a classmate's read parts of the classmate's answers in its own (/proc/self/mem).
    while (header := read_exact(requests, 8)) is not None:
        if isolated:
            clear(folders)
            try:
                os.sched_setscheduler(0, scheduling[0], scheduling[1])
                os.sched_setaffinity(0, scheduling[2])
            except OSError as error:  # said, never silent: the next notebook runs slower
                print(f"scheduling not set back: {error}", file=sys.stderr)
            if oom_score is not None and read_oom_score() != oom_score:
                try:  # raised: only where the grader is root (else the file is not hers)
                    write_oom_score(oom_score)
                except OSError as error:  # said, never silent
                    print(f"OOM score not set back: {error}", file=sys.stderr)
            # This sandbox's stdout and stderr are one file, the log whose tail the grader
            # reads, capped by the file-size limit like any file: a submission that filled it
            # (a copy of the kernel's real stdout) left every kernel after it unable to write
            # its first line, and each classmate graded next scored 0. Each notebook starts it
            # empty, with nobody of the last one left to write.
            sys.stdout.flush()
            sys.stderr.flush()
            os.ftruncate(1, 0)
            os.lseek(1, 0, os.SEEK_SET)
        # The executor tells this process, on a pipe of their own that the kernel never
        # holds, when it starts ("S") and ends ("D") sending the executed notebook: an executor
        # killed (by the kernel's out-of-memory killer, say: no process of the notebook can
        # signal it, own_namespaces) is then noticed at once, never waited out.
        progress_r, progress_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the executor
            try:
                os.close(progress_r)
                if isolated:
                    own_namespaces()
                channel = Channel(requests, results)
                km = fork_kernel(alone=isolated)
                try:
                    request = json.loads(read_exact(requests, int.from_bytes(header, "big")))
                    text = run_notebook(
                        request["notebook"],
                        request["cell_timeout"],
                        request["limit"],
                        km=km,
                        channel=channel,
                    )
                finally:
                    km.shutdown_kernel(now=True)
                os.write(progress_w, b"S")
                channel.send({"done": text})
                os.write(progress_w, b"D")
            finally:
                os._exit(0)
        os.close(progress_w)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(progress_r, "rb") as progress:
            sent = progress.read()
        if sent == b"S":  # killed while it sent the notebook: the frame may be cut short
            os._exit(1)  # the grader sees the sandbox end, and the next notebook a new one
        if sent != b"SD":
            code = os.waitstatus_to_exitcode(status)
            how = f"by signal {-code}" if code < 0 else f"with status {code}"
            Channel(requests, results).send(
                {
                    "died": f"the grader's executor in the sandbox was stopped {how}, "
                    "before the notebook was done (a process of the submission can kill it)"
                }
            )
        if not isolated:
            return
        clear(folders)


AGENT = "__import__('sandbox_agent')."  # how the executor's and the grader's lines begin
SERVE = AGENT + "serve({token!r}, {text!r})"  # a test's cell: its first call, then the rest
END_OF_INPUT = "\x04"  # an input reply ipykernel reads as the end of input (EOFError)


def stop_of(error, index, cell_timeout):
    """(index, reason) for nbclient's errors that leave the kernel unusable, else None."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    if isinstance(error, DeadKernelError):
        return (index, "the kernel died while it ran (os._exit, a crash, or it ran out of memory)")
    if isinstance(error, CellTimeoutError):
        return (index, f"it did not stop {cell_timeout} s after it was interrupted")
    return None


def ignored(index, cell_timeout):
    """(index, reason) for a cell that ran past its time and went on after the interrupt."""
    return (index, f"it ran past {cell_timeout} s and ignored the interrupt")


def run_cell(client, cell, index, cell_timeout):
    """Run one cell; (index, reason) when the kernel can no longer be used, else None."""
    from jupyter_core.utils import run_sync
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    client.lm10_timed_out = False  # set by run_notebook's on_cell_executed
    try:
        client.execute_cell(cell, index)
    except (DeadKernelError, CellTimeoutError) as error:
        return stop_of(error, index, cell_timeout)
    # nbclient's stop, not an error output of that name: the student's code can show one
    timed_out = getattr(client, "lm10_timed_out", False) is True
    if timed_out and not run_sync(answers)(client.kc, INTERRUPT_GRACE):
        return ignored(index, cell_timeout)
    return None


def reply_error(name, message):
    return json.dumps({"error": name, "builtin": False, "message": message})


def run_test(client, index, channel, cell_timeout):
    """A test cell: the grader runs it outside the sandbox and sends each call of the
    student's code here ({"call": request}); each runs in the kernel, among the student's
    code, and its reply goes back ({"reply": text}) until the grader says {"next"}. The calls
    of one test share its cell's time limit, counted from the test's start. Nothing the
    student's code prints meanwhile is kept. (index, reason) when the kernel can no longer be
    used.

    The calls run in one cell of the kernel's (SERVE): the agent answers the first call, which
    the cell carries, and sends each reply as the prompt of an input request (the kernel's
    stdin channel, which only a cell run with allow_stdin has); the answer to that request is
    the next call, and the end of input ends the cell. A cell a call (`answer`, with IPython's
    execution around it and its reply published on IOPub) cost 7 ms of CPU, in the kernel and
    here; a call on the stdin channel costs under 1 ms (31,000 calls in `make test`). While
    her code runs for a call, the agent refuses her input requests (StdinNotImplementedError,
    as in her own cells), so a reply is only what the agent sends after her code returned.
    Each call carries a random token of its own (`token call`, the first in the cell's
    source) and the agent's reply begins with it (`token reply`): an input request without it
    was sent by her code through the kernel's session, and stops the test (ForgedReply, in
    the instructor's report)."""
    from jupyter_core.utils import run_sync

    room = channel_room()  # what one reply may hold (`fitted`)
    channel.send({"test": index})
    deadline = time.monotonic() + cell_timeout
    try:
        return run_sync(serve_calls)(client, index, channel, cell_timeout, deadline, room)
    finally:  # as her cells run: their time limit, their outputs kept, and no stdin
        client.timeout, client.lm10_calls, client.kc.allow_stdin = cell_timeout, False, False


async def serve_calls(client, index, channel, cell_timeout, deadline, room):
    """run_test's calls (see there); (index, reason) when the kernel can no longer be used."""
    import asyncio

    import nbformat

    kc = client.kc
    stopped, expired, running = None, False, None  # running: the test's cell in the kernel
    while "call" in (message := channel.receive()):
        if running is not None and running.done():  # ended after its last reply
            stopped, running = cell_stop(client, running, index, cell_timeout), None
        if stopped is not None:
            channel.send(
                {"reply": reply_error("NotRun", f"the grader stopped: {stopped[1]}"), "own": True}
            )
            continue
        if expired:  # a call of this test ran out of its time: the test has no more
            channel.send(
                {
                    "reply": reply_error("CellTimeoutError", "no time left for this test"),
                    "own": True,
                }
            )
            continue
        token = secrets.token_hex(16)  # the call's: the agent's reply carries it back
        try:
            if running is None:
                # the cell as new_code_cell makes it, less its schema check of the whole cell (a
                # call's text can be megabytes): it is ours, and never stored
                cell = nbformat.from_dict(
                    {
                        "cell_type": "code",
                        "id": f"calls-{index}",
                        "metadata": {},
                        "execution_count": None,
                        "outputs": [],
                        "source": SERVE.format(token=token, text=message["call"]),
                    }
                )
                # no time limit of nbclient's: the deadline is the test's, kept here (nbclient's
                # would also count the time the grader takes between calls, while no code of hers
                # runs); nbclient still notices a kernel that died
                client.timeout, client.lm10_calls, kc.allow_stdin = None, True, True
                await drained(kc)
                running = asyncio.ensure_future(
                    client.async_execute_cell(cell, index, store_history=False)
                )
            else:
                kc.input(f"{token} {message['call']}")  # the answer to the agent's request
            # each call has a second at least, as each call's cell had: the grader's own time
            # between calls counts against the test's
            limit = max(deadline, time.monotonic() + 1)
            prompt = await next_request(kc, running, limit)
            own = True  # the reply is this executor's, not the kernel's (its error's name is ours)
            in_time = prompt is not None and time.monotonic() < limit
            mark, _, reply = (prompt or "").partition(" ")
            if in_time and mark == token:
                own = False
            elif in_time:
                # an input request that is not the agent's: her code sent it through the
                # kernel's session or stdin socket (flagged constructs reach them); the kernel
                # is hers from here on, and the instructor is told
                stopped = (index, "the kernel failed")
                client.lm10_detail = (
                    "ForgedReply: an input request during a call came without the call's "
                    "token, not from the grader's agent"
                )
                if not await finished(client, running, interrupt=True):
                    stopped = ignored(index, cell_timeout)
                reply, running = reply_error("NotRun", f"the grader stopped: {stopped[1]}"), None
            elif prompt is not None or not running.done():  # the test's time ran out in a call
                client.lm10_timed_out_cells.append(index)
                expired = True
                reply = reply_error(
                    "CellTimeoutError",
                    f"the grader stopped this test after {cell_timeout} s (does your code loop "
                    "forever?)",
                )
                if prompt is not None:  # her code returned, too late: the agent waits for input
                    kc.input(END_OF_INPUT)
                if await finished(client, running, interrupt=prompt is None):
                    stopped = cell_stop(client, running, index, cell_timeout)
                else:
                    stopped = ignored(index, cell_timeout)
                running = None
            else:  # the cell ended without a reply: her code stopped the agent, or the kernel
                stopped = cell_stop(client, running, index, cell_timeout)
                running = None
                if stopped is not None:
                    reply = reply_error("NotRun", f"the grader stopped: {stopped[1]}")
                else:
                    reply = reply_error(
                        "NoAnswer", "the call returned nothing the grader could read"
                    )
        except Exception as error:  # noqa: BLE001 (answered, as run_cell's catch-all answers)
            # raised, it left the grader's call unanswered and the whole submission ungraded;
            # its type and message are the instructor's
            stopped = (index, "the kernel failed")
            client.lm10_detail = f"{type(error).__name__}: {error}"[:500]
            reply, own = reply_error("NotRun", f"the grader stopped: {stopped[1]}"), True
            if running is not None:
                running.cancel()
            running = None
        if room is not None and len(json.dumps(reply)) > room:
            # her answer's size, as her error (a value of 70 MB past the channel's limit, on
            # a hidden input, left the whole submission ungraded: the 29th hub tester)
            reply, own = reply_error("AnswerTooLarge", "the answer was too large to read"), False
        channel.send({"reply": reply, "own": own})
    if running is not None:  # the test is over: the end of input ends the agent's cell
        kc.input(END_OF_INPUT)
        if not await finished(client, running, interrupt=False):
            return ignored(index, cell_timeout)
        stopped = cell_stop(client, running, index, cell_timeout)
    return stopped


async def drained(kc):
    """No input request left from before a test's cell: one her code sent from an earlier cell
    (through the kernel's session: never answered) would have been read as the reply to the
    test's first call, and every later reply as the one before's (the thirtieth hub tester)."""
    for _ in range(10_000):  # a thread of hers that sends on and on is stopped by its time
        try:
            await kc.get_stdin_msg(timeout=0)
        except queue.Empty:
            return
        except Exception:  # noqa: BLE001 (a message of hers that is not one: dropped too)
            continue


async def stdin_message(kc, running, wait):
    """The next message on the kernel's stdin channel within `wait` s; {} for one that
    jupyter_client cannot read (hers: skipped); None when the test's cell ends first or the
    time passes."""
    import asyncio

    getter = asyncio.ensure_future(kc.get_stdin_msg(timeout=wait))
    await asyncio.wait({getter, running}, return_when=asyncio.FIRST_COMPLETED)
    if not getter.done():
        getter.cancel()
        return None
    error = getter.exception()
    if isinstance(error, queue.Empty):  # the time passed
        return None
    return {} if error is not None else getter.result()


async def next_request(kc, running, deadline):
    """The prompt of the kernel's next input request (the agent's reply to a call), or None
    when the test's cell ends first or the deadline passes."""
    while (left := deadline - time.monotonic()) > 0 and not running.done():
        message = await stdin_message(kc, running, left)
        if message is None:
            return None
        content = message.get("content")
        if message.get("msg_type") == "input_request" and isinstance(content, dict):
            prompt = content.get("prompt")
            return prompt if isinstance(prompt, str) else ""
    return None


async def ended(kc, running, wait):
    """Whether the test's cell ends within `wait` s; every input request meanwhile is answered
    with the end of input, which ends the agent's loop."""
    deadline = time.monotonic() + wait
    while not running.done():
        if (left := deadline - time.monotonic()) <= 0:
            return False
        message = await stdin_message(kc, running, left)
        if message and message.get("msg_type") == "input_request":
            kc.input(END_OF_INPUT)
    return True


async def finished(client, running, interrupt):
    """Whether the test's cell ends within INTERRUPT_GRACE s (the kernel interrupted first
    where `interrupt`: her code still runs), else interrupted and given as long again. A cell
    that never ends is given up: nbclient's wait for its reply is cancelled."""
    if interrupt:
        client.km.interrupt_kernel()
    if await ended(client.kc, running, INTERRUPT_GRACE):
        return True
    if not interrupt:  # her code took the agent's place, and goes on
        client.km.interrupt_kernel()
        if await ended(client.kc, running, INTERRUPT_GRACE):
            return True
    running.cancel()
    return False


def cell_stop(client, running, index, cell_timeout):
    """(index, reason) when the test's ended cell left the kernel unusable, else None."""
    error = running.exception()
    if error is None:
        return None
    stop = stop_of(error, index, cell_timeout)
    if stop is None:  # nbclient's other errors (one of an output she published): its catch-all
        stop = (index, "the kernel failed")  # her text goes to the instructor's report alone
        client.lm10_detail = f"{type(error).__name__}: {error}"[:500]
    return stop


def run_notebook(text, cell_timeout, limit, km=None, channel=None):
    """The executed notebook's JSON for the notebook JSON `text`: every cell run in a kernel
    (a new one, or the one `km` manages), the grader's marks added, each output cut. A cell
    marked as a test (metadata lm10_test) is not run here: the grader runs it (run_test)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.reads(text, as_version=4)
    stopped = None  # (cell index, reason)
    detail = ""  # what of a failed kernel's error only the instructor reads
    timed_out_cells = []  # the cells stopped at their time limit (nbclient's, or run_test's)

    def on_cell_executed(cell, cell_index, execute_reply):
        content = execute_reply.get("content", {}) if execute_reply else {}
        # nbclient's stand-in reply, which has no header (a kernel's reply has one, whatever
        # the student's code named its error)
        timed_out = content.get("ename") == "CellTimeoutError" and "header" not in execute_reply
        client.lm10_timed_out = timed_out  # what run_cell reads
        if timed_out:
            timed_out_cells.append(cell_index)
        if content.get("status") == "error" and (
            timed_out or not any(o.get("output_type") == "error" for o in cell.outputs)
        ):
            ename, evalue = content.get("ename", "Error"), content.get("evalue", "")
            cell.outputs.append(nbformat.from_dict(error_output(ename, evalue)))

    class Client(NotebookClient):
        def _update_display_id(self, display_id, msg):
            """Never: an update of a display made earlier (`display(..., display_id=...,
            update=True)`) would rewrite an earlier cell's stored outputs with what the
            student's code computed later, after a hidden test had called it."""

        lm10_calls = False  # a test's cell runs (run_test)

        def process_message(self, msg, cell, cell_index):
            """In a test's cell, nothing but its end is read: what her code publishes while a
            test calls it is never kept, and never parsed (nbformat's check of an output she
            published there raised out of the grader's call: the twenty-seventh hub tester)."""
            if self.lm10_calls and msg.get("msg_type") != "status":
                return None
            return super().process_message(msg, cell, cell_index)

    client = Client(
        nb,
        km=km,
        timeout=cell_timeout,
        allow_errors=True,
        interrupt_on_timeout=True,
        kernel_name="python3",
        resources={"metadata": {"path": os.getcwd()}},
        on_cell_executed=on_cell_executed,
        record_timing=False,
        error_on_timeout={
            "ename": "CellTimeoutError",
            "evalue": (
                f"the grader stopped this cell after {cell_timeout} s (does it loop forever?)"
            ),
            "traceback": [],
        },
    )
    client.lm10_timed_out_cells = timed_out_cells  # run_test's own stops go there too
    try:
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                if cell.metadata.get("lm10_test") is not None:
                    stopped = run_test(client, index, channel, cell_timeout)
                else:
                    stopped = run_cell(client, cell, index, cell_timeout)
                if stopped is not None:
                    break
    except Exception as error:  # the kernel did not start or did not shut down
        if stopped is None:
            first = next(
                (
                    i
                    for i, c in enumerate(nb.cells)
                    if c.cell_type == "code" and not c.get("outputs")
                ),
                0,
            )
            # Fixed words: this reason is shown in feedback, and the error's type and message
            # are hers to choose (nbformat's check of an output she published quotes it). They
            # go to the instructor's report only (`detail`), which reads limits of the machine
            # in them (an epoll watch a classmate took: OSError, [Errno 28]).
            stopped = (first, "the kernel failed")
            detail = f"{type(error).__name__}: {error}"[:500]
    if stopped is not None:
        detail = detail or getattr(client, "lm10_detail", "")  # a test's call's (run_test)
        index, reason = stopped
        for later, cell in enumerate(nb.cells[index:], start=index):
            if cell.cell_type == "code":
                message = (
                    STOPPED.format(reason=reason)
                    if later == index
                    else (f"Not run: the grader stopped an earlier cell ({reason}).")
                )
                cell.outputs.append(nbformat.from_dict(error_output("NotRun", message)))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cut_outputs(cell, limit)
    nb.metadata["lm10_stopped"] = (
        None if stopped is None else {"cell": stopped[0], "reason": stopped[1], "detail": detail}
    )
    nb.metadata["lm10_timed_out"] = timed_out_cells
    return fitted(nb)


def channel_room():
    """The bytes a message to the grader may hold: the file-size limit (the channel's:
    sandbox.Sandbox) less 4,096 for the frame around it; None where there is no limit."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if limit == resource.RLIM_INFINITY else limit - 4096


MOST_DETAIL = "\U0001f600" * 500  # the longest a stop's detail (500 characters) is in JSON


def fitted(nb):
    """The notebook's JSON, in a message the grader reads back (at most the file-size limit,
    the channel's: sandbox.Sandbox): past it, the outputs of her cells are dropped from the
    last cell up, never a test cell's (the grader's own). Each output is cut, but nothing
    counted them: 3,600 displays made the notebook too large, the whole submission ungraded,
    an outcome her code could pick after a hidden input (the twenty-eighth hub tester)."""
    import nbformat

    text = json.dumps(nb)
    budget = channel_room()
    if budget is None:
        return text
    # A stop's detail (nbformat's refusal quoting an output she published, the instructor's
    # alone) is her text, its length hers to choose in a cell that ran after a hidden input:
    # counted at its greatest, so that which of her earlier cells are emptied (shown in feedback)
    # never says how long it was (the sixty-fifth hub tester)
    stopped = nb.metadata.get("lm10_stopped")
    detail = stopped.get("detail") if isinstance(stopped, dict) else None
    slack = (
        len(json.dumps(json.dumps(MOST_DETAIL))) - len(json.dumps(json.dumps(detail)))
        if isinstance(detail, str)
        else 0
    )
    # So is the list of her cells stopped at their time limit (lm10_timed_out, the report's):
    # which of her cells after a hidden test ran out of time, and how many, is hers to choose,
    # and shown nowhere else once they ran after a hidden input; counted as if every cell had
    # (each is listed once), its length never decides which earlier cells are emptied (the
    # sixty-seventh hub tester)
    timed_out = nb.metadata.get("lm10_timed_out")
    if isinstance(timed_out, list):
        most = list(range(len(nb.cells)))
        slack += len(json.dumps(json.dumps(most))) - len(json.dumps(json.dumps(timed_out)))
    size = len(json.dumps({"done": text})) + slack
    if size <= budget:
        return text
    note = nbformat.from_dict(
        {
            "output_type": "stream",
            "name": "stdout",
            "text": f"[outputs dropped by the grader, of this cell and of your later cells: "
            f"the notebook passed {budget:,} bytes]\n",
        }
    )
    # One note, on the last cell emptied, counted: a note on each cell emptied, uncounted, made
    # the notebook grow where her last cells' outputs were smaller than the note (thousands of
    # print(1) cells after the large ones), so it passed the limit all the same (the
    # twenty-ninth hub tester)
    budget -= len(json.dumps(json.dumps([note]))) - 4
    emptied = None
    for cell in reversed(nb.cells):
        if size <= budget:
            break
        if cell.cell_type == "code" and cell.get("outputs") and "lm10_test" not in cell.metadata:
            size -= len(json.dumps(json.dumps(cell.outputs))) - 4  # what [] leaves
            cell.outputs, emptied = [], cell
    if emptied is not None:
        emptied.outputs = [note]
    return json.dumps(nb)


def main():
    """sandbox_exec.py --serve REQUESTS RESULTS [--processes=N] (in the sandbox; the process
    limit is set here, in the sandbox's user namespace, so that it counts the sandbox's own
    processes and threads, not all of the grader's user's: sandbox.set_limits), or
    --unisolated REQUESTS RESULTS."""
    for argument in sys.argv[4:]:
        if argument.startswith("--processes="):
            import resource

            limit = int(argument.split("=", 1)[1])
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    not_dumpable()
    isolated = sys.argv[1] == "--serve"
    serve(int(sys.argv[2]), int(sys.argv[3]), isolated=isolated)


if __name__ == "__main__":
    main()
