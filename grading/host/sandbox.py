"""Run one prepared notebook in a sandbox; only the executed notebook and answers leave.

The grader process (nbgrader autograde, with `SandboxedExecute` from course_preprocessors.py)
prepares the notebook, its test cells replaced by markers, and calls `execute`. With
bubblewrap (`bwrap`, Debian package `bubblewrap`) the notebook runs in new user, PID, network,
IPC, UTS and mount namespaces that see only, read-only: the system's /usr (and /lib*, /bin),
the Python installation, this virtual environment, the course library's source folder, the
executor and agent scripts and the SmolLM2 weight cache; writable: a private home (the working
folder), /tmp and /dev/shm, size-capped memory file systems that vanish at the end. No
gradebook, no solutions/, no submissions, no network. When the executor ends, the PID
namespace ends and the kernel takes every process the student started with it, detached or
not. Resource limits apply to every process in it: file size, address space, process count,
CPU time; and a seccomp filter refuses System V IPC objects, memory no limit counts, and the
kernel's keyrings, which hold what the grader's user keeps there (ipc_filter). One protocol
(`Sandbox`): frames of JSON on two pipes, the same for a warm sandbox that grades many
submissions and for one started for a single notebook; at each test marker
the sandbox asks, the grader runs the test outside (trusted_tests.py) and sends the test's
calls of the student's code in, one at a time, and each answer comes back as plain data.

Without a working bubblewrap, nothing is graded: `require()` raises SandboxUnavailable with
the reason and the fix, and every entry point (grading/batch/autograde.py, so `make autograde`, and
SandboxedExecute, so the formgrader and `nbgrader autograde`) calls it before any submission
runs. Only an instructor who sets LM10_GRADE_WITHOUT_ISOLATION=1 (`make autograde ...
WITHOUT_ISOLATION=1`, `autograde.py --without-isolation`) grades unisolated, knowingly: the
same executor then runs as a plain process in a temporary folder with the same resource limits,
the student's code can read and write everything the grader's user can, and every report row,
the autograded notebook and the grades export say so.
"""

import atexit
import contextlib
import dataclasses
import importlib.util
import itertools
import logging
import os
import resource
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from traitlets import Integer
from traitlets.config import Configurable

from grading.host import seccomp, tmpfs
from grading.in_sandbox import sandbox_exec as frames

INSIDE = Path(__file__).resolve().parents[1] / "in_sandbox"  # what runs in the sandbox
EXECUTOR = INSIDE / "sandbox_exec.py"
AGENT = INSIDE / "sandbox_agent.py"  # imported by the kernel to answer the tests' calls
PYTHON = os.path.normpath(os.path.abspath(sys.executable))  # the venv's, not resolved
WITHOUT_ISOLATION = "LM10_GRADE_WITHOUT_ISOLATION"  # =1: the instructor's knowing choice
NOT_ISOLATED = (
    f"WARNING: {WITHOUT_ISOLATION}=1: submissions run WITHOUT isolation and can read and "
    "change the gradebook, the solutions and other submissions"
)
INSTALL = (
    "Install bubblewrap: Debian and Ubuntu `sudo apt-get install bubblewrap`, Fedora and RHEL "
    "`sudo dnf install bubblewrap`, Arch `sudo pacman -S bubblewrap`, openSUSE `sudo zypper "
    "install bubblewrap` (macOS and Windows have none: grade on Linux, or in a Linux virtual "
    "machine or container that allows user namespaces)"
)
NAMESPACES = (
    "Allow unprivileged user namespaces: `sudo sysctl kernel.unprivileged_userns_clone=1` "
    "(older Debian), `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0` (Ubuntu "
    "24.04 and later), or run the container with user namespaces allowed"
)
KNOWINGLY = (
    f"To grade without isolation, knowingly: {WITHOUT_ISOLATION}=1 "
    "(make autograde LAB=... WITHOUT_ISOLATION=1, or grading/batch/autograde.py LAB "
    '--without-isolation); every report row then says "NOT ISOLATED"'
)


class SandboxUnavailable(RuntimeError):
    """No sandbox can be made here and the instructor did not choose to grade without one."""


def without_isolation():
    """Whether the instructor chose to grade without isolation (LM10_GRADE_WITHOUT_ISOLATION=1)."""
    return os.environ.get(WITHOUT_ISOLATION) == "1"


_working = None  # the bwrap that made a sandbox in this process


def require():
    """True where submissions will run in a working sandbox, False where the instructor chose
    to grade without isolation; SandboxUnavailable, naming the fix, otherwise. Call it before
    any submission runs."""
    global _working
    if without_isolation():
        return False
    path = shutil.which("bwrap")
    if path is None:
        why, fix = "bubblewrap (bwrap) is not installed (not on PATH)", INSTALL
    elif path == _working:  # probed already in this process
        return True
    elif problem := probe():
        why, fix = f"bubblewrap is installed but cannot make a sandbox here: {problem}", NAMESPACES
    else:
        _working = path
        return True
    raise SandboxUnavailable(
        f"no submission was graded: {why}. Student code must never run with the grader's "
        f"rights, where it could read the solutions and rewrite the gradebook. {fix}. "
        f"{KNOWINGLY}."
    )


@dataclass
class Limits:
    memory_bytes: int = 8 << 30  # address space per process (torch reserves a lot)
    file_bytes: int = 64 << 20  # largest file a process may write
    processes: int = 512  # threads count: torch starts one per core
    cpu_seconds: int = 3600
    home_bytes: int = 256 << 20  # the private home, /tmp and /dev/shm, each
    files: int = 10_000  # files and folders in each of them
    open_files: int = 4096  # descriptors a process holds (RLIMIT_NOFILE)
    output_chars: int = 20_000  # per output of a cell
    # A room (grading/host/room.py): transformers and the course library are not in the sandbox,
    # only stand-ins that say so (the guard, lmcourse.offlimits, stays: the agent arms it).
    room: bool = False


def _limit(default: int, description: str):
    """A limit of SandboxLimits: a positive integer, set in nbgrader_config.py, described."""
    return Integer(default, min=1, help=description).tag(config=True)


class SandboxLimits(Configurable):
    """Every limit of a graded sandbox, set in grading/nbgrader_config.py as
    `c.SandboxLimits.<name>` (the defaults are `Limits`'s). The worker warms its sandbox with
    them (grading/batch/workers.py) and SandboxedExecute grades with them, so a submission runs in
    the warm sandbox; one whose limits differ runs in a cold sandbox, and `execute` logs why."""

    memory_bytes = _limit(
        Limits.memory_bytes,
        "Address space of each process in the sandbox, in bytes (torch reserves much of "
        "it at import: 8 GiB).",
    )
    file_bytes = _limit(
        Limits.file_bytes,
        "Largest file a process in the sandbox may write, in bytes; also the largest "
        "message the sandbox may send back to the grader.",
    )
    processes = _limit(
        Limits.processes,
        "Processes and threads the sandbox may hold at once (torch starts a thread per core).",
    )
    cpu_seconds = _limit(
        Limits.cpu_seconds,
        "CPU seconds each process in the sandbox may use.",
    )
    home_bytes = _limit(
        Limits.home_bytes,
        "Size of the sandbox's private home, of its /tmp and of its /dev/shm, each, in bytes.",
    )
    files = _limit(
        Limits.files,
        "Files and folders each of the sandbox's home, /tmp and /dev/shm may hold, however "
        "small: each takes about 1 KiB of the machine's memory that no other limit counts.",
    )
    open_files = _limit(
        Limits.open_files,
        "Descriptors each process in the sandbox may hold open (at most the grader's own hard "
        "limit). It also bounds the descriptors a submission can hold in flight over Unix "
        "sockets, which the kernel counts for every process of the grader's uid together: "
        "above this many, no sandbox of the grader's can pass one, but the grader and its "
        "other processes, whose limit is higher, still can.",
    )
    output_chars = _limit(
        Limits.output_chars,
        "Characters kept of each output of a cell (the rest is cut, and the cut is said).",
    )

    def limits(self, room: bool = False) -> Limits:
        """These limits, for a sandbox that holds a room (grading/host/room.py) or not."""
        values = {name: getattr(self, name) for name in self.class_trait_names(config=True)}
        return Limits(**values, room=room)


def bwrap():
    """Path of bwrap, or None where it is missing or the instructor chose to grade without
    isolation (`require` refuses the first)."""
    if without_isolation():
        return None
    return shutil.which("bwrap")


def library_folders():
    """Read-only folders the kernel needs: Python, this environment, the course library, the
    SmolLM2 cache. Each is bound alone, so the repository around them stays invisible."""
    folders = {Path(sys.base_prefix), Path(sys.prefix)}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        folders.add(Path(sysconfig.get_paths()[name]))
    spec = importlib.util.find_spec("lmcourse")
    if spec and spec.origin:
        folders.add(Path(spec.origin).resolve().parent)
    folders = {f.resolve() for f in folders if f.exists()}
    # Keep the outermost of nested folders only.
    return sorted(f for f in folders if not any(o != f and o in f.parents for o in folders))


OUTSIDE_THE_ROOM = '''"""{name}, as a graded sandbox holds it: not at all (grading/host/room.py)."""

raise ImportError(
    "{name} is not available to your code while it is graded: the tests compare against it. "
    "This lab gives you what you need in its setup cell."
)
'''
LMCOURSE_IN_THE_ROOM = '''"""The course library in a graded sandbox: its guard and stand-ins."""
'''


def room_stand_ins():
    """{real folder: stand-in folder} for a room's sandbox (grading/host/room.py): transformers is
    a package whose import fails with the reason; the course library keeps only
    lmcourse.offlimits, the guard the agent arms, and lmcourse.standins, the stand-ins a test
    gives a later part for the earlier ones (values, no formula). Made once per batch process,
    in a private folder, and left read-only."""
    global _stand_ins
    import lmcourse
    import transformers
    from lmcourse import offlimits, standins

    if _stand_ins is None:
        # Named for this process, so that a later batch removes it if this one is killed before
        # its atexit runs (sweep_homes).
        root = Path(tempfile.mkdtemp(prefix=f"lm10-room-{os.getpid()}-"))
        atexit.register(shutil.rmtree, root, True)
        (root / "transformers").mkdir()
        (root / "transformers" / "__init__.py").write_text(
            OUTSIDE_THE_ROOM.format(name="transformers")
        )
        (root / "lmcourse").mkdir()
        (root / "lmcourse" / "__init__.py").write_text(LMCOURSE_IN_THE_ROOM)
        shutil.copyfile(offlimits.__file__, root / "lmcourse" / "offlimits.py")
        shutil.copyfile(standins.__file__, root / "lmcourse" / "standins.py")
        for path in (root, root / "transformers", root / "lmcourse"):
            path.chmod(0o755)
        _stand_ins = {
            Path(transformers.__file__).resolve().parent: root / "transformers",
            Path(lmcourse.__file__).resolve().parent: root / "lmcourse",
        }
    return _stand_ins


_stand_ins = None


def weight_cache():
    """The course's SmolLM2 cache folder, if present (bound read-only for lab L3)."""
    try:
        from lmcourse.pretrained import cache_root
    except ImportError:
        return None
    root = cache_root()
    return root.resolve() if root.is_dir() else None


# System V IPC objects (shared memory segments, semaphore sets, message queues) are memory that
# no process's address-space limit counts and that outlives every process that made it: a
# submission could hold gigabytes of the grader's machine that way, and leave them to the next
# student a warm sandbox grades. Nothing a kernel, torch or the course needs makes one (they use
# POSIX shared memory, files in the capped /dev/shm), so a seccomp filter refuses to create
# them: shmget, semget and msgget fail with ENOSYS. The same filter refuses the kernel's
# keyrings (add_key, request_key, keyctl): keys belong to a uid of the machine, not to a
# namespace, so a submission could link the grader's user keyring (`_uid.<uid>`) into a session
# keyring of its own and read every key in it, what the instructor's logins keep there (a
# Kerberos ticket, a stored passphrase); nothing graded needs one. And POSIX message queues
# (mq_open): they outlive their processes in the sandbox's IPC namespace, which a warm sandbox
# keeps from one submission to the next, and no folder it empties lists them (no /dev/mqueue):
# a queue left by one submission was read by the next (a stash of the hidden tests' inputs, in
# a classmate's feedback); nothing graded uses one (multiprocessing's locks are /dev/shm files).
# And prlimit64, setpriority, sched_setattr and ioprio_set on any process but the caller (the
# kernel lets a process of the same uid lower another's limits and priority for good, dumpable
# or not): a submission lowered the warm executor's limits, or its priority to nice 19, which
# every later kernel inherits: the classmates graded after it in that worker lost their
# notebooks, or crawled under the other workers' load. Nor SCHED_IDLE, which no process of the
# sandbox could leave again (its other scheduling policies and CPUs, which she may change too,
# the executor sets back for each notebook: sandbox_exec.serve).
# Syscalls of an architecture the filter does not know (a 32-bit program, whose `ipc`
# multiplexer would get around it) all fail (grading/host/seccomp.py).
def ipc_filter():
    """The classic BPF program (struct sock_filter[]) bwrap's --seccomp installs."""
    calls = {
        arch: numbers + seccomp.MQUEUE[arch] + seccomp.KEYRINGS[arch]
        for arch, numbers in seccomp.SYSV_IPC.items()
    }
    return seccomp.refusing(calls, own=seccomp.OWN_PROCESS, idle=seccomp.IDLE_POLICY)


# What the executor needs to give each notebook namespaces of its own: make them
# (CAP_SYS_ADMIN), bring up its loopback (CAP_NET_ADMIN), empty its bounding set (CAP_SETPCAP).
OWN_NAMESPACES = (
    *("--cap-add", "CAP_SYS_ADMIN"),
    *("--cap-add", "CAP_NET_ADMIN"),
    *("--cap-add", "CAP_SETPCAP"),
)


# The grader's settings of torch's threads that the sandbox's kernel keeps (its environment is
# otherwise cleared): how many (a batch of several workers gives each one thread: workers.py),
# and how an idle one waits. OMP_WAIT_POLICY=PASSIVE puts it to sleep where OpenMP's default
# spins for a while: on a machine busier than its cores (another worker, a classmate's run) a
# spinning thread burns the core its partner waits for; LM10-L3's kernel took 1.43 s of CPU a
# submission spinning and 1.09 s passive, beside two busy processes on 2 cores. No result
# changes, only how idle threads wait.
THREAD_SETTINGS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")
# Libraries whose native threads would run her Python code, each made to run it in the calling
# thread: a thread that enters Python from native code during a test's call (tokenizers' rayon
# workers running her own pre-tokenizer in `encode_batch`) has a thread state made for it, which
# the off-limits guard never hooked, so a declared reference it called went unseen (the
# thirty-seventh hub tester).
NATIVE_THREADS = {"TOKENIZERS_PARALLELISM": "false"}
# torch.compile runs her function uncompiled (TorchDynamo off), as eager torch computes it. An
# honest torch.compile whose compilation fell in a graded call ran inductor's C++ compiler, a
# program the off-limits guard cannot see into, so the part scored 0 ("a program started
# during the call": the fortieth and seventy-eighth hub testers); and what dynamo traces runs
# beneath the guard's hook. Her source's torch.compile is still flagged (submission_checks):
# in her own kernel, Validate's, it compiles. Changing it back needs `os.environ` or
# `torch._dynamo`, flagged.
UNCOMPILED = {"TORCH_COMPILE_DISABLE": "1"}
KERNEL_SETTINGS = {**NATIVE_THREADS, **UNCOMPILED}


def bwrap_command(bwrap_path, limits, seccomp_fd=None, program=None):
    """The command that runs `program` in the sandbox; by default the executor, which alone
    holds three capabilities there (OWN_NAMESPACES), in the sandbox's own user namespace, to
    give each notebook new PID, network and IPC namespaces and then drop every capability
    before anything of it runs (sandbox_exec.own_namespaces)."""
    executor = program is None
    program = program or (PYTHON, "/opt/grader/sandbox_exec.py")
    home = "/home/student"
    # The writable folders are memory file systems capped in bytes and in files, mounted by
    # the launcher before bubblewrap starts (grading/host/tmpfs.py: bwrap's own --tmpfs takes
    # no file count, and a submission's empty files took the machine's memory without bound).
    # Where this machine lets bubblewrap alone make its namespaces, bwrap's own, said.
    places = {"shm": "/dev/shm", "tmp": "/tmp", "home": home}
    writable = tmpfs.staging(places)
    if why := tmpfs.problem(writable.values()):
        _say_once(
            "the sandbox's home, /tmp and /dev/shm are capped in bytes but not in files on this "
            f"machine ({why}): a submission's empty files take the machine's memory, about "
            "1 KiB each, until its notebook ends. Let the grader's Python make a user "
            "namespace and mount a tmpfs in it, as bubblewrap does, to cap them."
        )
        launcher = []
        folders = [
            word
            for place in places.values()
            for word in ("--size", str(limits.home_bytes), "--tmpfs", place)
        ]
    else:
        launcher = tmpfs.launcher(writable.values(), limits.home_bytes, limits.files)
        folders = [
            word
            for name, place in places.items()
            for word in ("--bind", str(writable[name]), place)
        ]
    command = [
        *launcher,
        bwrap_path,
        "--unshare-all",
        # no user namespace inside: in one, the submission is "root" and reaches the parts of
        # the kernel only root reaches (netfilter, many file systems' mounts), where most local
        # privilege escalations are found; --unshare-all only tries one for the sandbox itself
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        # the executor is the sandbox's init, which no process of the namespace can stop or
        # kill (the kernel drops a signal to its init that it has no handler for): as pid 2 a
        # submission's SIGSTOP froze it after her notebook, and the classmate the warm
        # sandbox graded next timed out with nothing run
        "--as-pid-1",
        "--new-session",
        "--cap-drop",
        "ALL",
        *(OWN_NAMESPACES if executor else ()),
        "--hostname",
        "sandbox",
        "--clearenv",
        "--proc",
        "/proc",
        # its sysctls read-only: bubblewrap covers /proc/sys only where it finds it writable
        # (access W_OK), which it did not here, and a grader run as root (this machine's CI, a
        # root container, `sudo make autograde`) runs the submission as the machine's uid 0,
        # whom the kernel lets write any sysctl without a capability: kernel.core_pattern, a
        # program the machine's root runs at the next crash
        *("--ro-bind", "/proc/sys", "/proc/sys"),
        "--dev",
        "/dev",
        # /dev is a memory file system of half the machine's RAM, read-only below (finish);
        # only its /dev/shm is writable, capped like /tmp
        *folders,
    ]
    # the sandbox's own root and /dev: nothing to fill there (each remount is of that mount
    # alone: /dev/shm, /tmp and the home stay writable); and /dev/pts, whose root is the
    # sandbox user's: its mode and times carried a submission's marks to the notebook graded
    # next, and its terminals came from the machine's one pool, the hub's terminals' too
    # (read-only, /dev/ptmx opens no more: nothing graded needs a terminal)
    finish = ["--remount-ro", "/dev", "--remount-ro", "/dev/pts", "--remount-ro", "/"]
    for system in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        path = Path(system)
        if path.is_symlink():
            command += ["--symlink", os.readlink(path), system]
        elif path.is_dir():
            command += ["--ro-bind", system, system]
    if Path("/etc/ld.so.cache").exists():
        command += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    for folder in library_folders():
        command += ["--ro-bind", str(folder), str(folder)]
    if limits.room:
        for real, stand_in in room_stand_ins().items():
            command += ["--ro-bind", str(stand_in), str(real)]
    cache = weight_cache()
    if cache:
        command += [
            "--ro-bind",
            str(cache),
            "/opt/lmcourse-cache",
            "--setenv",
            "LMCOURSE_CACHE",
            "/opt/lmcourse-cache",
        ]
    command += [
        "--ro-bind",
        str(EXECUTOR),
        "/opt/grader/sandbox_exec.py",
        "--ro-bind",
        str(AGENT),
        "/opt/grader/sandbox_agent.py",
        "--chdir",
        home,
        "--setenv",
        "HOME",
        home,
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "PATH",
        f"{Path(PYTHON).parent}:/usr/bin:/bin",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "PYTHONDONTWRITEBYTECODE",
        "1",
        "--setenv",
        "MPLBACKEND",
        "agg",
    ]
    for name in THREAD_SETTINGS:
        if name in os.environ:
            command += ["--setenv", name, os.environ[name]]
    for name, value in KERNEL_SETTINGS.items():
        command += ["--setenv", name, value]
    if seccomp_fd is not None:
        command += ["--seccomp", str(seccomp_fd)]
    return command + finish + ["--", *program]


def probe():
    """ "" if bwrap can make this module's sandbox here, else why not (its own words)."""
    path = bwrap()
    if not path:
        return ""
    command = bwrap_command(path, Limits(), program=(PYTHON, "-c", "pass"))
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{type(error).__name__}: {error}"
    if done.returncode == 0:
        return ""
    return (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}")[:300]


def sweep_groups():
    """Remove the pids cgroups of grader processes that died (killed at a timeout) before
    they could remove their own; kill whatever is still in them first."""
    for parent in (*CPU_PARENTS, Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        for path in parent.glob("lm10-grade-*"):
            try:
                owner = int(path.name.split("-")[2])
                os.kill(owner, 0)
                continue  # its grader is alive and will remove it
            except (ValueError, IndexError):
                continue
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
            group = ProcessGroup.__new__(ProcessGroup)
            group.path, group.cpu = path, None
            with contextlib.suppress(OSError):
                group.close()


LEFTOVERS = ("home", "mounts", "room")  # lm10-<what>-<pid>-... in the temporary folder


def sweep_homes():
    """Remove what a grader that died before it could (killed at a timeout, or the batch
    stopped) left in the temporary folder: the homes of unisolated runs, the empty folders where
    sandboxes mount their own (tmpfs.staging), and the room's stand-ins (room_stand_ins). Each
    is named lm10-<what>-<pid of its grader>-...; a folder whose grader still runs is kept."""
    temporary = Path(tempfile.gettempdir())
    for path in itertools.chain(*(temporary.glob(f"lm10-{what}-*") for what in LEFTOVERS)):
        try:
            os.kill(int(path.name.split("-")[2]), 0)
            continue  # its grader is alive
        except (ValueError, IndexError, PermissionError):
            continue
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)


# The cgroup v1 CPU hierarchy, where the machine has one (cgroup v2 has its controllers in the
# pids group's folder, /sys/fs/cgroup, where the machine enables them).
CPU_PARENTS = (Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup/cpu,cpuacct"))


def cpu_parent():
    """The cgroup v1 CPU hierarchy this process may make cgroups in (root), or None: a run's
    (ProcessGroup) and a hub server's (grading/hub/jupyterhub_config.py, cpu_group)."""
    return next(
        (p for p in CPU_PARENTS if (p / "cgroup.procs").exists() and os.access(p, os.W_OK)), None
    )


class ProcessGroup:
    """A pids cgroup for one run, where the grader may make one (root, cgroup v1 or v2): it
    caps the number of processes and threads (RLIMIT_NPROC does not bind root) and lets the
    grader kill every process of the run, however detached. Elsewhere RLIMIT_NPROC alone.

    And, on cgroup v1, a CPU cgroup for the run: the scheduler shares the cores between the
    machine's top cgroups and, in its root one, between sessions (autogroups), so a submission
    whose processes each made a session of their own (`setsid`, `start_new_session`) took a
    share per process: 200 of them starved the classmate graded beside it until her cell ran
    out of time (the nineteenth hub tester). In a cgroup of its own a run gets one share,
    however many sessions it makes."""

    def __init__(self, limit):
        self.path = self.cpu = None
        if parent := cpu_parent():
            path = parent / f"lm10-grade-{os.getpid()}-{id(self):x}"
            with contextlib.suppress(OSError):
                path.mkdir()
                self.cpu = path
        for parent in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
            if not (parent / "cgroup.procs").exists() or not os.access(parent, os.W_OK):
                continue
            path = parent / f"lm10-grade-{os.getpid()}-{id(self):x}"
            try:
                path.mkdir()
                (path / "pids.max").write_text(str(limit))
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            self.path = path
            break

    def join(self):
        """In the child, before exec: move into the cgroups."""
        for path in (self.cpu, self.path):
            if path:
                (path / "cgroup.procs").write_text(str(os.getpid()))

    def close(self):
        """Kill every process still in the cgroups, then remove them."""
        for path in filter(None, (self.path, self.cpu)):
            for _ in range(50):
                pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.1)
            with contextlib.suppress(OSError):
                path.rmdir()


def _hard(which):
    hard = resource.getrlimit(which)[1]
    return hard if hard != resource.RLIM_INFINITY else sys.maxsize


def set_limits(limits, group=None, processes=True):
    """The limits of the process about to exec (bwrap, or the executor unisolated).
    `processes=False`: no RLIMIT_NPROC here, where the executor sets it itself inside the
    sandbox (sandbox_exec.main). The kernel counts that limit over every process and thread
    of the uid in the user namespace it is checked in: set before bubblewrap, in the machine's
    own, it counted every task of the instructor's user, so a submission holding 510 threads
    stopped each classmate's sandbox graded beside it ("Creating new namespace failed"), and
    an instructor whose desktop runs 512 tasks could grade nothing. Set inside, it counts the
    sandbox's own."""

    def apply():
        if group:
            group.join()
        for name, value in (
            (resource.RLIMIT_AS, limits.memory_bytes),
            (resource.RLIMIT_FSIZE, limits.file_bytes),
            (resource.RLIMIT_NPROC, limits.processes if processes else None),
            (resource.RLIMIT_CPU, limits.cpu_seconds),
            (resource.RLIMIT_CORE, 0),
            # never above the grader's own hard limit, which only root may raise
            (resource.RLIMIT_NOFILE, min(limits.open_files, _hard(resource.RLIMIT_NOFILE))),
            # no real-time policy and no nice below 0, whatever the grader's own limits give
            # (a desktop's audio group: rtprio 95, nice -19): with them a submission may run
            # SCHED_FIFO threads, or put its autogroup at nice -19 (/proc/self/autogroup), and
            # take the cores from the classmates graded beside it (the twentieth hub tester)
            *((getattr(resource, n, None), 0) for n in ("RLIMIT_RTPRIO", "RLIMIT_NICE")),
        ):
            if name is not None and value is not None:  # None: not this system's (not Linux)
                resource.setrlimit(name, (value, value))
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)

    return apply


@dataclass
class Execution:
    notebook: str  # the executed notebook's JSON, "" when none came back
    returncode: int
    log: str  # the tail of what the sandbox printed (untrusted: the kernel writes there too)
    isolated: bool
    timed_out: bool = False  # still running after total_timeout: stopped
    failure: str = ""  # why no notebook came back, where the sandbox said (its executor died)


class Sandbox:
    """One sandbox process (sandbox_exec.py's `serve`) and the one protocol to it: frames of
    JSON on two pipes. With bubblewrap it is long-lived: it imported the lab's modules once
    and runs one notebook after another, each in a kernel forked from it, and between
    notebooks kills every process left in it and empties its home, /tmp and /dev/shm. A
    notebook that runs past its time limit takes the sandbox down; the next one starts a new
    sandbox. Without isolation (the instructor's choice) it runs one notebook, as a plain
    process in a temporary home, and is closed after it."""

    def __init__(self, imports="", limits=None, isolated=True):
        self.imports, self.limits, self.isolated = imports, limits or Limits(), isolated
        self.process, self.failure = None, ""

    def start(self):
        # The log is a file without a name: nothing of it stays on the host, even when the
        # grader is killed. Without isolation the home is a folder, named after this process
        # so that the next batch removes it if this one could not (sweep_homes).
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (kept while the sandbox runs)
        self.scratch = None
        requests_r, requests_w = os.pipe()
        results_r, results_w = os.pipe()
        fds = [str(requests_r), str(results_w)]
        passed = [requests_r, results_w]
        rules = None
        if self.isolated:
            rules = tempfile.TemporaryFile()  # noqa: SIM115 (bwrap reads it as it starts)
            rules.write(ipc_filter())
            rules.seek(0)
            passed.append(rules.fileno())
            command = bwrap_command(bwrap(), self.limits, rules.fileno())
            processes = f"--processes={self.limits.processes}"  # set inside: set_limits
            command, cwd, env = command + ["--serve", *fds, processes], "/", {}
        else:
            self.scratch = tempfile.TemporaryDirectory(prefix=f"lm10-home-{os.getpid()}-")
            home = Path(self.scratch.name)
            command, cwd = [PYTHON, str(EXECUTOR), "--unisolated", *fds], str(home)
            env = {
                k: v
                for k, v in os.environ.items()
                if k in ("PATH", "LANG", "LMCOURSE_CACHE", *THREAD_SETTINGS)
            }
            env.update(HOME=str(home), TMPDIR=str(home), MPLBACKEND="agg", **KERNEL_SETTINGS)
            if self.limits.room:  # the stand-ins come first on the path (no mount without bwrap)
                env["PYTHONPATH"] = str(next(iter(room_stand_ins().values())).parent)
        self.group = ProcessGroup(self.limits.processes)
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            pass_fds=passed,
            preexec_fn=set_limits(self.limits, self.group, processes=not self.isolated),
            start_new_session=True,
        )
        os.close(requests_r)
        os.close(results_w)
        if rules is not None:
            rules.close()
        self.requests = os.fdopen(requests_w, "wb", buffering=0)
        self.results = os.fdopen(results_r, "rb", buffering=0)
        self.channel = frames.Channel(self.results, self.requests, self.limits.file_bytes)
        frames.send_frame(self.requests, self.imports.encode())
        self.ready = False

    def call(self, payload, deadline):
        """One call of the student's code, for a test: (the sandbox's reply, JSON text, and
        whether it is the executor's own stop rather than the kernel's answer)."""
        self.channel.send({"call": payload})
        message = self.channel.receive(deadline)
        if isinstance(message.get("died"), str):
            self.failure = message["died"][:300]
            raise EOFError(self.failure)
        if not isinstance(message.get("reply"), str):
            raise EOFError("the sandbox answered a call with something else")
        return message["reply"], message.get("own") is True

    def close(self):
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.group.close()
        for stream in (self.requests, self.results, self.log):
            with contextlib.suppress(OSError):
                stream.close()
        if self.scratch is not None:
            self.scratch.cleanup()
        self.process = None

    def execute(self, notebook_json, cell_timeout, total_timeout, on_test=None):
        """Run one prepared notebook. At each test cell the sandbox reaches, `on_test(index,
        call, deadline)` runs the test, `call(payload)` running one call of the student's
        code in the sandbox. An exception from `on_test` closes the sandbox and propagates."""
        if self.process is not None and self.process.poll() is not None:
            self.close()  # it ended after the last notebook (see sandbox_exec.serve): anew
        if self.process is None:
            self.start()
        # the log holds this notebook's lines alone: a warm sandbox empties it for each
        # (sandbox_exec.serve), a cold one is new
        start = 0
        deadline = time.monotonic() + total_timeout
        notebook, timed_out, self.failure = "", False, ""
        try:
            if not self.ready:  # the imports are not the student's time: READY, then the clock
                if frames.read_exact(self.results, 6, time.monotonic() + 600) != b"READY\n":
                    raise EOFError
                self.ready = True
                deadline = time.monotonic() + total_timeout
            self.channel.send(
                {
                    "notebook": notebook_json,
                    "cell_timeout": cell_timeout,
                    "limit": self.limits.output_chars,
                }
            )
            while True:
                message = self.channel.receive(deadline)
                if isinstance(message.get("done"), str):
                    notebook = message["done"]
                    break
                if isinstance(message.get("died"), str):
                    self.failure = message["died"][:300]
                    break
                if type(message.get("test")) is not int or on_test is None:
                    raise EOFError("the sandbox sent an unexpected message")
                on_test(message["test"], lambda payload: self.call(payload, deadline), deadline)
                self.channel.send({"next": True})
        except TimeoutError:
            timed_out = True
        except (EOFError, OSError, ValueError):
            pass  # the sandbox died: no notebook; the log says why
        except BaseException:
            self.close()
            raise
        self.log.seek(max(start, os.fstat(self.log.fileno()).st_size - 4000))
        tail = self.log.read().decode("utf-8", "replace")
        returncode = self.process.poll()
        if timed_out or returncode is not None or not notebook or not self.isolated:
            self.close()
        return Execution(
            notebook,
            -signal.SIGKILL if timed_out else (returncode or 0),
            tail,
            isolated=self.isolated,
            timed_out=timed_out,
            failure=self.failure,
        )


_warm = None
log = logging.getLogger(__name__)
_said: set[str] = set()


def _say_once(message: str) -> None:
    """A warning for the instructor's log, once per grading process."""
    if message not in _said:
        _said.add(message)
        log.warning(message)


def differences(a: Limits, b: Limits) -> str:
    """'name a -> b' for every limit in which `b` differs from `a`."""
    return ", ".join(
        f"{f.name} {getattr(a, f.name)} -> {getattr(b, f.name)}"
        for f in dataclasses.fields(Limits)
        if getattr(a, f.name) != getattr(b, f.name)
    )


def warm(imports, limits=None):
    """Run every later `execute` in one long-lived Sandbox that imports `imports` (Python
    source: the lab's import statements) once; only with bubblewrap (its PID namespace is
    what lets the warm process stop everything a student left behind)."""
    global _warm
    if bwrap():
        _warm = Sandbox(imports, limits)
    return _warm


def cool():
    """Stop the warm sandbox, if any."""
    global _warm
    if _warm is not None:
        _warm.close()
    _warm = None


def execute(notebook_json, cell_timeout, total_timeout, limits=None, on_test=None):
    """Run `notebook_json` (the prepared notebook) in the sandbox; return an Execution."""
    limits = limits or Limits()
    if _warm is not None and limits == _warm.limits:
        return _warm.execute(notebook_json, cell_timeout, total_timeout, on_test)
    if _warm is not None:  # never silent: a cold sandbox imports the lab's packages again
        log.warning(
            "this submission runs in a cold sandbox: its limits differ from the warm "
            "sandbox's (%s); set both from c.SandboxLimits (SandboxLimits)",
            differences(_warm.limits, limits),
        )
    path = bwrap()
    if path is None:
        require()  # raises, unless the instructor chose to grade without isolation
    box = Sandbox("", limits, isolated=bool(path))
    try:
        return box.execute(notebook_json, cell_timeout, total_timeout, on_test)
    finally:
        box.close()
