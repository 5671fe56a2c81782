"""What one submission can leave to the next in a warm grading sandbox (grading/host/sandbox.py:
`make autograde`'s workers grade one submission after another in one long-lived sandbox, all as
the instructor's uid), found by the fourteenth hub tester (issue 39). Between two notebooks the
sandbox kills every process and empties its writable folders; these are what that did not
reach: the process that grades the next notebook, and the log every process there writes to.
Each test grades her notebook, then a classmate's honest one, in the same real sandbox."""

import copy
import json
import os

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from grading.host import sandbox, submission_checks

# each test starts a sandbox: bubblewrap required, and slow (SLOW_MODULES: tests/conftest.py)
pytestmark = pytest.mark.usefixtures("sandbox_installed")


@pytest.fixture(scope="module", autouse=True)
def warm_grader(sandbox_installed):
    """One warm sandbox and one warm trusted test process for every test of this module that
    grades through SandboxedExecute, as `make autograde`'s workers grade one submission after
    another (grading/batch/workers.py): each test's notebook is a neighbour of the ones graded
    before it, in the same sandbox, under the limits SandboxedExecute reads. Tests that start a
    Sandbox of their own (grade_after) are unchanged."""
    from grading.host import trusted_tests

    sandbox.warm("import torch", sandbox.SandboxLimits().limits())
    trusted_tests.warm("import torch")
    try:
        yield
    finally:
        trusted_tests.cool()
        sandbox.cool()


HONEST = "answer = 6 * 7\nprint('classmate', answer)\n"


def notebook(source):
    return nbformat.writes(new_notebook(cells=[new_code_cell(source)]))


def outputs(run):
    return json.loads(run.notebook)["cells"][0]["outputs"] if run.notebook else None


def stdout(run):
    return "".join(o.get("text", "") for o in outputs(run) or [] if o["output_type"] == "stream")


def grade_after(source, classmate=HONEST):
    """Her notebook, then the classmate's, in one warm sandbox: both runs and whether the same
    sandbox process graded both."""
    box = sandbox.Sandbox("", sandbox.Limits())
    try:
        hers = box.execute(notebook(source), 20, 30)
        process = box.process
        theirs = box.execute(notebook(classmate), 20, 30)
        return hers, theirs, box.process is process
    finally:
        box.close()


# Her kernel signals each process above it: its parent, her notebook's executor (the first of
# her notebook's own PID namespace), and the sandbox's init, which grades every notebook and
# which /proc still shows as pid 1 (through a pidfd of /proc/1); SIGINT too, which Python's
# own handler would have turned into the grader's KeyboardInterrupt.
STOP_THE_GRADER = """
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
said = []
for sig in (signal.SIGSTOP, signal.SIGINT):
    os.kill(os.getppid(), sig)
    init = os.open("/proc/1", os.O_RDONLY | os.O_DIRECTORY)
    said.append(libc.syscall(424, init, sig, None, 0) == 0 or os.strerror(ctypes.get_errno()))
    os.close(init)
print("sent to", os.getppid(), said)
"""


def test_no_submission_stops_the_sandbox_that_grades_the_next():
    """Her SIGSTOP to the sandbox's executor (pid 2 under bubblewrap's init) after her
    notebook froze it: the classmate's notebook, next in the same sandbox, timed out with nothing
    run (make autograde records a timeout for her). The executor is now the sandbox's init
    (--as-pid-1), which ignores SIGINT, and each notebook runs in a PID namespace of its own
    (sandbox_exec.own_namespaces): her signals to her own notebook's executor, the first of
    her namespace, do nothing, and the sandbox's init is out of her namespace (EINVAL: 424 is
    pidfd_send_signal on x86-64 and aarch64)."""
    hers, theirs, same = grade_after(STOP_THE_GRADER)
    assert stdout(hers) == "sent to 1 ['Invalid argument', 'Invalid argument']\n", outputs(hers)
    assert not theirs.timed_out and stdout(theirs) == "classmate 42\n", (theirs, outputs(theirs))
    assert same  # nothing of hers ended the sandbox either


# ipykernel points the kernel's fds 1 and 2 at its own pipes but keeps a copy of the real ones:
# the sandbox's log, one file for every notebook the sandbox runs, capped by RLIMIT_FSIZE.
FILL_THE_LOG = """
import os, sys
log = sys.stdout._original_stdstream_copy
written, block = 0, b"mallory-was-here " * (1 << 16)
try:
    while True:
        written += os.write(log, block)
except OSError as error:
    print("full", error.errno, written >= 60 << 20)
"""


def test_no_submission_fills_the_log_the_next_kernel_writes_to():
    """Her notebook wrote the sandbox's log up to the file-size limit (64 MiB): every kernel
    forked after hers then failed to write its first line and died before answering, so each
    classmate graded next in that sandbox scored 0 ('Kernel died before replying to
    kernel_info'). The sandbox now empties its log for each notebook, once nothing of the last
    one is left to write; and the classmate's log tail holds nothing of hers."""
    hers, theirs, same = grade_after(FILL_THE_LOG)
    assert stdout(hers) == "full 27 True\n", outputs(hers)  # EFBIG: she reached the limit
    assert stdout(theirs) == "classmate 42\n", (theirs, outputs(theirs))
    assert "mallory-was-here" not in theirs.log and same, theirs.log[-300:]


# A POSIX message queue outlives its process in the sandbox's IPC namespace, which the warm
# sandbox keeps from one notebook to the next; nothing it empties lists queues (no /dev/mqueue).
QUEUE = """
import ctypes, os
rt = ctypes.CDLL("librt.so.1", use_errno=True)
class Attributes(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("most", ctypes.c_long), ("size", ctypes.c_long),
                ("now", ctypes.c_long), ("spare", ctypes.c_long * 4)]
"""
LEAVE = (
    QUEUE
    + """
queue = rt.mq_open(b"/stash", os.O_CREAT | os.O_RDWR, 0o600,
                   ctypes.byref(Attributes(0, 10, 1024, 0)))
print("left", queue >= 0 and rt.mq_send(queue, b"hidden inputs: 3, 1, 4", 22, 0) == 0,
      os.strerror(ctypes.get_errno()))
"""
)
TAKE = (
    QUEUE
    + """
queue, found = rt.mq_open(b"/stash", os.O_RDWR), ctypes.create_string_buffer(1024)
print("found", queue >= 0 and found.raw[: rt.mq_receive(queue, found, 1024, None)])
"""
)


def test_no_submission_leaves_a_message_queue_to_the_next():
    """Her notebook left a queue with a message (what her code had seen of the hidden tests'
    inputs, say), and the notebook graded next in that sandbox read it, into its own outputs
    and so its feedback. The sandbox's seccomp filter now refuses mq_open (ENOSYS), as it
    refuses System V's message queues."""
    box = sandbox.Sandbox("", sandbox.Limits())
    try:
        left, taken = (stdout(box.execute(notebook(source), 20, 30)) for source in (LEAVE, TAKE))
    finally:
        box.close()
    assert taken == "found False\n", taken
    assert left == "left False Function not implemented\n", left


# The sandbox's user owns its writable folders' roots: she takes her own rights to each.
LOCK_THE_FOLDERS = """
import os
for top in ("/home/student", "/tmp", "/dev/shm"):
    open(os.path.join(top, "left"), "w").close()
    os.chmod(top, 0)
print("locked", sorted(oct(os.stat(top).st_mode & 0o777) for top in ("/tmp", "/dev/shm")))
"""


def test_no_submission_keeps_the_sandbox_from_emptying_its_folders():
    """Her notebook left a file in each writable folder and took away their modes: emptying
    them failed (PermissionError on /home/student), the sandbox ended with it, and the classmate
    graded next lost her notebook ('the sandbox returned no executed notebook'). The sandbox
    now gives each folder its first mode back before emptying it; the classmate finds none of
    her files."""
    look = "import os\nprint([os.listdir(t).count('left') for t in ('/home/student', '/tmp')])"
    hers, theirs, same = grade_after(LOCK_THE_FOLDERS, look)
    # (IPython's history thread, its database in the home she locked, may say so in between)
    assert "['0o0', '0o0']" in stdout(hers), outputs(hers)
    assert stdout(theirs) == "[0, 0]\n" and same, (theirs, outputs(theirs))


# The kernel lets a process lower the limits of any other of its uid, dumpable or not: hers
# lowers the grader's (the sandbox's init), which every later kernel would inherit. Her own
# limits are hers to set (setrlimit: prlimit64 on pid 0).
LOWER_THE_GRADERS_LIMITS = """
import resource
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
try:
    resource.prlimit(1, resource.RLIMIT_AS, (64 << 20, 64 << 20))
    resource.prlimit(1, resource.RLIMIT_NOFILE, (12, 12))
    print("lowered")
except OSError as error:
    print("refused", error.errno)
"""


def test_no_submission_lowers_the_limits_of_the_next():
    """Her kernel lowered the warm executor's address space and descriptors (prlimit64 on pid
    1): the executor failed at its next fork, the sandbox ended, and the classmate graded next
    lost her notebook (played; with the address space alone every later kernel would start
    under 64 MiB). The sandbox's seccomp filter allows prlimit64 on the caller itself only."""
    hers, theirs, same = grade_after(LOWER_THE_GRADERS_LIMITS)
    assert stdout(theirs) == "classmate 42\n" and same, (theirs, outputs(theirs))
    assert stdout(hers) == "refused 38\n", outputs(hers)  # ENOSYS


# The same for the grader's priority and scheduling: a lower priority (nice 19), one CPU, the
# idle policy, each inherited by every later kernel.
SLOW_THE_GRADER = """
import os
said = []
for name, call in (
    ("nice", lambda: os.setpriority(os.PRIO_PROCESS, 1, 19)),
    ("cpus", lambda: os.sched_setaffinity(1, {min(os.sched_getaffinity(1))})),
    ("idle", lambda: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0))),
):
    try:
        call()
        said.append(name)
    except OSError as error:
        said.append(f"{name} refused {error.errno}")
print(said, len(os.sched_getaffinity(1)), os.sched_getscheduler(1))
"""
LOOK = "import os\nprint(os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)),\n" + (
    "      os.sched_getscheduler(0))"
)


def test_no_submission_slows_the_kernels_after_it():
    """Her kernel set the warm executor to nice 19, one CPU and SCHED_IDLE (a process may lower
    another of its uid's priority, dumpable or not): every later kernel ran so, and under the
    other workers' load of `make autograde --jobs N` crawled to its time limit (played: the next
    kernel at nice 19, on CPU 0, SCHED_IDLE). Neither a nice value nor the idle policy can be
    undone without privilege: the seccomp filter allows setpriority (and sched_setattr) on the
    caller only and refuses SCHED_IDLE; the CPUs (and other policies), which libzmq sets on its
    own threads by their ids, the executor sets back for each notebook."""
    hers, theirs, same = grade_after(SLOW_THE_GRADER, LOOK)
    cpus = sorted(os.sched_getaffinity(0))
    # she set what she could: one CPU (where the grader has more)
    assert stdout(hers) == "['nice refused 38', 'cpus', 'idle refused 38'] 1 0\n", outputs(hers)
    assert len(cpus) > 1  # else her one CPU would be every CPU: the test could not fail
    nice = os.getpriority(os.PRIO_PROCESS, 0)  # the grader's, which the sandbox started with
    policy = os.sched_getscheduler(0)
    assert stdout(theirs) == f"{nice} {cpus} {policy}\n" and same, (theirs, outputs(theirs))


# Her notebook writes into what the sandbox's namespaces keep between notebooks: the PID
# counter (200 processes started and ended) and the network table (50 loopback connections she
# closes first, each left in TIME_WAIT for 60 s: their ports could carry what she chose, as the
# fourteenth hub tester's did). Each notebook prints its kernel's pid and the TIME_WAIT sockets
# it sees (/proc/net/tcp, state 06).
NAMESPACES = """
import os, socket
def waiting():
    with open("/proc/net/tcp") as table:
        return sum(line.split()[3] == "06" for line in table.readlines()[1:])
print("kernel", os.getpid(), "waiting", waiting())
"""
LEAVE_IN_THE_NAMESPACES = (
    NAMESPACES
    + """
for _ in range(200):
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
server = socket.create_server(("127.0.0.1", 0))
for _ in range(50):
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()
    client.close()
    accepted.close()
print("left", waiting() >= 50)
"""
)


def test_nothing_of_her_namespaces_reaches_the_next():
    """Each notebook runs in new PID, network and IPC namespaces (sandbox_exec.own_namespaces):
    the notebook graded after hers finds its kernel at the same pid as hers and no TIME_WAIT
    socket of hers; in the sandbox's own namespaces, as before, both carried what she chose."""
    hers, theirs, same = grade_after(LEAVE_IN_THE_NAMESPACES, NAMESPACES)
    first, left = stdout(hers).splitlines()
    assert left == "left True", outputs(hers)
    assert stdout(theirs).splitlines() == [first], (first, outputs(theirs))
    assert same


# What a submission may set on the folders the sandbox empties, which emptying them does not
# reach: a user.* attribute (64 KiB of her choosing) and its times on each, and a default ACL
# that gives every file made there later no rights for its owner (the next kernel's among them).
MARK_THE_FOLDERS = """
import os, struct
entries = (struct.pack("<HHI", tag, 0, 0xFFFFFFFF) for tag in (1, 4, 32))  # owner, group, other
nothing = struct.pack("<I", 2) + b"".join(entries)  # each with no rights
for top in ("/home/student", "/tmp", "/dev/shm"):
    os.setxattr(top, "user.stash", b"hidden inputs: 3, 1, 4")
    os.utime(top, ns=(4_000_000_000_000_000_314, 4_000_000_000_000_000_314))
    os.setxattr(top, "system.posix_acl_default", nothing)
print("marked", sorted(os.listxattr("/tmp")), os.stat("/dev/shm").st_mtime_ns)
"""
READ_THE_MARKS = HONEST + (
    "import os\n"
    "print([os.listxattr(top) for top in ('/home/student', '/tmp', '/dev/shm')],\n"
    "      [os.stat(top).st_mtime_ns % 1000 == 314 for top in ('/tmp', '/dev/shm')])\n"
)


def test_no_submission_leaves_marks_on_the_folders_it_empties():
    """Her notebook set an attribute (user.stash) and far-future times on the home, /tmp and
    /dev/shm, which emptying them left: the notebook graded next read both back, into its
    outputs and feedback (a storage channel from one submission to the next, as the message
    queue was); and a default ACL with no rights, which every file made there later inherited:
    the next kernel could not read its own files, and the classmate graded next lost her
    notebook ("the grader's executor ... was stopped"). The sandbox now strips each folder's
    extended attributes and gives it its first mode and times back (sandbox_exec.clear)."""
    hers, theirs, same = grade_after(MARK_THE_FOLDERS, READ_THE_MARKS)
    marked = "marked ['system.posix_acl_default', 'user.stash'] 4000000000000000314\n"
    assert stdout(hers) == marked, outputs(hers)
    clean = "classmate 42\n[[], [], []] [False, False]\n"
    assert stdout(theirs) == clean, (theirs, outputs(theirs))
    assert same


# /dev/pts, bubblewrap's devpts in the sandbox: its root is the sandbox user's (the
# namespace's uid 0 where the grader is root), and nothing between notebooks empties it or
# gives its mode and times back.
MARK_THE_TERMINALS = """
import os
try:
    os.chmod("/dev/pts", 0o1777)
    os.utime("/dev/pts", ns=(314 * 10**9, 4 * 10**18 + 314))
    said = "marked"
except OSError as error:
    said = error.strerror
try:
    leader, follower = os.openpty()
    opened = "a terminal" if os.isatty(follower) else "no terminal"
except OSError as error:
    opened = error.strerror
print(said, "|", opened)
"""
READ_THE_TERMINALS = HONEST + (
    "import os\n"
    "mark = os.stat('/dev/pts')\n"
    "print(oct(mark.st_mode & 0o7777), mark.st_mtime_ns % 1000 == 314)\n"
)


def test_no_submission_leaves_marks_on_its_terminals_folder():
    """Her notebook set the mode and times of /dev/pts (a sixteenth tester's; the fifteenth's
    fix gave back those of the folders the sandbox empties, not this one), and the notebook
    graded next read both back: a storage channel from one submission to the next. And each
    pseudo-terminal it opened came from the machine's one pool, which the hub's terminals
    draw on too (3,072 for every devpts but the machine's first: held, no terminal of anyone's
    on the hub opened). /dev/pts is now read-only in the sandbox: no mark, no terminal
    (EACCES on /dev/ptmx; nothing graded needs one, and the grader flags the pty module)."""
    hers, theirs, same = grade_after(MARK_THE_TERMINALS, READ_THE_TERMINALS)
    assert stdout(hers) == "Read-only file system | Permission denied\n", outputs(hers)
    assert stdout(theirs) == "classmate 42\n0o755 False\n", (theirs, outputs(theirs))
    assert same


# The machine's own device nodes, which bubblewrap's --dev binds into the sandbox: each
# given its own mode and times again (nothing changes), to see whether she may.
CHANGE_THE_DEVICES = """
import os
said = {}
for device in ("null", "zero", "full", "random", "urandom", "tty"):
    path = "/dev/" + device
    mark = os.stat(path)
    try:
        os.chmod(path, mark.st_mode & 0o7777)
        os.utime(path, ns=(mark.st_atime_ns, mark.st_mtime_ns))
        said[device] = "changed"
    except OSError as error:
        said[device] = error.strerror
with open("/dev/null", "w") as null, open("/dev/urandom", "rb") as noise:
    print(sorted(set(said.values())), null.write("x"), len(noise.read(8)))
"""


def test_no_submission_changes_the_machines_device_nodes():
    """Graded by root, her notebook is the owner (uid 0) of the machine's own /dev/null,
    /dev/zero, /dev/urandom, /dev/tty, ..., which bubblewrap's --dev binds into the sandbox
    writable: she could chmod them (0 on /dev/null: no other user of the machine opens it
    again, the hub's students included) or set their times, which any user of the machine
    reads (a storage channel to her own server). Played with their own modes and times again.
    The launcher (grading/host/tmpfs.py) binds them read-only onto themselves first, so
    bubblewrap's binds are read-only: EROFS, and the devices work as before."""
    hers, theirs, same = grade_after(CHANGE_THE_DEVICES)
    assert stdout(hers) == "['Read-only file system'] 1 8\n", outputs(hers)
    assert stdout(theirs) == "classmate 42\n" and same, (theirs, outputs(theirs))


# What the kernel lets any process of the sandbox's uid raise for the sandbox's init, which
# every kernel forked from it inherits and none may lower: its OOM score adjustment (1000: the
# machine's first process to kill) and its session's scheduler autogroup's nice value (19).
RAISE_THE_GRADERS_SCORES = """
import os
said = []
for name, value in (("oom_score_adj", "1000"), ("autogroup", "19")):
    try:
        with open(f"/proc/1/{name}", "w") as handle:
            handle.write(value)
        said.append("raised")
    except OSError as error:  # EACCES where the grader is not root; ENOENT: no autogroups
        said.append(error.errno)
print(said, open("/proc/1/oom_score_adj").read().strip())
"""
READ_THE_SCORES = (
    "import os\n"
    "group = open('/proc/self/autogroup').read().split() if os.path.exists('/proc/self/autogroup')"
    " else ['nice', '0']\n"
    "print(open('/proc/self/oom_score_adj').read().strip(), group[-1])\n"
)


def test_no_submission_raises_the_oom_score_or_nice_of_the_next():
    """Graded by root, her kernel wrote 1000 to /proc/1/oom_score_adj and 19 to
    /proc/1/autogroup (the sandbox's init, non-dumpable: its /proc files are the namespace's
    uid 0, which she then is): every kernel the warm sandbox forked after
    hers was the first the OOM killer took and ran at nice 19 (played: the next kernel read
    1000 and 19; once, under this machine's load, it died before answering). The executor sets
    its OOM score back for each notebook, and each notebook's executor makes a session of its
    own, so a scheduler autogroup of its own, at nice 0."""
    with open("/proc/self/oom_score_adj") as handle:
        graders = handle.read().strip()  # the sandbox's init starts with the grader's
    hers, theirs, same = grade_after(RAISE_THE_GRADERS_SCORES, READ_THE_SCORES)
    if os.geteuid() == 0:  # she is the init's owner: both raised, the test can fail
        grouped = "'raised'" if os.path.exists("/proc/self/autogroup") else "2"
        assert stdout(hers) == f"['raised', {grouped}] 1000\n", outputs(hers)
    else:  # the init's /proc files are the overflow uid's: neither is hers to raise
        assert stdout(hers) == f"[13, 13] {graders}\n", outputs(hers)
    assert graders != "1000"  # else the classmate's 1000 would be the grader's: could not fail
    assert stdout(theirs) == f"{graders} 0\n" and same, (theirs, outputs(theirs))


# A grader run as root (this machine's CI, a root container, `sudo make autograde`) runs the
# sandbox as the machine's uid 0 (its user namespace maps 0 to 0), whom the kernel lets write a
# sysctl without any capability; bubblewrap had left the sandbox's /proc/sys writable. Her
# answer writes back each value it reads (nothing of the machine changes if it is let through)
# and names the sandbox's host, which the notebook graded next reads.
SET_THE_SYSCTLS = """
import os
said = []
for name in ("kernel/core_pattern", "kernel/pid_max", "vm/overcommit_memory", "kernel/hostname"):
    path = "/proc/sys/" + name
    value = "stash-314" if name == "kernel/hostname" else open(path).read()
    try:
        with open(path, "w") as handle:
            handle.write(value)
        said.append(f"{name} written")
    except OSError as error:
        said.append(error.errno in (30, 13))  # EROFS; EACCES where she is not uid 0
print(said, open("/proc/sys/kernel/hostname").read().strip())
"""


def test_no_submission_writes_the_machines_sysctls():
    """Graded by root, her notebook wrote kernel.core_pattern, kernel.pid_max and
    vm.overcommit_memory of the whole machine (played with each value as it was: a
    core_pattern of `|program` would have had the machine's root run her program at the next
    crash), and the sandbox's host name, which the notebook graded next in that sandbox read
    back. The sandbox's /proc/sys is bound read-only (sandbox.bwrap_command)."""
    hers, theirs, same = grade_after(SET_THE_SYSCTLS, "import socket\nprint(socket.gethostname())")
    assert stdout(hers) == "[True, True, True, True] sandbox\n", outputs(hers)
    assert stdout(theirs) == "sandbox\n" and same, (theirs, outputs(theirs))


# Her kernel reads its own memory, every mapping of it, for the classmates' answers: each
# kernel is forked from the sandbox's init (warm imports), and a copy of its memory is hers.
# The needle is made at run time: her notebook's own text does not hold it.
READ_MY_MEMORY = r"""
import re
needle = re.compile(b"alices-" + b"answer-([0-9]{4})")
found = set()
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        span, rights = line.split()[:2]
        start, end = (int(x, 16) for x in span.split("-"))
        if "r" not in rights or end - start > 1 << 30:
            continue
        try:
            mem.seek(start)
            found.update(m.group(1) for m in needle.finditer(mem.read(end - start)))
        except OSError:
            continue
print("classmates' answers in my memory:", len(found))
"""


def test_no_submission_reads_a_classmates_notebook_in_its_own_memory():
    """The sandbox's init read each notebook (the request's frame, its bytes, the notebook's
    text in it) before forking the executor that forks the kernel: every kernel is a copy of
    the init's memory, where the notebooks read before stayed in freed memory. Graded after
    three classmates in a warm sandbox, her notebook read parts of their answers in its own
    memory (/proc/self/mem: 6 to 38 of 60 answers in each of nineteen runs, the seventeenth hub
    tester's), to print them into her own feedback. The init now reads a request's length
    only; the executor forked for it reads the notebook after forking the kernel."""
    cells = [f"answer_{i} = 'alices-answer-{i:04d}' * 3\n" + "# working\n" * 40 for i in range(60)]
    box = sandbox.Sandbox("", sandbox.Limits())
    try:
        for count in (20, 40, 60):  # three classmates, each notebook larger than the last
            run = box.execute(
                nbformat.writes(
                    new_notebook(cells=[new_code_cell(cell) for cell in cells[:count]])
                ),
                20,
                30,
            )
            assert run.notebook and not run.timed_out, (run.failure, run.log[-300:])
        process = box.process
        hers = box.execute(notebook(READ_MY_MEMORY), 60, 90)
        same = box.process is process  # the same warm sandbox graded her
    finally:
        box.close()
    assert stdout(hers) == "classmates' answers in my memory: 0\n" and same, outputs(hers)


# Her processes each a session of their own (setsid, `start_new_session=True`): the scheduler
# shares the cores between sessions (autogroups) in the machine's root CPU cgroup, so each
# took a share from the classmate graded beside her (the nineteenth hub tester: 200 of them
# held a 1 s notebook for 53 s; longer cells run out of their time and score 0).
MAKE_SESSIONS = """
import os, subprocess, sys
said = []
try:
    os.setsid()
    said.append("setsid")
except OSError as error:
    said.append(error.errno)
try:
    subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True).wait()
    said.append("a session of its own")
except OSError as error:
    said.append(type(error).__name__)
print(said, os.getsid(0) == os.getsid(os.getppid()))
"""


def test_no_submission_makes_a_session_of_its_own():
    """The notebook's executor makes one session for the notebook (own_namespaces) and then
    refuses setsid to it and every process it starts (sandbox_exec.no_new_sessions, EPERM):
    however many processes she starts, her notebook is one session, one autogroup, one share
    of the cores, wherever the grader runs (a CPU cgroup per run needs a root grader on
    cgroup v1: test_a_runs_cpu_cgroup_is_its_own)."""
    hers, theirs, same = grade_after(MAKE_SESSIONS)
    assert stdout(hers) == "[1, 'PermissionError'] True\n", outputs(hers)
    assert stdout(theirs) == "classmate 42\n" and same, (theirs, outputs(theirs))


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.access("/sys/fs/cgroup/cpu/cgroup.procs", os.W_OK),
    reason="a run's CPU cgroup needs a root grader and cgroup v1's cpu hierarchy",
)
def test_a_runs_cpu_cgroup_is_its_own():
    """Where the grader can (root, cgroup v1), a sandbox runs in a CPU cgroup of its own
    (sandbox.ProcessGroup): one share of the cores against the grader's other sandboxes,
    however its processes are grouped inside (the nineteenth hub tester)."""
    box = sandbox.Sandbox("", sandbox.Limits())
    try:
        run = box.execute(notebook(HONEST), 20, 30)
        assert stdout(run) == "classmate 42\n", outputs(run)
        cpu = box.group.cpu
        assert cpu is not None and cpu.parent in sandbox.CPU_PARENTS, cpu
        held = (cpu / "cgroup.procs").read_text().split()
        assert str(box.process.pid) in held, (box.process.pid, held)
    finally:
        box.close()
    assert not cpu.exists()  # removed with the sandbox


# A real-time policy, or a nice value below 0 for her autogroup, each of which her limits would
# allow where the grader's own give them (a desktop's audio group: rtprio 95, nice -19)
PRIORITY = """
import os, resource
said = [resource.getrlimit(resource.RLIMIT_RTPRIO), resource.getrlimit(resource.RLIMIT_NICE)]
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    said.append("real-time")
except OSError as error:
    said.append(error.errno)
try:
    with open("/proc/self/autogroup", "w") as autogroup:
        autogroup.write("-19")
    said.append("nice -19")
except OSError as error:
    said.append(error.errno)
print(said)
"""


def test_no_submission_takes_a_real_time_policy_or_a_nice_below_zero(monkeypatch):
    """The sandbox's processes had the grader's own RLIMIT_RTPRIO and RLIMIT_NICE: where those
    are above 0 (an instructor in her desktop's audio group, `make autograde` as herself), her
    SCHED_FIFO threads would take the cores from every classmate graded beside her, cgroup or
    not, and her autogroup at nice -19 (/proc/self/autogroup) 87 shares to their one: the one
    share that no_new_sessions keeps her to (the twentieth hub tester; reasoned, not played:
    no process here may raise its hard limits). Both are 0 in the sandbox now (set_limits)."""
    hers, theirs, same = grade_after(PRIORITY)
    assert stdout(hers) == "[(0, 0), (0, 0), 1, 1]\n", outputs(hers)  # EPERM, EPERM
    assert stdout(theirs) == "classmate 42\n" and same, (theirs, outputs(theirs))
    # what set_limits gives the sandbox, whatever the grader's own limits (here 0 already)
    given = {}
    monkeypatch.setattr(sandbox.resource, "setrlimit", lambda name, v: given.update({name: v}))
    monkeypatch.setattr(sandbox.signal, "signal", lambda *_: None)
    sandbox.set_limits(sandbox.Limits())()
    import resource

    assert given.get(resource.RLIMIT_RTPRIO) == (0, 0), given
    assert given.get(resource.RLIMIT_NICE) == (0, 0), given


# Her answer, called by a test, shows an error of her own named CellTimeoutError in the call's
# cell (the kernel's showtraceback) and returns the right value.
FORGED_STOP = """
class CellTimeoutError(Exception):
    pass
def f(x):
    try:
        raise CellTimeoutError("hers")
    except CellTimeoutError:
        get_ipython().showtraceback()
    return 2 * x
def g():
    import time
    while True:
        time.sleep(0.05)
"""


def test_no_answer_makes_the_executor_say_it_stopped_a_test():
    """The executor took any error output named CellTimeoutError in a test call's cell for
    nbclient's stop: her answer that showed one got the executor's own reply, "the grader
    stopped this test after 20 s", within a second, which the trusted process raised as the
    grader's stop (GraderStop) and marked the test stopped: a row saying the grader stopped a
    cell it never stopped, and a second run alone (the twenty-fourth hub tester). Only
    nbclient's header-less stand-in reply says a call ran out of time now (run_test); a call
    that does (g) is still stopped, in the grader's words."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from grading.host import trusted_tests

    sources = {1: "assert f(3) == 6\nprint('passed')", 2: "g()"}
    cells = [new_code_cell(FORGED_STOP)]
    for index in sources:
        cells.append(new_code_cell("", metadata={"lm10_test": index}))
    results = {}

    def on_test(index, call, deadline):
        with trusted_tests.session([], ["f", "g"]) as tested:
            results[index], _ = tested.run(sources[index], call=call, deadline=None)

    box = sandbox.Sandbox("", sandbox.Limits())  # its tests in the module's warm trusted process
    try:
        run = box.execute(nbformat.writes(new_notebook(cells=cells)), 5, 60, on_test=on_test)
    finally:
        box.close()
    assert results.get(1) == [{"output_type": "stream", "name": "stdout", "text": "passed\n"}], (
        results
    )
    stop = results.get(2, [{}])[-1]
    assert (stop.get("ename"), stop.get("evalue")) == (
        "CellTimeoutError",
        "the grader stopped this test after 5 s (does your code loop forever?)",
    ), results
    assert json.loads(run.notebook)["metadata"]["lm10_timed_out"] == [2]


def lab(answer):
    """A lab of one answer cell (`answer`, which defines f) and one test of f, silent when it
    passes (asserts alone)."""
    cells = [new_code_cell(answer), new_code_cell("assert f(3) == 6")]
    cells[0].metadata["nbgrader"] = {
        "grade": False,
        "solution": True,
        "locked": False,
        "grade_id": "answer",
        "schema_version": 3,
    }
    cells[1].metadata["nbgrader"] = {
        "grade": True,
        "solution": False,
        "locked": True,
        "grade_id": "test_f",
        "points": 1,
        "schema_version": 3,
    }
    return new_notebook(cells=cells)


# The test cells of the guard's real-sandbox cases below: a declaration, then asserts alone.
MUL_TEST = "# Off limits while graded: operator.mul\nassert f(3) == 6"
NORM_TEST_LAYER = (
    "# Off limits while graded: torch normalisation layers\n"
    "assert [round(v, 3) for v in f([1.0, 2.0, 3.0, 5.0])] == [-1.183, -0.507, 0.169, 1.521]"
)
NORM_TEST_RMS = (
    "# Off limits while graded: torch normalisation layers\n"
    "assert [round(v, 3) for v in f([1.0, 2.0, 3.0, 5.0])] == [0.32, 0.641, 0.961, 1.601]"
)


def graded_against(monkeypatch, test, answer, timeout=30, cells=()):
    """Her `answer` cell (which defines f), then code cells of hers (`cells`, sources), graded
    in a real sandbox against a lab() whose test cell is `test`: the graded notebook and the
    run's notes (its flags)."""
    from nbformat.v4 import new_code_cell

    from grading.host import course_preprocessors

    def declared(source):
        made = lab(source)
        made.cells[1].source = test
        return made

    release = declared("def f(x):\n    raise NotImplementedError()")
    monkeypatch.setattr(course_preprocessors, "release_notebook", lambda *_: release)
    submitted = declared(answer)
    submitted.cells[1:1] = [new_code_cell(source) for source in cells]
    grader = course_preprocessors.SandboxedExecute(timeout=timeout)
    graded, _ = grader.preprocess(submitted, {"nbgrader": {"assignment": "lab"}})
    return graded, course_preprocessors.take_notes()


def stopped_unflagged(monkeypatch, test, answer, timeout=30, flagged_for=None):
    """Grade her `answer` cell (which defines f) in a real sandbox against a lab() whose test
    cell is `test`: the test's one error is OffLimitsError and nothing of her answer is
    flagged (the guard and the agent hold by themselves), or, with `flagged_for` (a text, or
    several), nothing but flags of those texts (a construct flagged since, which the guard
    stops by itself too). The vocabulary's flags (names outside the labs' vocabulary) are left
    out: the guard holds without any flag."""
    graded, notes = graded_against(monkeypatch, test, answer, timeout)
    errors = [o.get("ename") for o in graded.cells[1].outputs]
    assert errors == ["OffLimitsError"], graded.cells[1].outputs
    found = submission_checks.without_outside(notes.flags)
    if flagged_for is None:
        assert found == [], notes.flags
    else:
        texts = (flagged_for,) if isinstance(flagged_for, str) else flagged_for
        assert found and all(any(x in f for x in texts) for f in found), notes.flags


def grade_one(monkeypatch, submitted, timeout):
    """(graded notebook, notes) of `submitted` (a lab() notebook), graded by SandboxedExecute in
    a real sandbox against a release whose f is a stub, with `timeout` s a cell."""
    from grading.host import course_preprocessors

    release = lab("def f(x):\n    raise NotImplementedError()")
    monkeypatch.setattr(course_preprocessors, "release_notebook", lambda *_: release)
    grader = course_preprocessors.SandboxedExecute(timeout=timeout)
    graded, _ = grader.preprocess(submitted, {"nbgrader": {"assignment": "lab"}})
    return graded, course_preprocessors.take_notes()


def test_a_test_stopped_at_a_visible_call_counts_as_run_out_of_time(monkeypatch):
    """A test whose call ran out of its time before any hidden input reached her code (the
    first, visible, call of a test: where an honest answer slowed by a classmate graded beside
    it stops) was not among the cells run out of time: the trusted process marks a stop only
    where a hidden input had reached her code, and only that mark counted. So it was never
    graded again alone, and its row did not say it ran out of time (the twenty-fourth hub
    tester). The executor's list (lm10_timed_out) counts now, for tests as for other cells."""

    slow = lab("def f(x):\n    while True:\n        pass\n")
    graded, notes = grade_one(monkeypatch, slow, timeout=3)
    assert graded.cells[1].outputs[-1].ename == "CellTimeoutError", graded.cells[1].outputs
    assert notes.timed_out_cells == ["test_f"], notes


def test_no_output_of_hers_puts_her_text_in_the_graders_stop(monkeypatch):
    """An output her kernel publishes that nbformat does not accept (display's raw data, a list of
    a string and a number) made nbclient raise a NotebookValidationError that quotes the
    data, and the executor's stop said "the kernel failed: " and the error's message: written on
    the first cell without outputs (one before any hidden test, shown whole in feedback) and on
    every test after it (the grader's own NotRun, whose words feedback keeps), so a value her
    code computed after a hidden input reached her feedback (the twenty-sixth hub tester). Its
    type alone was still hers to choose among a few (a bit or two a submission). The stop's
    words are fixed now; the error's type and message go to the instructor's report alone,
    where a limit of the machine is read in them (an epoll watch a classmate took)."""

    secret = "d=1024, heads=16"
    shows = "display({'text/plain': [f'd={32 * 32}, heads={4 * 4}', 5]}, raw=True)\n"
    graded, notes = grade_one(monkeypatch, lab(shows + "def f(x):\n    return 2 * x\n"), timeout=20)
    shown = json.dumps([c.outputs for c in graded.cells])
    assert secret not in shown and "NotebookValidationError" not in shown, shown
    assert [o.get("evalue") for o in graded.cells[1].outputs] == [
        "Not run: the grader stopped an earlier cell (the kernel failed)."
    ], graded.cells[1].outputs
    assert notes.stopped.startswith("answer: the kernel failed (NotebookValidationError: "), (
        notes.stopped
    )


@pytest.mark.parametrize("start", ["warm", "cold"])
def test_a_test_that_passes_without_printing_scores_its_points(monkeypatch, start):
    """A test cell that passed and printed nothing (nbgrader's own way: asserts alone) came
    back from the trusted process with no outputs, and the grader took none for a test never
    run: "Not run: the notebook ended before this test", an error, so 0 points for a right
    answer (the twenty-sixth hub tester; every test of the six labs prints, so none met it).
    Cold too: a sandbox and a trusted process of its own, as the formgrader's Autograde button
    grades one submission (no worker warmed them)."""
    from grading.host import trusted_tests

    if start == "cold":
        monkeypatch.setattr(sandbox, "_warm", None)
        monkeypatch.setattr(trusted_tests, "_warm", None)
    graded, notes = grade_one(monkeypatch, lab("def f(x):\n    return 2 * x\n"), timeout=10)
    assert graded.cells[1].outputs == [], graded.cells[1].outputs


def test_an_output_she_publishes_in_a_tests_call_is_never_read(monkeypatch):
    """An output nbformat does not accept, published by her code while a test's call ran it
    (display's raw data, a list of a string and a number), made nbclient raise in run_test,
    out of the executor's call: the grader's call was never answered, and the sandbox returned
    no executed notebook, so the whole submission went ungraded ("error"), an outcome her code
    could choose on a hidden input (the twenty-seventh hub tester). Nothing her code publishes
    while a test calls it is read now (the executor reads only the end of a test's cell): the
    call is answered, the test passes, and nothing of hers or of nbformat's is shown."""

    shows = "    if x == 3:\n        display({'text/plain': [f'x={x}', 5]}, raw=True)\n"
    graded, notes = grade_one(
        monkeypatch, lab("def f(x):\n" + shows + "    return 2 * x\n"), timeout=20
    )
    shown = json.dumps([c.outputs for c in graded.cells])
    assert "x=3" not in shown and "NotebookValidationError" not in shown, shown
    assert graded.cells[1].outputs == [], graded.cells[1].outputs
    assert notes.stopped == ""


# Her f asks for input three ways while a test calls it, each prompt a reply of the grader's
# kind with a wrong value; it answers right only if all three are refused as in her own cells.
FORGER = """
import getpass, json
def f(x):
    refused = 0
    for ask in (input, getpass.getpass, get_ipython().kernel.raw_input):
        try:
            ask(json.dumps({"value": 0}))
        except Exception as error:
            refused += type(error).__name__ == "StdinNotImplementedError"
    display({"application/x-lm10-reply": json.dumps({"value": 0})}, raw=True)
    return 2 * x if refused == 3 else -1
"""


def test_no_reply_of_the_graders_kind_from_her_code_is_her_answer(monkeypatch):
    """A test's calls run in one cell of the kernel, and the agent sends each reply as the
    prompt of an input request on the kernel's stdin channel (run_test). An input request of
    her code's, made while a test calls it, would be read as the call's reply, without the
    names the guard stopped: her input(), getpass() and the kernel's raw_input() are refused
    there (StdinNotImplementedError, as in her own cells, which run without stdin), and a
    display of the reply's old kind (the channel before it: issue 38's tester) is not read.
    Her f answers right only where all three were refused; a forged reply would be 0."""

    graded, notes = grade_one(monkeypatch, lab(FORGER), timeout=20)
    assert graded.cells[1].outputs == [], graded.cells[1].outputs  # passed: 2 * 3
    assert notes.stopped == ""


# Her answer cell sends two input requests of its own through the kernel's session (flagged:
# exit._ip), each a reply of the grader's kind; her f is wrong.
STALE = """
import json
k = exit._ip.kernel
for v in (6, 8):
    k.session.send(k.stdin_socket, "input_request", {"prompt": json.dumps({"value": v}),
                   "password": False}, parent=k.get_parent("shell"),
                   ident=k._parent_ident["shell"])
def f(x):
    return -1
"""


def test_no_input_request_from_before_a_test_answers_its_calls(monkeypatch):
    """Input requests her code sent from an earlier cell wait, unanswered, until a test's cell
    reads the stdin channel: the first was read as the reply to the test's first call (the
    names of her answers: "did not list its names") and each reply came one call late (the
    thirtieth hub tester). The executor drops what is waiting before each test's cell: her f
    is called, and its own answer fails the test."""

    graded, notes = grade_one(monkeypatch, lab(STALE), timeout=20)
    assert [o.get("ename") for o in graded.cells[1].outputs] == ["AssertionError"], graded.cells[
        1
    ].outputs
    assert any("exit._ip" in flag for flag in notes.flags), notes.flags


# While a test calls it, her f sends an input request of its own through the kernel's session
# (flagged: exit._ip), its prompt a right reply of the grader's kind, then returns a wrong one.
FORGED = """
import json
k = exit._ip.kernel
def f(x):
    k.session.send(k.stdin_socket, "input_request", {"prompt": json.dumps({"value": 2 * x}),
                   "password": False}, parent=k.get_parent("shell"),
                   ident=k._parent_ident["shell"])
    return -1
"""


def test_no_input_request_without_the_calls_token_is_its_reply(monkeypatch):
    """The executor took any input request made during a call as the call's reply, so her code,
    once it reached the kernel's session, answered a test with whatever it sent and passed it
    (the thirty-first hub tester). Each call carries a token of its own now, and the agent's
    reply carries it back: hers has none, the test is stopped (the kernel is hers from then on)
    and the instructor's report names the forgery."""

    graded, notes = grade_one(monkeypatch, lab(FORGED), timeout=20)
    assert [(o.get("ename"), o.get("evalue")) for o in graded.cells[1].outputs] == [
        ("NotRun", "the grader stopped: the kernel failed")
    ], graded.cells[1].outputs
    assert notes.stopped.startswith("test_f: the kernel failed (ForgedReply: "), notes.stopped
    assert any("exit._ip" in flag for flag in notes.flags), notes.flags


# Her answer cell puts an object of hers in sys.stdout's place (contextlib.redirect_stdout,
# entered and never left); the kernel flushes sys.stdout before each input request it sends,
# the agent's too, and her flush then sends replies of her own with getpass(), the first with
# the token it reads in the test cell's source (traceback.extract_stack; "none" where it finds
# none), each later one with the token the grader's answer gave her. Nothing in it is flagged;
# her f is wrong.
FLUSHED = """
import contextlib, getpass, json, traceback

class Sink:
    busy = False

    def write(self, text):
        return len(text)

    def flush(self):
        if Sink.busy:
            return
        Sink.busy = True
        token = "none"
        for frame in traceback.extract_stack():
            line = frame.line or ""
            if "_agent').serve(" in line:
                token = line.split("serve(", 1)[1].split("'")[1]
                break
        handle = {"_" * 2 + "handle" + "_" * 2: 1, "module": "__main__", "qualname": "f",
                  "callable": True}
        reply = {"value": {"_" * 2 + "dict" + "_" * 2: [["f", handle]]}}
        try:
            while True:
                token = getpass.getpass(token + " " + json.dumps(reply)).split(" ", 1)[0]
                reply = {"value": 6}
        except Exception:
            pass
        Sink.busy = False

contextlib.redirect_stdout(Sink()).__enter__()

def f(x):
    return -1
"""


def test_no_code_of_hers_sends_an_input_request_inside_the_agents(monkeypatch):
    """The agent turned stdin on for its own input request (the kernel's raw_input), and the
    kernel flushes sys.stdout before it sends one: her object there ran with stdin on, and its
    getpass() sent the replies to the test's calls, the first with the token in the test
    cell's source, each later one with the token the executor's answer to hers carried. Her
    wrong f passed, unflagged, and no off-limits guard ran around her replies (the
    thirty-second hub tester). The agent's request no longer turns stdin on: her getpass() is
    refused, the agent's replies are f's, and its own wrong answer fails the test (with the
    source out of linecache alone, her request without the token stopped the test instead)."""

    graded, notes = grade_one(monkeypatch, lab(FLUSHED), timeout=20)
    assert [o.get("ename") for o in graded.cells[1].outputs] == ["AssertionError"], graded.cells[
        1
    ].outputs
    assert notes.stopped == ""


# Her f reads the source of the test's cell, where the first call's token is, in a stack of
# her own (traceback.extract_stack, which reads linecache: nothing flagged), and answers
# right only where it found it.
READS_TOKEN = """
import traceback
def f(x):
    lines = [frame.line or "" for frame in traceback.extract_stack()]
    return 2 * x if any("_agent').serve(" in line for line in lines) else -1
"""


def test_no_stack_of_hers_shows_the_test_cells_source(monkeypatch):
    """The test's cell carries its first call in its source, with the call's token, and IPython
    keeps each cell's source in linecache, where traceback.extract_stack() (and warnings) read
    it: her code held the token with nothing flagged (the thirty-second hub tester). The agent
    takes the cell's source out of linecache when its cell starts."""

    graded, notes = grade_one(monkeypatch, lab(READS_TOKEN), timeout=20)
    assert [o.get("ename") for o in graded.cells[1].outputs] == ["AssertionError"], graded.cells[
        1
    ].outputs
    assert submission_checks.without_outside(notes.flags) == [], notes.flags


# Input requests whose content is a list (a string is sent as the JSON it holds), from her
# answer cell (waiting before the test) and from her f while the test calls it; her f is right.
MALFORMED = """
k = exit._ip.kernel
def ask():
    k.session.send(k.stdin_socket, "input_request", "[1, 2]", parent=k.get_parent("shell"),
                   ident=k._parent_ident["shell"])
ask()
def f(x):
    ask()
    return 2 * x
"""


def test_no_message_of_hers_on_the_stdin_channel_stops_the_executor(monkeypatch):
    """The executor read an input request's content as a mapping: one whose content was a list,
    sent through the kernel's session by her answer cell or by her f while a test called it,
    raised out of the executor's loop, and the grader's call went unanswered (the whole
    submission ungraded, an outcome hers to pick on a hidden input, as the twenty-seventh
    tester's). Such a message is dropped now, and any other error while a call is answered
    answers it with the executor's stop. Her f is right, and its test passes."""

    graded, notes = grade_one(monkeypatch, lab(MALFORMED), timeout=20)
    assert graded.cells[1].outputs == [], graded.cells[1].outputs
    assert notes.stopped == ""


def test_a_json_output_of_hers_that_is_a_list_of_numbers_is_graded(monkeypatch):
    """A JSON output (`application/json`), which nbformat lets be any JSON, that is a list of
    numbers: IPython's own `display(JSON([1, 2]))`, an honest cell's. The executor's cut of each
    output joined every list as text, its TypeError ended the executor, and the sandbox
    returned no executed notebook, so the whole submission went ungraded ("error"): every
    grade lost for one display, and an outcome her code could choose after a hidden input, in
    a cell after a test (the twenty-eighth hub tester). Only a list of strings is text now;
    the notebook is graded, its test passed."""

    shows = "from IPython.display import JSON\ndisplay(JSON([1, 2]))\n"
    graded, notes = grade_one(monkeypatch, lab(shows + "def f(x):\n    return 2 * x\n"), timeout=20)
    assert graded.cells[1].outputs == [], graded.cells[1].outputs
    assert notes.stopped == ""


def test_a_json_output_past_the_sandboxs_message_limit_is_cut_not_the_submission(monkeypatch):
    """A JSON output's value that is not text (a dict) was never cut to the per-output limit:
    her `display(JSON({'a': 'x' * (70 << 20)}))` made the executed notebook larger than the
    channel takes (64 MiB), and the sandbox returned no executed notebook, so the whole
    submission went ungraded ("error"), an outcome her code could choose after a hidden input
    (the twenty-eighth hub tester). A value counts as its JSON text now, cut as text is."""

    shows = "from IPython.display import JSON\ndisplay(JSON({'a': 'x' * (70 << 20)}))\n"
    graded, notes = grade_one(monkeypatch, lab(shows + "def f(x):\n    return 2 * x\n"), timeout=60)
    assert graded.cells[1].outputs == [], graded.cells[1].outputs
    assert notes.stopped == ""


def test_outputs_past_the_sandboxs_message_limit_are_dropped_not_the_submission(monkeypatch):
    """Outputs each under the per-output limit, but many: 3,600 displays of 20,000 characters
    made the executed notebook larger than the channel takes (64 MiB, the file-size limit), and
    the sandbox returned no executed notebook, so the whole submission went ungraded
    ("error"), an outcome her code could choose after a hidden input (the twenty-eighth hub
    tester). Her cells' outputs are dropped from the last up until the notebook fits; the
    test's own are kept, and it is graded."""

    shows = "for i in range(3600):\n    display({'text/plain': 'x' * 20000}, raw=True)\n"
    graded, notes = grade_one(monkeypatch, lab(shows + "def f(x):\n    return 2 * x\n"), timeout=60)
    assert graded.cells[1].outputs == [], graded.cells[1].outputs
    assert notes.stopped == ""


def test_dropping_small_outputs_never_makes_the_notebook_larger(monkeypatch):
    """`fitted` put its note on each cell it emptied and did not count the notes: where her
    last cells' outputs were smaller than the note (thousands of print(1) cells after the large
    outputs), each drop made the notebook larger while the count said smaller, and the message
    passed the limit all the same, the whole submission ungraded, an outcome her code could
    pick after a hidden input (the twenty-ninth hub tester). One note now, counted."""
    import resource

    from nbformat.v4 import new_output

    from grading.in_sandbox import sandbox_exec

    limit, real = 1 << 20, resource.getrlimit
    monkeypatch.setattr(
        resource,
        "getrlimit",
        lambda which: (limit, limit) if which == resource.RLIMIT_FSIZE else real(which),
    )
    big = [new_output("stream", name="stdout", text="x" * 20000) for _ in range(22)]
    small = [
        new_code_cell("print(1)", outputs=[new_output("stream", name="stdout", text="1\n")])
        for _ in range(3000)
    ]
    test = new_code_cell("assert f(3) == 6", outputs=[new_output("stream", name="stdout")])
    test.metadata["lm10_test"] = 0
    nb = new_notebook(cells=[new_code_cell("shows()", outputs=big), *small, test])
    assert len(json.dumps({"done": json.dumps(nb)})) > limit - 4096  # past it, and not by much
    text = sandbox_exec.fitted(nb)
    assert len(json.dumps({"done": text})) <= limit - 4096
    cells = json.loads(text)["cells"]
    assert cells[0]["outputs"] == big and cells[-1]["outputs"] == test.outputs  # kept
    noted = [i for i, c in enumerate(cells) if "dropped by the grader" in json.dumps(c["outputs"])]
    assert len(noted) == 1 and all(c["outputs"] == [] for c in cells[noted[0] + 1 : -1])


def test_which_cells_are_emptied_never_says_how_long_a_stops_detail_was(monkeypatch):
    """A stop's detail (nbformat's refusal of an output she published, quoted: the kernel
    failed) is her text, up to 500 characters, from a cell that ran after a hidden test had
    called her code; it went into the notebook's size, so with her earlier cells' outputs
    (shown in feedback) sized just under the channel's limit, how many of them `fitted`
    emptied, and where its note stood, said how long she made it: a number her code chose
    after meeting a hidden input (the sixty-fifth hub tester). The detail counts at its
    greatest now."""
    import resource

    from nbformat.v4 import new_output

    from grading.in_sandbox import sandbox_exec

    limit, real = 1 << 20, resource.getrlimit
    monkeypatch.setattr(
        resource,
        "getrlimit",
        lambda which: (limit, limit) if which == resource.RLIMIT_FSIZE else real(which),
    )

    def graded(detail, room=None):
        early = [
            new_code_cell(f"print({i})", outputs=[new_output("stream", name="stdout", text="1\n")])
            for i in range(200)
        ]
        nb = new_notebook(cells=[new_code_cell("shows()", outputs=[]), *early])
        nb.metadata["lm10_stopped"] = {"cell": 201, "reason": "the kernel failed", "detail": detail}
        if room is None:  # her earlier cells sized before any hidden input: the same each time
            return limit - 4096 - len(json.dumps({"done": json.dumps(nb)})) - 200
        nb.cells[0].outputs = [new_output("stream", name="stdout", text="x" * room)]
        before = [c["outputs"] for c in json.loads(json.dumps(nb))["cells"]]
        cells = json.loads(sandbox_exec.fitted(nb))["cells"]
        return [i for i, c in enumerate(cells) if c["outputs"] != before[i]]

    room = graded("")
    emptied = {n: graded("ValidationError: " + "x" * n, room) for n in (0, 100, 483)}
    assert len({tuple(e) for e in emptied.values()}) == 1, emptied
    assert emptied[0], "the play drops some of her cells"
    assert emptied[0][0] > 0, "and never the first, which holds the large output"


def test_her_cells_marker_of_a_test_is_not_the_graders(monkeypatch):
    """The executor runs a cell whose metadata has `lm10_test` as a test, and `fitted` never
    drops the outputs of a cell that has the key: her answer cell's own `"lm10_test": null`
    kept its 72 MB of outputs past the channel's limit, the whole submission ungraded, an
    outcome a cell of hers after a hidden test could pick (the twenty-ninth hub tester). The
    grader removes the key from every cell but its own markers."""

    shows = "for i in range(3600):\n    display({'text/plain': 'x' * 20000}, raw=True)\n"
    submitted = lab(shows + "def f(x):\n    return 2 * x\n")
    submitted.cells[0].metadata["lm10_test"] = None
    graded, notes = grade_one(monkeypatch, submitted, timeout=60)
    assert graded.cells[1].outputs == [], graded.cells[1].outputs
    assert notes.stopped == ""


def test_an_answer_past_the_channels_limit_is_her_error_not_the_submissions(monkeypatch):
    """Her answer returned a value past the channel's limit (a string of 70 MB, which her code
    can return on a hidden input only): the executor relayed the reply, the grader refused the
    frame, and the sandbox returned no executed notebook, the whole submission ungraded (the
    twenty-ninth hub tester). Now the call answers as her error, and the test fails."""

    graded, notes = grade_one(monkeypatch, lab("def f(x):\n    return 'x' * (70 << 20)\n"), 60)
    assert any(o.get("ename") == "AnswerTooLarge" for o in graded.cells[1].outputs), graded.cells[
        1
    ].outputs
    assert notes.stopped == ""


# Her cells rebind a function of the standard library (plain Python, nothing flagged) that the
# agent decodes a call or encodes its reply with. Her f calls the test's reference, which is
# off limits: json.dumps, which the agent called after the guard, on the reply, puts there the
# value the reference gives with the guard gone, less the names it stopped; a2b_base64, which
# the agent decoded the call with before the guard, renames the name the test declares.
REBINDS = {
    "json.dumps": """
import json
import operator
pending = []
plain_dumps = json.dumps
def dumps(value, *args, **kwargs):
    if type(value) is dict and "value" in value and pending:
        value.pop("off_limits", None)
        value["value"] = operator.mul(2, pending.pop())
    return plain_dumps(value, *args, **kwargs)
json.dumps = dumps
def f(x):
    pending.append(x)
    try:
        return operator.mul(2, x)
    except Exception:
        return 0
""",
    "binascii.a2b_base64": """
import binascii
import operator
plain_a2b = binascii.a2b_base64
def a2b(data, *args, **kwargs):
    return plain_a2b(data, *args, **kwargs).replace(b"operator.mul", b"operator.add")
binascii.a2b_base64 = a2b
def f(x):
    return operator.mul(2, x)
""",
    # the kernel's session packed the agent's input request with json.dumps: her dumps put the
    # reference's value in the reply it carried, the call's token kept
    "json.dumps, in the session": """
import json
import operator
pending = []
plain_dumps = json.dumps
def dumps(value, *args, **kwargs):
    if type(value) is dict and type(value.get("prompt")) is str and pending:
        token, _, reply = value["prompt"].partition(" ")
        value["prompt"] = token + ' {"value": ' + str(operator.mul(2, pending.pop())) + "}"
    return plain_dumps(value, *args, **kwargs)
json.dumps = dumps
def f(x):
    pending.append(x)
    try:
        return operator.mul(2, x)
    except Exception:
        return 0
""",
    # and unpacked the executor's messages with json.loads: her loads renamed the declared name
    # in each call (the first in the test cell's code, the later ones in input replies)
    "json.loads, in the session": """
import binascii
import json
import operator
plain_loads = json.loads
def renamed(text):
    data = binascii.a2b_base64(text).replace(b"operator.mul", b"operator.add")
    return binascii.b2a_base64(data, newline=False).decode()
def loads(text, *args, **kwargs):
    value = plain_loads(text, *args, **kwargs)
    if type(value) is dict and type(value.get("code")) is str and "serve(" in value["code"]:
        head, _, rest = value["code"].partition(", '")
        call, _, tail = rest.partition("'")
        value["code"] = head + ", '" + renamed(call) + "'" + tail
    if type(value) is dict and type(value.get("value")) is str and " " in value["value"]:
        token, _, call = value["value"].partition(" ")
        value["value"] = token + " " + renamed(call)
    return value
json.loads = loads
def f(x):
    return operator.mul(2, x)
""",
    # not a rebinding: her f recursed to Python's limit, where calling the guard's hook raised,
    # and CPython unset the hook
    "the recursion limit": """
import operator
def dive():
    try:
        dive()
    except RecursionError:
        pass
def f(x):
    dive()
    return operator.mul(2, x)
""",
    # the guard took a declared package's folder by os.path.basename (posixpath's): here the
    # package json, its reference a function of a module in it
    "posixpath.basename": """
import posixpath
import json.decoder
plain_basename = posixpath.basename
posixpath.basename = lambda path: "" if path.endswith("__init__.py") else plain_basename(path)
def f(x):
    return json.decoder.JSONDecoder().decode(str(2 * x))
""",
}


@pytest.mark.parametrize("rebound", sorted(REBINDS))
def test_no_function_she_rebinds_in_the_standard_library_gets_past_the_guard(monkeypatch, rebound):
    """The agent encoded its reply with json.dumps after the off-limits guard, and decoded each
    call with base64's binascii.a2b_base64 before it, as the modules had them when it asked:
    her cells rebound them, nothing flagged, and her f that called the test's reference passed
    (the thirty-third hub tester); and the guard read a declared package's folder with
    os.path.basename, posixpath's, which she rebinds the same way. The agent keeps json's C
    encoder and binascii's decoder as it found them when the executor imported it, before any
    cell; her error's text and the traceback module run under the guard too; the guard reads
    the package's folder with str's own methods. And her f that recursed to Python's limit
    (caught) before it called the reference passed: calling the guard's hook raised there, and
    CPython unset it; a value answered after the hook was lost is off limits now."""
    reference = "json" if rebound == "posixpath.basename" else "operator.mul"
    test = f"# Off limits while graded: {reference}\nassert f(3) == 6"
    stopped_unflagged(monkeypatch, test, REBINDS[rebound], timeout=20)


# Her f reads the message that asked for the test's cell, with the first call's token in its
# code, from the kernel's context variable (contextvars.copy_context(): nothing flagged), and
# answers right only where it found the cell's `serve(` there.
READS_CONTEXT = """
import contextvars
def f(x):
    found = [v for k, v in contextvars.copy_context().items() if k.name == "shell_parent"]
    code = found[0].get("content", {}).get("code", "") if found else ""
    return 2 * x if "_agent').serve(" in code else -1
"""


def test_no_context_of_hers_shows_the_test_cells_source(monkeypatch):
    """ipykernel keeps the message that asked for the running cell in a context variable, and
    contextvars.copy_context() lists every variable of the context her code runs in: the test
    cell's source, with the first call's token, was hers to read with nothing flagged, past
    the linecache fix (the thirty-third hub tester). The agent empties the message's code when
    its cell starts (the kernel read it before the cell ran)."""

    graded, notes = grade_one(monkeypatch, lab(READS_CONTEXT), timeout=20)
    assert [o.get("ename") for o in graded.cells[1].outputs] == ["AssertionError"], graded.cells[
        1
    ].outputs
    assert submission_checks.without_outside(notes.flags) == [], notes.flags


# Her f hangs torch's own layer_norm (a partial of it) on a tensor as a hook and calls backward:
# torch runs the hook beneath the call the guard's function mode passed on (Tensor.backward),
# from no notebook frame; the gradient it leaves is layer_norm of her input.
BENEATH_THE_MODE = """
import functools
import torch
import torch.nn.functional as F
def f(values):
    x = torch.tensor(values)
    leaf = torch.zeros(x.shape[-1], requires_grad=True)
    leaf.register_hook(functools.partial(F.layer_norm, normalized_shape=x.shape[-1:]))
    (leaf * x).sum().backward()
    return leaf.grad.tolist()
"""


def test_a_reference_torch_runs_for_her_beneath_the_guards_mode_is_off_limits(monkeypatch):
    """The guard's function mode passes each torch call on from a frame of the guard's file, and
    the guard took whatever ran beneath such a frame for its own: a tensor's hook that backward
    ran, torch's layer_norm itself, computed the declared family's value for her, the test
    passed and nothing was flagged (the thirty-fourth hub tester). Beneath a call the modes
    passed on, only torch's own code of the family's routes passes now."""
    stopped_unflagged(monkeypatch, NORM_TEST_LAYER, BENEATH_THE_MODE)


# Her answer cell starts tqdm's monitor thread (a progress bar of a subclass of hers, whose
# get_lock the monitor calls every monitor_interval seconds): nothing flagged, no Thread of hers.
# Her f hands its input to that thread, which calls the declared reference, and waits for it.
EARLIER_THREAD = """
import operator
import time
import tqdm
jobs, done = [], {}
class Bar(tqdm.tqdm):
    monitor_interval = 0.01
    @classmethod
    def get_lock(cls):
        while jobs:
            x = jobs.pop()
            done[x] = operator.mul(2, x)
        return super().get_lock()
bar = Bar(total=1, disable=True)
def f(x):
    jobs.append(x)
    while x not in done:
        time.sleep(0.005)
    return done.pop(x)
"""


def test_a_thread_a_library_started_before_the_call_is_guarded_too(monkeypatch):
    """The guard's profile hook was set on the thread of the call and on threads started during
    it: a thread started earlier, by a library her answer cell used (tqdm's monitor, nothing
    flagged), ran her code with no hook at all, and the declared reference it called for her f
    went unseen, the test passed (the thirty-fourth hub tester). The guard hooks every thread
    of the interpreter while it is armed now."""
    stopped_unflagged(monkeypatch, MUL_TEST, EARLIER_THREAD)


# Her answer cell takes torch's own decomposition of the fused rms_norm from the public
# torch.export.default_decompositions() and sets it as torch.random.manual_seed's
# `__dynamo_disable`, the attribute torch's lazy `_disable_dynamo` wrapper (torch.manual_seed,
# once torch._dynamo is imported: torch.compiler.disable imports it) calls in its place; her f calls
# torch.manual_seed with the norm's arguments. Nothing of it is flagged.
FORGED_DISABLE = """
import torch
torch.compiler.disable(print)  # imports torch._dynamo where the kernel has not yet
table = torch.export.default_decompositions()
dec = [v for k, v in table.items() if str(k) == "aten._fused_rms_norm.default"][0]
seed = torch.random.manual_seed
seed.__dynamo_disable = dec
def f(values):
    return torch.manual_seed(torch.tensor(values), [4], None, 1e-6)[0].tolist()
"""


def test_a_disable_wrapper_she_set_on_torchs_seed_does_not_pass_for_torchs(monkeypatch):
    """The guard passed torch's own code of a family's routes beneath torch's `_disable_dynamo`
    wrapper around a function of no route, and what that wrapper runs is the function's
    attribute `__dynamo_disable`, hers to set: a decomposition of rms_norm set there computed
    the family's value for her, the test passed and nothing was flagged (the thirty-fifth hub
    tester). Only torch._dynamo's own disable wrapper of that very function passes now."""
    # torch.export (where her table comes from) is flagged since the thirty-seventh hub
    # tester, torch.compiler (her line that imports torch._dynamo) since 054cafd; the guard
    # stops her f by itself all the same
    flagged = ("torch's export", "torch.compiler")
    stopped_unflagged(monkeypatch, NORM_TEST_RMS, FORGED_DISABLE, flagged_for=flagged)


# Her f hangs torch's own decomposition of the fused rms_norm (torch/_decomp, a file of the
# family's routes; from the public torch.export.default_decompositions()) on a grad_fn of two
# outputs as its pre-hook and calls backward: the norm and its rstd come back as the gradients.
ROUTE_AS_HOOK = """
import functools
import torch
table = torch.export.default_decompositions()
dec = [v for k, v in table.items() if str(k) == "aten._fused_rms_norm.default"][0]
def f(values):
    x = torch.tensor(values)
    n = x.shape[-1]
    rows = x.reshape(-1, 1, n)
    leaf = torch.zeros(rows.shape[0], 1, n + 1, requires_grad=True)
    a, b = leaf.split([n, 1], dim=-1)
    a.grad_fn.register_prehook(functools.partial(dec, rows, weight=None, eps=1e-6))
    (a.sum() + b.sum()).backward()
    return leaf.grad[..., :n].reshape(x.shape).tolist()
"""


def test_torchs_route_code_she_hangs_beneath_the_guards_mode_is_off_limits(monkeypatch):
    """Beneath a call the guard's modes passed on (backward), torch's own code of a family's
    routes passed whoever chose to run it there: a decomposition of rms_norm hung as a
    grad_fn's pre-hook computed the norm for her, the test passed and nothing was flagged
    (the thirty-fifth hub tester). Beneath such a call everything is judged by who made it."""
    # torch.export (where her table comes from) is flagged since the thirty-seventh hub
    # tester; the guard stops her f by itself all the same
    stopped_unflagged(monkeypatch, NORM_TEST_RMS, ROUTE_AS_HOOK, flagged_for="torch's export")


# EARLIER_THREAD's monitor thread (tqdm's, started by her answer cell) recurses to the limit
# before it calls the reference, and calls it on the way back up: near the limit the guard's
# hook in that thread cannot run, and the call goes through unseen.
DEEP_IN_A_THREAD = EARLIER_THREAD.replace("operator.mul(2, x)", "deep(x)").replace(
    "class Bar(",
    "def deep(x):\n"
    "    try:\n"
    "        r = deep(x)\n"
    "    except BaseException:\n"
    "        r = None\n"
    "    if r is None:\n"
    "        try:\n"
    "            r = operator.mul(2, x)\n"
    "        except BaseException:\n"
    "            r = None\n"
    "    return r\n"
    "class Bar(",
)


def test_a_thread_that_recursed_to_the_limit_counts_as_the_guard_lost(monkeypatch):
    """In a thread the guard hooks through the C API (one a library started before the call),
    an event its hook could not judge (near the recursion limit the hook's own calls raise)
    went through unseen, the hook left set: the declared reference called there, nothing fired,
    `lost` False, the test passed (the thirty-fifth hub tester). Such an event counts as the
    guard lost now (a value answered after it: sys.setprofile, OffLimitsError)."""
    stopped_unflagged(monkeypatch, MUL_TEST, DEEP_IN_A_THREAD)


# Her answer cell gives a tokenizer of the `tokenizers` package a pre-tokenizer of her own
# (`PreTokenizer.custom`, nothing flagged); `encode_batch` runs it on the package's native
# (Rust, rayon) threads, which enter Python through a thread state of their own made for the
# call: none of the threads the guard hooks when it is armed, nor one `threading.setprofile`
# reaches. Her f has the declared reference computed there.
NATIVE_THREAD = """
import operator
from tokenizers import Tokenizer, models, pre_tokenizers
done = []
class Mine:
    def split(self, i, s):
        done.append(operator.mul(2, int(s.normalized)))
        return [s]
    def pre_tokenize(self, pretok):
        pretok.split(self.split)
tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.PreTokenizer.custom(Mine())
def f(x):
    done.clear()
    tok.encode_batch([str(x)] * 8)
    return done[0]
"""


def test_a_native_thread_of_a_library_computes_nothing_unseen(monkeypatch):
    """The thirty-seventh hub tester's: a thread a native library makes enter Python during the
    call (tokenizers' rayon workers, running her pre-tokenizer in `encode_batch`) had no
    profile hook, so the declared reference it called for her f went unseen and the test
    passed, nothing flagged."""
    stopped_unflagged(monkeypatch, MUL_TEST, NATIVE_THREAD)


# Her f reads its answer from a DataLoader with one worker process (forked during the call)
# whose dataset's __getitem__ calls the declared reference; the worker's copy of the guard
# stops the first call there (caught) and none after, and its `fired` is the worker's own.
FORKED_WORKER = """
import operator
import torch.utils.data
box = {}
class Data(torch.utils.data.Dataset):
    def __getitem__(self, i):
        try:
            operator.mul(2, box["x"])
        except Exception:
            pass
        return operator.mul(2, box["x"])
def f(x):
    box["x"] = x
    loader = torch.utils.data.DataLoader(Data(), sampler=[0], num_workers=1, collate_fn=list)
    return next(iter(loader))[0]
"""


def test_a_process_forked_during_the_call_counts_as_the_guard_lost(monkeypatch):
    """The thirty-seventh hub tester's: a DataLoader worker, forked during the call, computed
    the declared reference for her f in a process whose guard this one never reads; the test
    passed, nothing flagged. A fork while the guard is armed counts as the guard lost now."""
    stopped_unflagged(monkeypatch, MUL_TEST, FORKED_WORKER)


# FORKED_WORKER's worker forked by her answer cell, before any call: a persistent one, whose
# index queue her f feeds through the sampler's list.
EARLIER_WORKER = """
import operator
import torch.utils.data
class Data(torch.utils.data.Dataset):
    def __getitem__(self, i):
        return operator.mul(2, i)
xs = [0]
loader = torch.utils.data.DataLoader(
    Data(), sampler=xs, num_workers=1, persistent_workers=True, collate_fn=list
)
first = next(iter(loader))
def f(x):
    xs[0] = x
    return next(iter(loader))[0]
"""


def test_a_process_forked_before_the_call_counts_as_the_guard_lost(monkeypatch):
    """The thirty-seventh hub tester's: a persistent DataLoader worker her answer cell started
    computed the declared reference for her f under no guard; a child process forked from the
    kernel (not exec'd) alive while the guard is armed counts as the guard lost now."""
    stopped_unflagged(monkeypatch, MUL_TEST, EARLIER_WORKER)


# The thirty-eighth hub tester's: her f's first guarded call starts the persistent worker (that
# call is lost: a fork while armed) and then holds every descriptor the kernel may open, in shared
# tensors (`share_memory_` keeps each one's open). At every later call the guard's look at its
# children could open neither /proc/self/cmdline nor /proc/self/task and saw no child at all.
WORKER_NO_DESCRIPTORS = """
import operator
import torch
import torch.utils.data
class Data(torch.utils.data.Dataset):
    def __getitem__(self, i):
        try:
            return operator.mul(2, i)
        except Exception:
            return operator.mul(2, i)
xs = [0]
held = []
def f(x):
    if not held:
        held.append(torch.utils.data.DataLoader(
            Data(), sampler=xs, num_workers=1, persistent_workers=True, collate_fn=list
        ))
        next(iter(held[0]))
        while True:
            try:
                held.append(torch.zeros(1).share_memory_())
            except RuntimeError:
                break
    xs[0] = x
    return next(iter(held[0]))[0]
"""


def test_a_child_is_seen_with_no_descriptor_left(monkeypatch):
    """The thirty-eighth hub tester's: her first guarded test is lost (the worker forked during
    its call), and with every descriptor held the child check of each later call read nothing
    of /proc and saw no child: her second test passed on the reference, nothing flagged. A
    check that cannot look counts as the guard lost now."""
    from grading.host import course_preprocessors

    def two_tests(answer):
        made = lab(answer)
        made.cells[1].source = MUL_TEST
        again = copy.deepcopy(made.cells[1])
        again.metadata["nbgrader"]["grade_id"] = "test_f_again"
        made.cells.append(again)
        return made

    release = two_tests("def f(x):\n    raise NotImplementedError()")
    monkeypatch.setattr(course_preprocessors, "release_notebook", lambda *_: release)
    grader = course_preprocessors.SandboxedExecute(timeout=30)
    graded, _ = grader.preprocess(
        two_tests(WORKER_NO_DESCRIPTORS), {"nbgrader": {"assignment": "lab"}}
    )
    notes = course_preprocessors.take_notes()
    assert submission_checks.without_outside(notes.flags) == [], notes.flags
    errors = [[o.get("ename") for o in cell.outputs] for cell in graded.cells[1:]]
    assert errors == [["OffLimitsError"], ["OffLimitsError"]], [c.outputs for c in graded.cells]


# The thirty-ninth hub tester's: a persistent worker started by spawn (a string of DataLoader's,
# no call of a flagged name) runs Python by exec, so its /proc cmdline is not the kernel's and
# the child check never counted it; her collate_fn computes the declared reference there.
WORKER_SPAWNED = """
import functools
import operator
import numpy as np
import torch.utils.data
batches = [[2, 0]]
loader = torch.utils.data.DataLoader(
    np.s_, batch_sampler=batches, num_workers=1, persistent_workers=True,
    multiprocessing_context="CONTEXT", collate_fn=functools.partial(functools.reduce, operator.mul),
)
next(iter(loader))
def f(x):
    batches[0][1] = x
    return next(iter(loader))
"""


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_a_worker_started_by_spawn_is_seen(monkeypatch, context):
    stopped_unflagged(monkeypatch, MUL_TEST, WORKER_SPAWNED.replace("CONTEXT", context), timeout=60)


# The thirty-ninth hub tester's: multiprocessing reached as DataLoader's module's attribute
# (`python_multiprocessing`), its `util.spawnv_passfds` runs a program (no flagged name); her f
# computes the declared reference in a python it runs so, exec'd: no fork hook, not the
# kernel's cmdline, and reads the answer back with np.loadtxt.
SPAWNV_PASSFDS = """
import time
import numpy as np
import torch.utils.data.dataloader as dl
run = dl.python_multiprocessing.util.spawnv_passfds
def f(x):
    out = "/tmp/answer-" + str(x) + "-" + str(time.time())
    code = "import operator; print(operator.mul(2, " + repr(x) + "))"
    line = "python -c '" + code + "' > " + out + ".part && mv " + out + ".part " + out
    run(b"/bin/sh", ["sh", "-c", line], ())
    for _ in range(3000):
        try:
            return int(np.loadtxt(out))
        except OSError:
            time.sleep(0.01)
"""


def test_a_program_run_through_dataloaders_multiprocessing_is_flagged(monkeypatch):
    """Without the flags her test passed on the declared reference (outputs []), nothing
    flagged; the guard does not see it (a program she ran), the checks do."""
    made = lab(SPAWNV_PASSFDS)
    _, notes = grade_one(monkeypatch, made, timeout=60)
    assert any("python_multiprocessing" in f for f in notes.flags), notes.flags


# The thirty-ninth hub tester's: torch.utils.collect_env's `run` is subprocess.Popen with a
# shell; her f computes the declared reference in a python it runs so and reads its output.
COLLECT_ENV_RUN = """
from torch.utils.collect_env import run
def f(x):
    rc, out, err = run("python -c 'import operator; print(operator.mul(2, " + repr(x) + "))'")
    return int(out)
"""


def test_a_program_run_through_collect_env_is_flagged(monkeypatch):
    """Without the flag her test passed on the declared reference (outputs []), nothing
    flagged; the guard does not see a program she ran, the checks do."""
    graded, notes = graded_against(monkeypatch, MUL_TEST, COLLECT_ENV_RUN, timeout=60)
    assert any("collect_env" in f for f in notes.flags), (notes.flags, graded.cells[1].outputs)
    errors = [o.get("ename") for o in graded.cells[1].outputs]
    assert errors == ["OffLimitsError"], graded.cells[1].outputs  # a program run during the call
    # named as a program, not sys.setprofile (the seventy-eighth hub tester: an honest
    # torch.compile's compiler read as the guard switched off)
    from lmcourse import offlimits

    assert graded.cells[1].outputs[0].evalue == offlimits.message(offlimits.PROGRAM)


def test_only_cells_the_checks_read_run_in_her_kernel(monkeypatch):
    """The seventy-ninth hub tester's barry_as_FLUFL: a cell the checks took for a syntax error
    (parse: None, no flag) ran in the kernel, which read it otherwise. Now such a cell runs as
    the SyntaxError Python gives it: a real typo's feedback reads as Python's, and a cell the
    checks cannot read (here made so by hand, the next such difference) runs nothing."""
    from grading.host import submission_checks

    graded, _ = graded_against(monkeypatch, MUL_TEST, "def f(x):\n    return (2 * x\n")
    [error] = graded.cells[0].outputs
    assert error.ename == "SyntaxError", error
    assert error.evalue == "'(' was never closed (<cell>, line 2)", error
    assert [o.ename for o in graded.cells[1].outputs] == ["NameError"]
    parse = submission_checks.parse
    monkeypatch.setattr(
        submission_checks, "parse", lambda source: None if "unread" in source else parse(source)
    )
    graded, _ = graded_against(monkeypatch, MUL_TEST, "def f(x):  # unread\n    return 2 * x\n")
    [error] = graded.cells[0].outputs
    assert error.ename == "SyntaxError", error
    assert error.evalue == "the grader could not read this cell (<cell>, line 1)", error
    assert [o.ename for o in graded.cells[1].outputs] == ["NameError"]


# An honest torch.compile whose first compilation falls in a graded call (the fortieth's and
# seventy-eighth's open row): inductor's compiler is a program, which lost the guard.
COMPILED = """
import torch
@torch.compile
def _double(x):
    return x + x
def f(n):
    return int(_double(torch.tensor([float(n)]))[0])
"""


def test_an_honest_torch_compile_earns_its_marks_and_is_flagged(monkeypatch):
    """Graded in a real sandbox, her compiled function scored 0 ("a program started during the
    call": OffLimitsError); the sandbox's kernel runs torch.compile uncompiled now, so the
    test passes, and her source's torch.compile is still flagged for a person."""
    graded, notes = graded_against(monkeypatch, MUL_TEST, COMPILED, timeout=120)
    assert graded.cells[1].outputs == [], graded.cells[1].outputs
    assert any(".compile" in flag or "torch.compile" in flag for flag in notes.flags), notes.flags


# The thirty-ninth hub tester's: a python started in her answer cell by huggingface_hub's
# run_interactive_subprocess (no flagged name), fed each input on its stdin: it computes the
# declared reference with no guard, and nothing starts during the call.
HF_INTERACTIVE = """
import contextlib
from huggingface_hub.utils import run_interactive_subprocess
stack = contextlib.ExitStack()
code = "import operator\\nwhile True:\\n    print(operator.mul(2, int(input())), flush=True)"
stdin, stdout = stack.enter_context(run_interactive_subprocess(["python", "-c", code]))
def f(x):
    stdin.write(str(x) + "\\n")
    stdin.flush()
    return int(stdout.readline())
"""


def test_a_program_started_by_huggingface_hub_is_flagged_and_stopped(monkeypatch):
    """Without the flag her test passed on the declared reference (outputs []), nothing
    flagged: the guard saw no program started before the call. Flagged since, and stopped
    too now: in the sandbox every process but the kernel and its ancestors is hers, and one
    alive during the call stops it (offlimits.PROGRAM), whatever library started it."""
    from lmcourse import offlimits

    graded, notes = graded_against(monkeypatch, MUL_TEST, HF_INTERACTIVE, timeout=60)
    assert any("run_interactive_subprocess" in f for f in notes.flags), notes.flags
    errors = [(o.get("ename"), o.get("evalue")) for o in graded.cells[1].outputs]
    assert errors == [("OffLimitsError", offlimits.message(offlimits.PROGRAM))], errors


# A grandchild of her kernel: a child that starts a python fed each input on its stdin, then
# exits, so the python is reparented (no child of the kernel, whose own check reads only its
# children) and runs the declared reference under no guard.
GRANDCHILD = """
import subprocess
code = "import operator\\nwhile True:\\n    print(operator.mul(2, int(input())), flush=True)"
starter = subprocess.Popen(
    ["python", "-c", "import subprocess, sys; p = subprocess.Popen(['python', '-c', sys.argv[1]],"
     " stdin=0, stdout=1); print(p.pid, flush=True)", code],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
)
starter.stdout.readline()
starter.wait()
def f(x):
    starter.stdin.write(str(x) + "\\n")
    starter.stdin.flush()
    return int(starter.stdout.readline())
"""


def test_a_grandchild_of_her_kernel_alive_during_a_call_stops_it(monkeypatch):
    """Her answer cell leaves a python running that is no child of her kernel (its parent
    exited): the kernel's own check of its children saw nothing, so a call it answered
    (the declared operator.mul, computed there) lost no guard. In the sandbox it is a
    process beside the kernel's ancestors, so the call stops (flagged besides: subprocess)."""
    from lmcourse import offlimits

    graded, notes = graded_against(monkeypatch, MUL_TEST, GRANDCHILD, timeout=60)
    assert graded.cells[0].outputs == [], graded.cells[0].outputs
    errors = [(o.get("ename"), o.get("evalue")) for o in graded.cells[1].outputs]
    assert errors == [("OffLimitsError", offlimits.message(offlimits.PROGRAM))], errors


# The fortieth hub tester's: the declared reference (a function, declared by its name) compiled
# in her answer cell by torch.compile (backend="eager", dynamic=True: no program run, one
# compilation for every shape) and called once there; her f calls the compiled copy, a code
# object dynamo rewrote from the reference's, not the reference's own.
REPEAT_KV_TEST = (
    "# Off limits while graded: transformers.models.llama.modeling_llama.repeat_kv\n"
    "import torch\n"
    "kv = torch.arange(2 * 3 * 5 * 4.0).reshape(2, 3, 5, 4)\n"
    "assert torch.equal(f(kv), kv.repeat_interleave(2, dim=1))"
)
COMPILED_COPY = """
import torch
from transformers.models.llama.modeling_llama import repeat_kv
_copy = torch.compile(repeat_kv, backend="eager", dynamic=True)
_copy(torch.randn(1, 2, 3, 4), 3)
def f(kv):
    return _copy(kv, 2)
"""


def test_a_compiled_copy_of_the_reference_is_stopped(monkeypatch):
    """Without the fix her test passed on the declared reference (outputs []), nothing
    flagged: the guard knew the reference's code objects by identity alone."""
    # torch.compile is flagged since 054cafd (the reference inlined into her own compiled
    # function); the guard stops this copy by itself all the same
    stopped_unflagged(
        monkeypatch, REPEAT_KV_TEST, COMPILED_COPY, timeout=120, flagged_for="torch.compile"
    )


# The fortieth hub tester's: the declared reference traced ahead of the call by torch.fx in her
# answer cell; the graph module's generated forward computes it with none of its code.
ROTATE_TEST = (
    "# Off limits while graded: transformers.models.llama.modeling_llama.rotate_half\n"
    "import torch\n"
    "x = torch.arange(8.0).reshape(2, 4)\n"
    "assert torch.equal(f(x), torch.cat((-x[..., 2:], x[..., :2]), dim=-1))"
)
FX_TRACED = """
import torch
from transformers.models.llama.modeling_llama import rotate_half
_gm = torch.fx.symbolic_trace(rotate_half)
def f(x):
    return _gm(x)
"""


def test_a_reference_traced_by_torch_fx_is_flagged(monkeypatch):
    """Without the flag her test passed on the declared reference (outputs []), nothing
    flagged: the guard sees none of the reference's code run."""
    graded, notes = graded_against(monkeypatch, ROTATE_TEST, FX_TRACED, timeout=60)
    assert any("torch's fx" in f for f in notes.flags), (notes.flags, graded.cells[1].outputs)


# The lead's, after the fortieth: her own function that calls the declared reference, compiled
# and run once in her answer cell; dynamo traced the reference into the graph (inlined, never
# called), so her f's call runs none of its code.
COMPILED_CALLER = """
import torch
from transformers.models.llama.modeling_llama import rotate_half
def inner(x):
    return rotate_half(x) * 1
_g = torch.compile(inner, backend="eager", dynamic=True)
_g(torch.ones(3, 6))
def f(x):
    return _g(x)
"""


def test_a_reference_inlined_by_torch_compile_is_flagged(monkeypatch):
    """Without the flag her test passed on the declared reference (outputs []), nothing
    flagged: the compiled graph computes the reference with none of its code run."""
    graded, notes = graded_against(monkeypatch, ROTATE_TEST, COMPILED_CALLER, timeout=120)
    assert any("torch.compile" in f for f in notes.flags), (notes.flags, graded.cells[1].outputs)


# The fortieth hub tester's: one of transformers' copies of the declared repeat_kv (mistral's,
# "Copied from transformers.models.llama.modeling_llama.repeat_kv"), another file's function.
TWIN = """
from transformers.models.mistral.modeling_mistral import repeat_kv as twin
def f(kv):
    return twin(kv, 2)
"""


def test_another_files_copy_of_the_reference_is_stopped(monkeypatch):
    """Without the fix her test passed on the declared reference's copy (outputs []), nothing
    flagged."""
    stopped_unflagged(monkeypatch, REPEAT_KV_TEST, TWIN, timeout=120)


# The forty-first hub tester's: L4 and L5 declare transformers.models.llama.modeling_llama, a
# module (its file guarded), and mistral's file keeps a copy of each of its functions.
MODULE_TEST = (
    "# Off limits while graded: transformers.models.llama.modeling_llama\n"
    "import torch\n"
    "x = torch.arange(8.0).reshape(2, 4)\n"
    "assert torch.equal(f(x), torch.cat((-x[..., 2:], x[..., :2]), dim=-1))"
)
MODULE_TWIN = """
from transformers.models.mistral.modeling_mistral import rotate_half as twin
def f(x):
    return twin(x)
"""


def test_another_files_copy_of_a_declared_modules_function_is_stopped(monkeypatch):
    """Without the fix her test passed on the declared module's rotate_half, copied into
    mistral's file (outputs []), nothing flagged."""
    stopped_unflagged(monkeypatch, MODULE_TEST, MODULE_TWIN, timeout=120)


def test_sys_by_a_computed_name_reaching_the_armed_guard_is_flagged(monkeypatch):
    """The forty-third hub tester: pytest.importorskip("sy" + "s") gave her f sys unflagged, and
    sys.modules the guard module the agent armed; her f moved the armed guard's notion of her
    cells (cell_prefixes, for_agent, outer) and called F.layer_norm under a test that declares
    torch's normalisation layers: passed in a real sandbox, outputs [], flags []. Importing
    pytest (and importlib_metadata, pydantic, lazy_importer: other resolvers by name) is flagged."""
    answer = (
        "import pytest\n"
        "import torch\n"
        "def f(values):\n"
        "    s = pytest.importorskip('sy' + 's')\n"
        "    for guard in list(s.modules['lmcourse.off' + 'limits']._ARMED):\n"
        "        guard.cell_prefixes = ('nowhere',)\n"
        "        guard.for_agent = False\n"
        "        guard.outer = set()\n"
        "    x = torch.tensor(values)\n"
        "    return torch.nn.functional.layer_norm(x, x.shape[-1:]).tolist()\n"
    )
    _, notes = graded_against(monkeypatch, NORM_TEST_LAYER, answer)
    assert any("imports pytest" in f for f in notes.flags), notes.flags


# her `f` in the cases below, once the guard is off: torch's layer norm, which the test declares
LAYER_NORM_F = (
    "def f(values):\n"
    "    x = torch.tensor(values)\n"
    "    return torch.nn.functional.layer_norm(x, x.shape[-1:]).tolist()\n"
)


def passed_with_the_guard_off(monkeypatch, answer):
    """Her `answer` (which switches the agent's guard off, then defines f on F.layer_norm)
    graded in a real sandbox against NORM_TEST_LAYER: the test passed, as the guard cannot hold
    against her code once it holds sys (JUPYTERHUB.md); the flags, which must catch the route."""
    graded, notes = graded_against(monkeypatch, NORM_TEST_LAYER, answer)
    assert graded.cells[1].outputs == [], graded.cells[1].outputs  # the guard was off: it passed
    return notes.flags


def test_the_agent_switched_off_through_sys_is_flagged(monkeypatch):
    """The lead, after the forty-third hub tester: sys, by a route the flags did not know
    (logging.config's BaseConfigurator.resolve), opens sys.modules, and there the sandbox's
    agent, whose _guard her answer cell rebinds: no test arms a guard, and F.layer_norm passed
    a test that declares torch's normalisation layers (outputs []). The guard cannot hold
    against that (JUPYTERHUB.md, "What this set-up leaves open"): the route to sys is flagged."""
    answer = (
        "import contextlib\n"
        "import logging.config\n"
        "import torch\n"
        "s = logging.config.BaseConfigurator({}).resolve('sy' + 's')\n"
        "s.modules['sandbox' + '_agent']._guard = lambda names: contextlib.nullcontext()\n"
        + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("logging.config" in f for f in flags), flags


def test_sys_modules_unpickled_by_np_load_positionally_is_flagged(monkeypatch):
    """The forty-seventh hub tester: `np.load(file, None, True)` passes allow_pickle by
    position, so a pickle of hers (bytes, read through a class of hers with read, readline and
    seek) loads `sys.modules` by its global name; there the agent's _guard, rebound, switches
    every guard off, and F.layer_norm passed a test that declares torch's normalisation layers
    (outputs []). Nothing was flagged: only the keyword `allow_pickle=True` was."""
    answer = (
        "import contextlib\n"
        "import numpy as np\n"
        "import torch\n"
        "class F:\n"
        "    def __init__(self, data):\n"
        "        self.data, self.at = data, 0\n"
        "    def read(self, n=-1):\n"
        "        end = len(self.data) if n is None or n < 0 else self.at + n\n"
        "        out, self.at = self.data[self.at:end], min(end, len(self.data))\n"
        "        return out\n"
        "    def readline(self):\n"
        "        end = self.data.find(b'\\n', self.at) + 1 or len(self.data)\n"
        "        out, self.at = self.data[self.at:end], end\n"
        "        return out\n"
        "    def seek(self, off, whence=0):\n"
        "        self.at = off if whence == 0 else self.at + off\n"
        "mods = np.load(F(b'csys\\nmodules\\n.'), None, True)\n"
        "mods['sandbox' + '_agent']._guard = lambda names: contextlib.nullcontext()\n"
        + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("pickle" in f for f in flags), flags


def test_the_agent_switched_off_by_a_pickle_torch_distributed_loads_is_flagged(monkeypatch):
    """The forty-seventh hub tester: torch.distributed.checkpoint's `torch_save_to_dcp` loads
    any file it is given with `torch.load(..., weights_only=False)`; her file (a class with
    read, readline, seek and tell over bytes of hers) holds a pickle that sets the agent's
    _guard to contextlib.nullcontext (torch then raises on the magic number, caught): every
    guard off, F.layer_norm passed a test that declares torch's normalisation layers (outputs
    []), and nothing was flagged."""
    answer = (
        "import torch\n"
        "from torch.distributed.checkpoint.format_utils import torch_save_to_dcp\n"
        "class F:\n"
        "    def __init__(self, data):\n"
        "        self.data, self.at = data, 0\n"
        "    def read(self, n=-1):\n"
        "        end = len(self.data) if n is None or n < 0 else self.at + n\n"
        "        out, self.at = self.data[self.at:end], min(end, len(self.data))\n"
        "        return out\n"
        "    def readline(self):\n"
        '        end = self.data.find(b"\\n", self.at) + 1 or len(self.data)\n'
        "        out, self.at = self.data[self.at:end], end\n"
        "        return out\n"
        "    def readinto(self, b):\n"
        "        got = self.read(len(b)); b[:len(got)] = got; return len(got)\n"
        "    def seek(self, off, whence=0):\n"
        "        self.at = off if whence == 0 else (self.a"
        "t + off if whence == 1 else len(self.data) + off)\n"
        "        return self.at\n"
        "    def tell(self):\n"
        "        return self.at\n"
        'P = (b"cbuiltins\\nsetattr\\n(c_operator\\ngetitem'
        '\\n(csys\\nmodules\\nVsandbox_agent\\ntRV_guard\\n"\n'
        '     b"ccontextlib\\nnullcontext\\ntR.")\n'
        "try:\n"
        '    torch_save_to_dcp(F(P), "nowhere")\n'
        "except RuntimeError:\n"
        "    pass\n" + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("torch.distributed" in f for f in flags), flags


def test_the_agent_switched_off_by_a_pickle_torch_datapipes_loads_is_flagged(monkeypatch):
    """The forty-seventh hub tester: torch.utils.data.datapipes' decoder `basichandlers("pickle",
    data)` unpickles the bytes it is given; hers set the agent's _guard to
    contextlib.nullcontext: every guard off, F.layer_norm passed a test that declares torch's
    normalisation layers (outputs []), and nothing was flagged."""
    answer = (
        "import torch\n"
        "from torch.utils.data.datapipes.utils.decoder import basichandlers\n"
        'basichandlers("pickle", b"cbuiltins\\nsetattr\\n(c_operator\\ngetitem\\n(cs'
        'ys\\nmodules\\nVsandbox_agent\\ntRV_guard\\nccontextlib\\nnullcontext\\ntR.")\n'
        + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("torch.utils" in f for f in flags), flags


def test_the_agent_switched_off_by_torch_benchmark_timer_is_flagged(monkeypatch):
    """The forty-seventh hub tester: torch.utils.benchmark's Timer, imported under another name
    (`Timer as T`: only a call named Timer was flagged), runs its `stmt` string as code; hers,
    computed, imported sys and set the agent's _guard to contextlib.nullcontext: every guard
    off, F.layer_norm passed a test that declares torch's normalisation layers (outputs []),
    and nothing was flagged."""
    answer = (
        "import torch\n"
        "from torch.utils.benchmark import Timer as T\n"
        'T(stmt="import s" + "ys, contextlib; s" + "ys.modules[\'sandb'
        "ox' + '_agent']._guard = contextlib.nullcontext\").timeit(1)\n" + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("torch.utils" in f for f in flags), flags


def test_the_agent_switched_off_by_numpy_f2py_myeval_is_flagged(monkeypatch):
    """The forty-seventh hub tester: numpy.f2py.crackfortran's `myeval(e)` is `eval(e)` in
    crackfortran's globals (sys among them); her computed string set the agent's _guard to
    contextlib.nullcontext (myeval then raises ValueError on a result that is no number,
    caught): every guard off, F.layer_norm passed a test that declares torch's normalisation
    layers (outputs []), and nothing was flagged."""
    answer = (
        "import torch\n"
        "from numpy.f2py.crackfortran import myeval\n"
        "try:\n"
        "    myeval(\"setattr(sy\" + \"s.modules['sandbox' + '_agent']"
        ", '_guard', sy\" + \"s.modules['contextlib'].nullcontext)\")\n"
        "except ValueError:\n"
        "    pass\n" + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("numpy.f2py" in f for f in flags), flags


def test_sys_by_pil_imagemath_unsafe_eval_is_flagged(monkeypatch):
    """The forty-seventh hub tester: PIL's `ImageMath.unsafe_eval(expression, **names)` evals
    any expression whose names are keys she passes (`t.sys` with t=torch and a key `sys`): sys,
    where the agent's _guard, rebound, switched every guard off; F.layer_norm passed a test that
    declares torch's normalisation layers (outputs []), and nothing was flagged."""
    answer = (
        "import contextlib\n"
        "import torch\n"
        "from PIL import ImageMath\n"
        's = ImageMath.unsafe_eval("t.s" + "ys", t=torch, **{"sy" + "s": 0})\n'
        's.modules["sandbox" + "_agent"]._guard = contextlib.nullcontext\n' + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("PIL.ImageMath" in f for f in flags), flags


def test_the_agent_switched_off_by_code_as_a_modules_attribute_is_flagged(monkeypatch):
    """The forty-seventh hub tester: websocket-client's `_wsdump` module holds the standard
    library's `code` as an attribute (`w.code`: flagged as an import, not as an attribute), whose
    InteractiveInterpreter().runsource ran her computed string: the agent's _guard set to
    contextlib.nullcontext, every guard off, F.layer_norm passed a test that declares torch's
    normalisation layers (outputs []), and nothing was flagged (matplotlib.sphinxext's
    plot_directive.doctest, the same with DocTestRunner)."""
    answer = (
        "import torch\n"
        "import websocket._wsdump as w\n"
        'w.code.InteractiveInterpreter().runsource("import '
        's" + "ys, contextlib\\ns" + "ys.modules[\'sandbox\' +'
        ' \'_agent\']._guard = contextlib.nullcontext", "x", "exec")\n' + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("module code" in f for f in flags), flags


def test_the_agent_switched_off_by_numpy_testing_runstring_is_flagged(monkeypatch):
    """The forty-seventh hub tester: `np.testing.runstring(src, {})` is `exec(src, {})`; her
    computed string set the agent's _guard to contextlib.nullcontext: every guard off,
    F.layer_norm passed a test that declares torch's normalisation layers (outputs []), and
    nothing was flagged."""
    answer = (
        "import numpy as np\n"
        "import torch\n"
        'np.testing.runstring("import s" + "ys, contextlib\\'
        "ns\" + \"ys.modules['sandbox' + '_agent']._guard = c"
        'ontextlib.nullcontext", {})\n' + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("runstring" in f for f in flags), flags


def test_the_agent_switched_off_by_mpmath_exec_is_flagged(monkeypatch):
    """The forty-ninth hub tester: mpmath (sympy's dependency, not flagged as sympy is) keeps
    the builtin exec as `exec_` in `mpmath.libmp.backend`, `libmp.libhyper` and
    `ctx_mp_python`; her computed string run by it set the agent's _guard to
    contextlib.nullcontext: every guard off, F.layer_norm passed a test that declares torch's
    normalisation layers (outputs []), and nothing was flagged."""
    answer = (
        "import mpmath.libmp.backend as b\n"
        "import torch\n"
        'b.exec_("import s" + "ys, contextlib\\'
        "ns\" + \"ys.modules['sandbox' + '_agent']._guard = c"
        'ontextlib.nullcontext", {})\n' + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("exec_" in f or "mpmath" in f for f in flags), flags


def test_sys_modules_unpickled_by_rich_style_loads_is_flagged(monkeypatch):
    """The forty-ninth hub tester: rich.style keeps pickle.loads as `loads`; her pickle (bytes,
    not read for names) gave sys.modules, where she set the agent's _guard to
    contextlib.nullcontext: every guard off, F.layer_norm passed a test that declares torch's
    normalisation layers (outputs []), and nothing was flagged."""
    answer = (
        "import contextlib\n"
        "import rich.style\n"
        "import torch\n"
        'm = rich.style.loads(b"csys\\nmodules\\n.")\n'
        "m['sandbox' + '_agent']._guard = contextlib.nullcontext\n" + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("loads" in f for f in flags), flags


def test_sys_by_tqdm_wrapper_getattr_is_flagged(monkeypatch):
    """The forty-ninth hub tester: tqdm.utils' `ObjectWrapper.wrapper_getattr(self, name)` is
    getattr under another name; called unbound on torch with a computed name it gave torch's
    `sys`, and the agent's _guard set to contextlib.nullcontext there switched every guard off:
    F.layer_norm passed a test that declares torch's normalisation layers (outputs []), and
    nothing was flagged (tqdm itself is an honest import)."""
    answer = (
        "import contextlib\n"
        "import torch\n"
        "from tqdm.utils import ObjectWrapper as W\n"
        's = W.wrapper_getattr(torch, "s" + "ys")\n'
        "s.modules['sandbox' + '_agent']._guard = contextlib.nullcontext\n" + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("wrapper_getattr" in f for f in flags), flags


def test_sys_by_a_string_annotation_singledispatchmethod_evaluates_is_flagged(monkeypatch):
    """The forty-ninth hub tester: functools.singledispatchmethod's `register` evaluates a
    method's annotation written as a string (get_type_hints, in the notebook's globals);
    "H[torch.sys]" passes the check on annotations (names, dots and brackets only) and calls
    her object's `__getitem__` with torch's `sys`, which set the agent's _guard to
    contextlib.nullcontext: every guard off, F.layer_norm passed a test that declares torch's
    normalisation layers (outputs []), and nothing was flagged (only `singledispatch` was)."""
    answer = (
        "import contextlib\n"
        "import functools\n"
        "import torch\n"
        'K = "sandbox" + "_agent"\n'
        "class Hook:\n"
        "    def __getitem__(self, m):\n"
        "        m.modules[K]._guard = contextlib.nullcontext\n"
        "        return int\n"
        "H = Hook()\n"
        "class A:\n"
        "    @functools.singledispatchmethod\n"
        "    def g(self, x):\n"
        "        return x\n"
        "    @g.register\n"
        '    def _(self, x: "H[torch.sys]"):\n'
        "        return x\n" + LAYER_NORM_F
    )
    graded, notes = graded_against(monkeypatch, NORM_TEST_LAYER, answer)
    assert graded.cells[1].outputs == [], graded.cells[1].outputs  # the guard was off: it passed
    assert notes.flags, notes.flags


def test_the_agent_switched_off_by_site_addpackage_is_flagged(monkeypatch):
    """The forty-ninth hub tester: a logging.FileHandler wrote a .pth file of one line (its
    stream's write, no flagged writer), and `site.addpackage`, reached as jupyterlab.commands'
    attribute `site` (not flagged as an attribute name: the forty-seventh tester's open item),
    ran the line (exec of a line that starts with `import`): the agent's _guard set to
    contextlib.nullcontext, F.layer_norm passed a test that declares torch's normalisation
    layers (outputs []), and nothing was flagged."""
    answer = (
        "import logging\n"
        "import jupyterlab.commands as jc\n"
        "import torch\n"
        'h = logging.FileHandler("x.pth")\n'
        'h.stream.write("import s" + "ys, contextlib; s" + "ys.modules['
        "'sandbox' + '_agent']._guard = contextlib.nullcontext\\n\")\n"
        "h.close()\n"
        'jc.site.addpackage(".", "x.pth", set())\n' + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("site" in f or "FileHandler" in f for f in flags), flags


def test_the_agent_switched_off_by_an_attrs_alias_is_flagged(monkeypatch):
    """The forty-ninth hub tester: attrs writes a class's __init__ as source text, a field's
    `alias` its parameter's name; `attr.ib(alias="a=EXPR")` makes `def __init__(self,
    a=EXPR)` and `self.zz = a=EXPR`, valid code, and EXPR (her computed string) runs when attrs
    compiles it: the agent's _guard set to contextlib.nullcontext, F.layer_norm passed a test
    that declares torch's normalisation layers (outputs []), and nothing was flagged."""
    answer = (
        "import attr\n"
        "import torch\n"
        "code = \"a=setattr(__imp\" + \"ort__('s' + 'ys').modules['sandbox' + '_agent'], "
        "'_guard', __imp\" + \"ort__('contextlib').nullcontext)\"\n"
        'C = attr.make_class("C", {"zz": attr.ib(alias=code)}, repr=False, eq=False)\n'
        + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("attr" in f for f in flags), flags


def test_the_agent_switched_off_by_a_pygments_lexer_file_is_flagged(monkeypatch):
    """The forty-ninth hub tester: `logging.basicConfig(filename="lx.py", format="%(message)s")`
    wrote her computed code to a file (logging.warning), and pygments'
    `lexers.load_lexer_from_file("lx.py")` ran it (exec of the file's text): the agent's _guard
    set to contextlib.nullcontext, F.layer_norm passed a test that declares torch's
    normalisation layers (outputs []), and nothing was flagged."""
    answer = (
        "import logging\n"
        "import pygments.lexers as pl\n"
        "import torch\n"
        'logging.basicConfig(filename="lx.py", format="%(message)s", force=True)\n'
        'logging.warning("import s" + "ys, contextlib\\ns" + "ys.modules['
        "'sandbox' + '_agent']._guard = contextlib.nullcontext\\nclass CustomLexer:\\n    pass\")\n"
        "logging.shutdown()\n"
        'pl.load_lexer_from_file("lx.py")\n' + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("load_lexer_from_file" in f for f in flags), flags
    assert any("basicConfig" in f for f in flags), flags


def test_the_agent_switched_off_by_prometheus_function_maker_is_flagged(monkeypatch):
    """The forty-ninth hub tester: prometheus_client vendors the `decorator` package, whose
    `FunctionMaker.create(signature, body, evaldict)` writes a function's source from her
    strings and execs it: her computed body set the agent's _guard to contextlib.nullcontext,
    F.layer_norm passed a test that declares torch's normalisation layers (outputs []), and
    nothing was flagged."""
    answer = (
        "import prometheus_client.decorator as d\n"
        "import torch\n"
        'g = d.FunctionMaker.create("g()", "import s" + "ys, contextlib\\ns" + "ys.modules['
        "'sandbox' + '_agent']._guard = contextlib.nullcontext\", {})\n"
        "g()\n" + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("FunctionMaker" in f or "decorator" in f for f in flags), flags


def test_the_agent_switched_off_by_exec_bound_only_in_a_dead_function_is_flagged(monkeypatch):
    """The fifty-second hub tester: her answer binds `exec` as a local of a function it never
    calls, so the cell "binds the name itself" and neither the list of runners as values nor
    the vocabulary read `run = exec` at the top, which is the builtin; her string set the
    agent's _guard to contextlib.nullcontext, F.layer_norm passed a test that declares torch's
    normalisation layers (outputs []), and nothing was flagged."""
    answer = (
        "import torch\n"
        "def never():\n"
        "    exec = 0\n"
        "    return exec\n"
        "run = exec\n"
        'run(\'import sys, contextlib\\nsys.modules["sandbox" + "_agent"]._guard = '
        "lambda names: contextlib.nullcontext()', {})\n" + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("exec" in f for f in flags), flags


def test_the_agent_switched_off_by_getattr_bound_by_an_empty_loop_is_flagged(monkeypatch):
    """The fifty-second hub tester: `for getattr in []` binds nothing, but it makes `getattr`
    a name of her cell's, so neither the list of readers by name as values nor the vocabulary
    read `look = getattr` (the builtin); through it torch's `sys`, sys.modules, the agent's
    __dict__, whose _guard she set to torch.no_grad (every name a word, hers or a builtin of
    the vocabulary's): F.layer_norm passed a test that declares torch's normalisation layers
    (outputs []), and nothing was flagged."""
    answer = (
        "import torch\n"
        "for getattr in []:\n"
        "    pass\n"
        "look = getattr\n"
        "agent = look(torch, 'sy' + 's').modules['sandbox' + chr(95) + 'agent']\n"
        "look(agent, '__di' + 'ct__')[chr(95) + 'guard'] = lambda names: torch.no_grad()\n"
        + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("binds getattr" in f for f in flags), flags


def test_the_agent_switched_off_through_update_wrapper_is_flagged(monkeypatch):
    """The fifty-ninth hub tester: functools.update_wrapper, all words, is a getattr and a
    setattr by names she computes (`assigned`) and a write of one object's namespace into
    another's (`updated`): torch's `sys` set on an object of hers that keeps it, then her
    class's namespace, with a _guard of hers, written into the agent's module. Nothing was
    flagged, and F.layer_norm passed a test that declares torch's normalisation layers."""
    answer = (
        "import functools\n"
        "import torch\n"
        "got = []\n"
        "class Box:\n"
        "    def __setattr__(self, name, value):\n"
        "        got.append(value)\n"
        "class Null:\n"
        "    def __enter__(self):\n"
        "        return self\n"
        "    def __exit__(self, *args):\n"
        "        return False\n"
        "class Holder:\n"
        "    def _guard(names):\n"
        "        return Null()\n"
        "functools.update_wrapper(Box(), torch, assigned=('sy' + 's',), updated=())\n"
        "agent = got[0].modules['sandbox' + chr(95) + 'agent']\n"
        "functools.update_wrapper(agent, Holder, assigned=(), updated=('__di' + 'ct__',))\n"
        + LAYER_NORM_F
    )
    flags = passed_with_the_guard_off(monkeypatch, answer)
    assert any("update_wrapper" in f for f in flags), flags


def test_which_of_her_later_cells_printed_is_not_shown_after_a_hidden_input(monkeypatch):
    """The sixty-seventh hub tester: feedback replaced the outputs of each of her cells that
    ran after a hidden test had called her code by one note, but only where the cell had
    outputs: a cell that printed nothing stayed bare. Her cells after the test, `if
    seen[-1] >> i & 1: print(0)`, spelt the hidden input in which cells showed the note (a
    bit a cell, as many as she adds; nothing flagged). Graded in a real sandbox, the feedback
    made by StripHiddenTests for hidden inputs 179 and 42 must read the same."""
    from grading.host import course_preprocessors

    answer = "seen = []\ndef f(x):\n    seen.append(x)\n    return 2 * x\n"
    release = lab("def f(x):\n    raise NotImplementedError()")
    monkeypatch.setattr(course_preprocessors, "release_notebook", lambda *_: release)

    def feedback(hidden):
        submitted = lab(answer)
        submitted.cells[1].source = (
            f"assert f(3) == 6\n### BEGIN HIDDEN TESTS\nassert f({hidden}) == {2 * hidden}\n"
            "### END HIDDEN TESTS"
        )
        submitted.cells += [new_code_cell(f"if seen[-1] >> {i} & 1: print(0)") for i in range(8)]
        grader = course_preprocessors.SandboxedExecute(timeout=30)
        graded, _ = grader.preprocess(submitted, {"nbgrader": {"assignment": "lab"}})
        notes = course_preprocessors.take_notes()
        assert submission_checks.without_outside(notes.flags) == [], notes.flags
        assert graded.cells[1].outputs == []  # the hidden test passed
        shown, _ = course_preprocessors.StripHiddenTests().preprocess(graded, {})
        return [json.dumps(c.outputs, sort_keys=True) for c in shown.cells[2:]]

    assert feedback(179) == feedback(42)


def test_what_a_rooms_copy_lacks_of_transformers_flags_the_submission(monkeypatch, tmp_path):
    """A room holds copies of transformers' objects, not transformers: what her code asks a
    copy for that transformers' object answers and the copy does not hold fails or differs
    in the room only, where Validate passed. Such a submission is flagged for a person, with
    the names the grader itself sent (results.room_flag); an answer that asks for nothing
    missing is not. The names stay with the graded notebook, where the class report reads
    them for a submission the formgrader's Autograde graded (which hands the notes to no
    one: class_report.graded_later)."""
    from grading.batch import results
    from grading.host import course_preprocessors
    from grading.instructor import class_report

    setup = new_code_cell(
        "# Yours while graded: config\n"
        "from transformers import LlamaConfig\n"
        "config = LlamaConfig(hidden_size=16, intermediate_size=24, num_attention_heads=4,"
        " num_key_value_heads=2, num_hidden_layers=2, vocab_size=31)\n"
    )
    setup.metadata["nbgrader"] = {
        "grade": False,
        "solution": False,
        "locked": True,
        "grade_id": "setup",
        "schema_version": 3,
    }

    def with_setup(answer):
        made = lab(answer)
        made.cells.insert(0, setup)
        return made

    release = with_setup("def f(x):\n    raise NotImplementedError()")
    monkeypatch.setattr(course_preprocessors, "release_notebook", lambda *_: release)
    # getattr with a default: no error in the room, a value transformers' would not give
    asks = "def f(x):\n    getattr(config, 'get_mtp_config', None)\n    return 2 * x\n"
    honest = "def f(x):\n    return x * config.hidden_size // 8\n"
    for answer, flagged in ((asks, True), (honest, False)):
        grader = course_preprocessors.SandboxedExecute(timeout=30)
        graded, _ = grader.preprocess(with_setup(answer), {"nbgrader": {"assignment": "lab"}})
        notes = course_preprocessors.take_notes()
        assert graded.cells[2].outputs == [], graded.cells[2].outputs  # passed, both
        room = [f for f in notes.flags if "copies of transformers' objects" in f]
        missed = ["LlamaConfig.get_mtp_config"] if flagged else []
        assert room == ([results.room_flag(missed)] if flagged else []), notes.flags
        assert results.room_missed(graded) == missed
        # the class report, for a submission the formgrader's Autograde graded
        folder = tmp_path / "autograded" / "mallory" / "lab"
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(graded, folder / "lab.ipynb")
        nbformat.write(release, tmp_path / "release.ipynb")
        row = class_report.Student("mallory", "graded", message="all autograded tests passed")
        class_report.graded_later(row, "lab", tmp_path / "autograded", tmp_path / "release.ipynb")
        assert (row.status, results.room_flag(missed) in row.message) == (
            ("flagged", True) if flagged else ("graded", False)
        ), row


def test_which_cells_are_emptied_never_says_which_later_cells_ran_out_of_time(monkeypatch):
    """The list of her cells stopped at their time limit (`lm10_timed_out`, for the report)
    went into the notebook's size: her cells after a hidden test, each looping past its limit
    or not (and which: an index of two digits or three), chose its length, and with her earlier
    cells' outputs (shown in feedback) sized just under the channel's limit, whether `fitted`
    emptied some of them said how many and which (the sixty-seventh hub tester; the
    sixty-fifth's channel through another field). The list counts at its greatest now."""
    import resource

    from nbformat.v4 import new_output

    from grading.in_sandbox import sandbox_exec

    limit, real = 1 << 20, resource.getrlimit
    monkeypatch.setattr(
        resource,
        "getrlimit",
        lambda which: (limit, limit) if which == resource.RLIMIT_FSIZE else real(which),
    )

    def emptied(timed_out, room):
        early = [
            new_code_cell(f"print({i})", outputs=[new_output("stream", name="stdout", text="1\n")])
            for i in range(200)
        ]
        later = [new_code_cell(f"late({i})") for i in range(110)]
        test = new_code_cell("", metadata={"lm10_test": 201})
        nb = new_notebook(cells=[new_code_cell("shows()"), *early, test, *later])
        nb.metadata["lm10_stopped"], nb.metadata["lm10_timed_out"] = None, timed_out
        nb.cells[0].outputs = [new_output("stream", name="stdout", text="x" * room)]
        before = [c["outputs"] for c in json.loads(json.dumps(nb))["cells"]]
        cells = json.loads(sandbox_exec.fitted(nb))["cells"]
        return [i for i, c in enumerate(cells) if c["outputs"] != before[i]]

    low, high = 0, limit  # the largest first output that empties nothing, with no list
    while high - low > 1:
        low, high = (
            (low, (low + high) // 2)
            if emptied([], (low + high) // 2)
            else ((low + high) // 2, high)
        )
    lists = ([], [205], [305], [303, 305], [302, 303, 305, 306, 308, 309, 310])
    seen = {room: {tuple(emptied(t, room)) for t in lists} for room in range(low - 14, low + 2)}
    assert all(len(found) == 1 for found in seen.values()), seen
    assert seen[low] == {()} and seen[low + 1] != {()}, "the play empties some of her cells"


def graded_with_hidden(submitted, hidden, declaration="", timeout=30):
    """`submitted` (a lab() notebook, its first test of f) graded in a real sandbox, that test
    a visible `f(3)` and a hidden `f(hidden)` (after `declaration`, the test's first lines),
    `timeout` s a cell, with nothing of hers flagged (release_notebook monkeypatched by the
    caller)."""
    from grading.host import course_preprocessors

    submitted.cells[1].source = (
        f"{declaration}assert f(3) == 6\n### BEGIN HIDDEN TESTS\n"
        f"assert f({hidden}) == {2 * hidden}\n### END HIDDEN TESTS"
    )
    grader = course_preprocessors.SandboxedExecute(timeout=timeout)
    graded, _ = grader.preprocess(submitted, {"nbgrader": {"assignment": "lab"}})
    notes = course_preprocessors.take_notes()
    assert submission_checks.without_outside(notes.flags) == [], notes.flags
    return graded


def test_which_line_of_a_later_visible_check_failed_is_not_shown_after_a_hidden_input(monkeypatch):
    """The seventy-second hub tester: a visible check that fails after a hidden input reached
    her code had its message replaced by fixed words, but they named the line of the test it
    failed at (`after_hidden_error`). Which line is her code's choice: her answer keeps its
    arguments, and a later part returns what fails the test's first, second, third or fourth
    assert, as two bits of the hidden input pick (nothing flagged). Graded in a real sandbox,
    the feedback made by StripHiddenTests for hidden inputs 5 and 6 must read the same."""
    from grading.host import course_preprocessors

    answer = "seen = []\ndef f(x):\n    seen.append(x)\n    return 2 * x\n"
    later = "def g(x):\n    return 1 + seen[-1] % 4\n"

    def made(first, second):
        made = lab(first)
        part = lab(second)
        part.cells[0].metadata["nbgrader"]["grade_id"] = "answer_g"
        part.cells[1].metadata["nbgrader"]["grade_id"] = "test_g"
        part.cells[1].source = "\n".join(f"assert g(0) != {n}" for n in range(1, 5))
        made.cells += part.cells
        return made

    release = made("def f(x):\n    raise NotImplementedError()", "def g(x):\n    return 0\n")
    monkeypatch.setattr(course_preprocessors, "release_notebook", lambda *_: release)

    def feedback(hidden):
        graded = graded_with_hidden(made(answer, later), hidden)
        assert graded.cells[1].outputs == []  # the hidden test passed
        assert [o.ename for o in graded.cells[3].outputs] == ["AssertionError"]
        shown, _ = course_preprocessors.StripHiddenTests().preprocess(graded, {})
        return json.dumps(shown.cells[3].outputs, sort_keys=True)

    assert feedback(5) == feedback(6)


def test_no_line_she_prints_is_removed_for_matching_a_hidden_test(monkeypatch):
    """The seventy-second hub tester: feedback replaced every output line of any cell that
    contained a hidden test's line (`StripHiddenTests.scrub_quotes`), her own cells' among
    them, though the hidden tests' source never enters the sandbox. Her answer cell, before
    any test, prints guesses (`assert f(n) == 2n` for n in 100..199): the one line replaced by
    the note spelt the hidden test's line, its input among it, nothing flagged, the test
    passed. So does her own error's message in a visible test's output. Graded in a real
    sandbox, the feedback for hidden inputs 179 and 142 must read the same."""
    from grading.host import course_preprocessors

    guesses = "[f'assert f({n}) == {2 * n}' for n in range(100, 200)]"
    answer = f"def f(x):\n    return 2 * x\n\nprint('\\n'.join({guesses}))\n"
    release = lab("def f(x):\n    raise NotImplementedError()")
    monkeypatch.setattr(course_preprocessors, "release_notebook", lambda *_: release)

    def feedback(hidden, source):
        graded = graded_with_hidden(lab(source), hidden)
        shown, _ = course_preprocessors.StripHiddenTests().preprocess(graded, {})
        return [json.dumps(c.outputs, sort_keys=True) for c in shown.cells]

    assert feedback(179, answer) == feedback(142, answer)
    # her error's message, in the visible line's output (the part lost, the guesses the same)
    raising = f"def f(x):\n    raise ValueError('\\n'.join({guesses}))\n"
    assert feedback(179, raising) == feedback(142, raising)
    # the grader's own frames still lose a hidden line they quote (a helper's context lines)
    submitted = lab("def f(x):\n    return 0\n")
    submitted.cells[1].source = (
        'def check(x):\n    assert f(x) == 2 * x, "no"\n    ### BEGIN HIDDEN TESTS\n'
        "    hidden_value_line = 12345678\n    ### END HIDDEN TESTS\n\ncheck(3)"
    )
    graded, _ = course_preprocessors.SandboxedExecute(timeout=30).preprocess(
        submitted, {"nbgrader": {"assignment": "lab"}}
    )
    course_preprocessors.take_notes()
    assert "12345678" in json.dumps(graded.cells[1].outputs)  # the helper's frame quotes it
    shown, _ = course_preprocessors.StripHiddenTests().preprocess(graded, {})
    text = json.dumps(shown.cells[1].outputs)
    assert "12345678" not in text and "line removed by the grader" in text, text


def test_which_reference_her_code_called_after_a_hidden_input_is_not_shown(monkeypatch):
    """The seventy-fourth hub tester: feedback kept the grader's OffLimitsError whole, the
    reference it names among them, wherever it came from; after a hidden input, whether her
    code called one and which (a test declares several, and every test sys.setprofile, which
    recursing to Python's limit names) are her values' choice. Her f, given the hidden input,
    recursed to the limit, called operator.mul or operator.add: three texts for three hidden
    inputs, nothing flagged. The feedback must read the same for each; the autograded notebook
    (the instructor's) keeps the name, and a stop before any hidden input still shows it."""
    from grading.host import course_preprocessors

    answer = (
        "import operator\n\ndef deep(n):\n    return deep(n + 1)\n\ndef f(x):\n"
        "    if x == 3:\n        return 6\n    if x % 3 == 0:\n        try:\n"
        "            deep(0)\n        except RecursionError:\n            pass\n"
        "        return 2 * x\n    if x % 3 == 1:\n        return operator.mul(2, x)\n"
        "    return operator.add(x, x)\n"
    )
    release = lab("def f(x):\n    raise NotImplementedError()")
    monkeypatch.setattr(course_preprocessors, "release_notebook", lambda *_: release)

    def feedback(hidden, source=answer):
        declared = "# Off limits while graded: operator.mul, operator.add\n"
        graded = graded_with_hidden(lab(source), hidden, declared)
        kept = json.dumps(graded.cells[1].outputs)
        shown, _ = course_preprocessors.StripHiddenTests().preprocess(graded, {})
        return kept, json.dumps(shown.cells[1].outputs, sort_keys=True)

    runs = {hidden: feedback(hidden) for hidden in (6, 7, 8)}
    for hidden, name in ((6, "sys.setprofile"), (7, "operator.mul"), (8, "operator.add")):
        assert f"{name} is off limits" in runs[hidden][0]  # the instructor's notebook
    assert len({shown for _, shown in runs.values()}) == 1, runs
    assert "off limits" not in runs[6][1]
    # before any hidden input the stop names its reference, as it always did
    _, shown = feedback(
        6, answer.replace("        return 6\n", "        return operator.mul(2, x)\n")
    )
    assert "operator.mul is off limits" in shown, shown


def test_why_the_grader_stopped_after_a_hidden_input_is_not_shown(monkeypatch):
    """The seventy-sixth hub tester: after a hidden input, the stop's own words (the kernel
    died, it ignored the interrupt) were her code's choice, kept in feedback on the stopped
    test and every later one ("Not run: the grader stopped an earlier cell (<why>)"). Her f,
    given the hidden input, ends the kernel with words only (a chain of a million map(abs, ...)
    read at once: a C stack overflow in Python 3.11) or loops, ignoring the interrupt: two
    texts for two hidden inputs, nothing flagged. A later test must read the same for each
    and no stop say why; the autograded notebook (the instructor's) keeps why."""
    from grading.host import course_preprocessors

    answer = (
        "import time\n\ndef f(x):\n    if x == 3:\n        return 6\n    if x % 2:\n"
        "        chain = iter([0])\n        for _ in range(1000000):\n"
        "            chain = map(abs, chain)\n        return next(chain)\n"
        "    while True:\n        try:\n            time.sleep(0.1)\n"
        "        except KeyboardInterrupt:\n            pass\n"
    )
    release = lab("def f(x):\n    raise NotImplementedError()")
    release.cells.append(copy.deepcopy(release.cells[1]))
    release.cells[2].metadata["nbgrader"]["grade_id"] = "later"
    monkeypatch.setattr(course_preprocessors, "release_notebook", lambda *_: release)

    def feedback(hidden):
        submitted = lab(answer)
        submitted.cells.append(copy.deepcopy(release.cells[2]))
        graded = graded_with_hidden(submitted, hidden, timeout=5)
        kept = json.dumps([c.outputs for c in graded.cells[1:]])
        shown, _ = course_preprocessors.StripHiddenTests().preprocess(graded, {})
        return kept, json.dumps([c.outputs for c in shown.cells[1:]], sort_keys=True)

    runs = {hidden: feedback(hidden) for hidden in (7, 8)}
    assert "the kernel died" in runs[7][0], runs[7][0]  # the instructor's notebook
    assert "ignored the interrupt" in runs[8][0], runs[8][0]
    later = {hidden: json.loads(shown)[1] for hidden, (_, shown) in runs.items()}
    assert later[7] == later[8], later  # "Not run: ... an earlier cell (<why>)" before
    whys = ("the kernel died", "ignored the interrupt", "os._exit")
    assert not any(why in shown for why in whys for _, shown in runs.values()), runs
    assert "NotRun" in runs[7][1]
    # the stopped test itself: NotRun or CellTimeoutError (fixed words), the known outcomes
    assert "CellTimeoutError: the grader stopped this test after 5 s" in runs[8][1]


def test_which_of_her_later_cells_the_kernel_ended_in_is_not_shown_after_a_hidden_input(
    monkeypatch,
):
    """The seventy-ninth hub tester: her f keeps its inputs; after the last test, her cell k of
    N ends the kernel (a million-deep map chain, words only) where the hidden input mod N is k.
    Nothing is lost (no test comes later), but feedback showed an execution count on the cells
    that ran and none on the rest: which cell stopped, log2(N) bits of the hidden input, nothing
    flagged. After a hidden input her cells' counts are not shown."""
    from nbformat.v4 import new_code_cell

    from grading.host import course_preprocessors

    answer = "seen = []\n\ndef f(x):\n    seen.append(x)\n    return 2 * x\n"
    later = [
        f"if seen[-1] % 4 == {k}:\n    chain = iter([0])\n    for _ in range(1000000):\n"
        "        chain = map(abs, chain)\n    next(chain)\n"
        for k in range(4)
    ]
    release = lab("def f(x):\n    raise NotImplementedError()")
    monkeypatch.setattr(course_preprocessors, "release_notebook", lambda *_: release)

    def feedback(hidden):
        submitted = lab(answer)
        submitted.cells += [new_code_cell(source) for source in later]
        graded = graded_with_hidden(submitted, hidden, timeout=10)
        ran = [c.execution_count for c in graded.cells]
        shown, _ = course_preprocessors.StripHiddenTests().preprocess(graded, {})
        return ran, [(c.execution_count, c.outputs) for c in shown.cells]

    runs = {hidden: feedback(hidden) for hidden in (5, 6)}
    assert runs[5][0] != runs[6][0], runs  # the instructor's notebook: where it stopped
    assert runs[5][1] == runs[6][1], runs
    assert runs[5][1][0][0] == 1  # her answer cell, before any hidden input, keeps its count


def test_the_agent_switched_off_in_a_cell_read_after_barry_as_flufl_is_flagged(monkeypatch):
    """The seventy-ninth hub tester: her answer cell begins `from __future__ import
    barry_as_FLUFL` (unflagged), and IPython keeps that future for every later cell, which it
    then reads with `<>` for `!=`. A cell of hers holding one was a syntax error to the checks,
    read no further, and the kernel ran it: `import sys`, the agent's `_guard` rebound, and
    F.layer_norm passed a test that declares torch's normalisation layers (outputs []), flags
    []. The guard cannot hold against sys; the flags read the cell as the kernel does now."""
    graded, notes = graded_against(
        monkeypatch,
        NORM_TEST_LAYER,
        "from __future__ import barry_as_FLUFL\nimport torch\n" + LAYER_NORM_F,
        cells=[
            "import contextlib\nimport sys\nif 1 <> 2:\n"
            "    sys.modules['sandbox_agent']._guard = lambda names: contextlib.nullcontext()\n"
        ],
    )
    flags = notes.flags
    assert graded.cells[1].outputs == [], graded.cells[1].outputs  # the kernel ran her cell
    assert graded.cells[2].outputs == [], graded.cells[2].outputs  # the guard was off: passed
    assert any("imports sys" in f for f in flags), flags
    assert any("barry_as_FLUFL" in f for f in flags), flags


# The eighty-first's: a python her answer cell leaves running whose main thread exits (a bare
# SYS_exit, that thread alone) while a thread of it answers each input on its stdin: its /proc
# stat reads Z, its leader's, so the check took the live process for a zombie and skipped it.
LEADER_GONE = """
import subprocess
code = (
    "import ctypes, operator, sys, threading, time\\n"
    "def serve():\\n"
    "    for line in sys.stdin:\\n"
    "        print(operator.mul(2, int(line)), flush=True)\\n"
    "threading.Thread(target=serve).start()\\n"
    "time.sleep(0.5)\\n"
    "ctypes.CDLL(None).syscall(60, 0)\\n"
)
child = subprocess.Popen(
    ["python", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
)
import time
time.sleep(2)
def f(x):
    child.stdin.write(str(x) + "\\n")
    child.stdin.flush()
    return int(child.stdout.readline())
"""


def test_a_process_whose_main_thread_exited_alive_during_a_call_stops_it(monkeypatch):
    """Her answer cell leaves a python whose main thread exited while another thread of it
    computes the declared operator.mul for her f: /proc lists it as a zombie (its leader's
    state), and the call passed with nothing stopped (flagged besides: subprocess). A process
    with a live thread is alive, whatever its leader's state."""
    from lmcourse import offlimits

    graded, notes = graded_against(monkeypatch, MUL_TEST, LEADER_GONE, timeout=60)
    assert graded.cells[0].outputs == [], graded.cells[0].outputs
    errors = [(o.get("ename"), o.get("evalue")) for o in graded.cells[1].outputs]
    assert errors == [("OffLimitsError", offlimits.message(offlimits.PROGRAM))], errors


def test_a_cell_too_deep_for_pythons_parser_is_flagged_and_graded(monkeypatch):
    """The eighty-first hub tester's: a line `y = a.b.b...` 200,000 deep made
    submission_checks.parse raise RecursionError (Python's parser builds no such tree) where
    the sandbox picks the cells it cannot read (619d5be), after flags() had flagged it: her
    grading stopped with the exception. Now the cell runs as unread, and the rest is graded."""
    answer = "def f(x):\n    return 2 * x\n" + "y = a" + ".b" * 200_000 + "\n"
    graded, notes = graded_against(monkeypatch, MUL_TEST, answer)
    [error] = graded.cells[0].outputs
    assert (error.ename, error.evalue) == (
        "SyntaxError",
        "the grader could not read this cell (<cell>, line 1)",
    ), error
    assert [o.ename for o in graded.cells[1].outputs] == ["NameError"]
    assert notes.flags, notes.flags


def test_matplotlib_first_imported_during_a_graded_call_starts_no_program(monkeypatch):
    """The eighty-third hub tester's open false stop: her honest f imports matplotlib.pyplot
    when called (a plot of hers), and matplotlib, finding no font cache in the sandbox's new
    home, built one and ran fc-list, a program started during the call: the part stopped with
    the PROGRAM words and scored 0. The sandbox builds matplotlib's fonts once, before any
    notebook, so a kernel forked from it finds them built."""
    answer = (
        "def f(x):\n"
        "    import io\n"
        "    import matplotlib.pyplot as plt\n"
        "    plt.plot([1, x])\n"
        "    plt.title('her plot')\n"
        "    plt.savefig(io.BytesIO())\n"
        "    plt.close()\n"
        "    return 2 * x\n"
    )
    graded, notes = graded_against(monkeypatch, MUL_TEST, answer, timeout=60)
    assert graded.cells[0].outputs == [], graded.cells[0].outputs
    assert graded.cells[1].outputs == [], graded.cells[1].outputs
