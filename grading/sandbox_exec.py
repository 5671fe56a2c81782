"""Execute one notebook inside the grading sandbox; the only grader code that runs there.

    python sandbox_exec.py CELL_TIMEOUT OUTPUT_CHARS FD < notebook.ipynb  (executed -> FD)
    python sandbox_exec.py --serve REQUESTS_FD RESULTS_FD      (warm: many notebooks, see serve)

The grader (grading/sandbox.py) starts this script inside bubblewrap with the prepared notebook
(hidden tests restored) on stdin and a file opened on descriptor FD. The script makes itself
non-dumpable first, so the student's kernel (same user, started by this process) can read
neither its memory nor that descriptor through /proc; the kernel never inherits it.
It then runs every cell with nbclient: an error in a cell does not stop the run, a cell still
running after CELL_TIMEOUT seconds is interrupted and gets an error, and if the kernel dies or
stops answering, that cell and every later code cell get an error saying so, so a test cell
that never ran can never be read as passed. Each output is cut to OUTPUT_CHARS characters.

Everything this process writes to stdout and stderr is a log for the grader, which trusts none
of it (the kernel shares these descriptors); only descriptor FD carries the result.
"""

import contextlib
import ctypes
import json
import os
import queue
import re
import shutil
import signal
import sys
import time
import warnings

PR_SET_DUMPABLE = 4
INTERRUPT_GRACE = 10  # seconds an interrupted kernel has to take the next request
STOPPED = "The grader stopped this cell: {reason}. Later cells were not run; their tests score 0."


def not_dumpable():
    with contextlib.suppress(OSError, AttributeError):  # not Linux: nothing to protect
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


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
            if isinstance(value, str | list):
                value = value if isinstance(value, str) else "".join(value)
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


def fork_kernel(result):
    """Start an IPython kernel in a child of this (pre-imported) process, as
    `python -m ipykernel_launcher -f FILE` would in a new one; return its ForkedKernel.
    The kernel closes `result`, the executor's descriptor for the executed notebook, and every
    other descriptor but stdout and stderr, so student code can neither forge nor spoil it."""
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
        os.close(result)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        sys.argv = [sys.executable, "-m", "ipykernel_launcher", "-f", path]
        from ipykernel.kernelapp import IPKernelApp

        IPKernelApp.launch_instance(sys.argv[3:])
    finally:
        os._exit(0)


def clear(folders):
    """Before and after each submission: kill every process in this sandbox but its init and
    this one (what a student left running, detached or not), and empty the writable folders."""
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
    for folder in folders:
        empty(folder, mounts)


def mount_points():
    """Every mount point in this sandbox (/proc/self/mountinfo's fifth field, octal escapes
    decoded): the read-only binds of the library and the interpreter, which can sit inside a
    writable folder when the course itself lives under /tmp."""
    with open("/proc/self/mountinfo") as handle:
        return {
            re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            for line in handle
        }


def empty(folder, mounts):
    """Remove everything in `folder` except mount points and the folders that lead to one
    (those are emptied around their mounts instead)."""
    for entry in os.scandir(folder):
        path = os.path.join(folder, entry.name)
        if path in mounts:
            continue
        if entry.is_dir(follow_symlinks=False) and any(m.startswith(path + "/") for m in mounts):
            empty(path, mounts)
            continue
        if entry.is_dir(follow_symlinks=False):
            for root, dirs, _ in os.walk(path):  # a student may have made them read-only
                for name in dirs:
                    with contextlib.suppress(OSError):
                        os.chmod(os.path.join(root, name), 0o700)
            with contextlib.suppress(OSError):
                os.chmod(path, 0o700)
            shutil.rmtree(path, ignore_errors=True)
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


def read_exact(stream, size):
    """`size` bytes from the unbuffered `stream`, or None at its end. One read of a pipe
    returns at most what the pipe holds (64 KiB on Linux), so read until there are `size`."""
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def write_all(stream, data):
    """All of `data` to the unbuffered `stream` (a raw write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[stream.write(view) :]


def serve(requests_fd, results_fd):
    """The warm sandbox: import what the lab's setup imports (source on the requests descriptor
    first), then, per request (a notebook), fork an executor that forks the kernel from this
    process, so every submission gets a new kernel without paying the imports again, and write
    the executed notebook on the results descriptor. Between submissions every other process
    in the sandbox is killed and the home and /tmp are emptied."""
    requests = os.fdopen(requests_fd, "rb", buffering=0)
    results = os.fdopen(results_fd, "wb", buffering=0)
    folders = [f for f in (os.getcwd(), "/tmp", "/dev/shm") if os.path.isdir(f)]
    header = read_exact(requests, 8)
    warm = read_exact(requests, int.from_bytes(header, "big")).decode() if header else ""
    import ipykernel.kernelapp  # noqa: F401 (what the kernel and the executor need)
    import jupyter_client.asynchronous  # noqa: F401
    import nbclient  # noqa: F401
    import nbformat  # noqa: F401

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(warm, "<lab imports>", "exec"), {"__name__": "lm10_warm"})
        except Exception as error:  # noqa: BLE001 (fewer modules warm: slower, still right)
            print(f"warm imports failed: {type(error).__name__}: {error}", file=sys.stderr)
    write_all(results, b"READY\n")
    while (header := read_exact(requests, 8)) is not None:
        request = json.loads(read_exact(requests, int.from_bytes(header, "big")))
        clear(folders)
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the executor
            try:
                requests.close()
                results.close()
                os.close(reader)
                with os.fdopen(writer, "w") as out:
                    km = fork_kernel(out.fileno())
                    try:
                        text = run_notebook(
                            request["notebook"], request["cell_timeout"], request["limit"], km=km
                        )
                    finally:
                        km.shutdown_kernel(now=True)
                    out.write(text)
            finally:
                os._exit(0)
        os.close(writer)
        data, size = [], 0
        with os.fdopen(reader, "rb") as incoming:
            while chunk := incoming.read(1 << 20):  # to the end, keeping what the grader reads
                if size <= request["max_bytes"]:
                    data.append(chunk)
                size += len(chunk)
        data = b"".join(data)[: request["max_bytes"] + 1]
        os.waitpid(pid, 0)
        clear(folders)
        write_all(results, len(data).to_bytes(8, "big") + data)


def run_notebook(text, cell_timeout, limit, km=None):
    """The executed notebook's JSON for the notebook JSON `text`: every cell run in a kernel
    (a new one, or the one `km` manages), the grader's marks added, each output cut."""
    import nbformat
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    nb = nbformat.reads(text, as_version=4)
    stopped = None  # (cell index, reason)

    def on_cell_executed(cell, cell_index, execute_reply):
        content = execute_reply.get("content", {}) if execute_reply else {}
        timed_out = content.get("ename") == "CellTimeoutError"  # nbclient's stand-in reply
        if content.get("status") == "error" and (
            timed_out or not any(o.get("output_type") == "error" for o in cell.outputs)
        ):
            ename, evalue = content.get("ename", "Error"), content.get("evalue", "")
            cell.outputs.append(nbformat.from_dict(error_output(ename, evalue)))

    client = NotebookClient(
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
    try:
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                try:
                    client.execute_cell(cell, index)
                except DeadKernelError:
                    stopped = (
                        index,
                        "the kernel died while it ran (os._exit, a crash, or it ran out of memory)",
                    )
                    break
                except CellTimeoutError:
                    stopped = (index, f"it did not stop {cell_timeout} s after it was interrupted")
                    break
                timed_out = any(
                    o.get("ename") == "CellTimeoutError" for o in cell.get("outputs", [])
                )
                if timed_out and not run_sync(answers)(client.kc, INTERRUPT_GRACE):
                    stopped = (index, f"it ran past {cell_timeout} s and ignored the interrupt")
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
            stopped = (first, f"the kernel failed: {type(error).__name__}: {error}"[:500])
    if stopped is not None:
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
        None if stopped is None else {"cell": stopped[0], "reason": stopped[1]}
    )
    return json.dumps(nb)


def main():
    not_dumpable()
    if sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), int(sys.argv[3]))
        return
    cell_timeout, limit = int(sys.argv[1]), int(sys.argv[2])
    descriptor = int(sys.argv[3])
    os.set_inheritable(descriptor, False)
    result = os.fdopen(descriptor, "w", closefd=True)
    text = sys.stdin.read()
    sys.stdin.close()
    result.write(run_notebook(text, cell_timeout, limit))
    result.close()


if __name__ == "__main__":
    main()
