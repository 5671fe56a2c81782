"""Execute one notebook inside the grading sandbox; the only grader code that runs there.

    python sandbox_exec.py CELL_TIMEOUT OUTPUT_CHARS FD < notebook.ipynb  (executed -> FD)

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
import sys
import time

PR_SET_DUMPABLE = 4
INTERRUPT_GRACE = 10  # seconds an interrupted kernel has to take the next request
STOPPED = ("The grader stopped this cell: {reason}. Later cells were not run; "
           "their tests score 0.")


def not_dumpable():
    with contextlib.suppress(OSError, AttributeError):  # not Linux: nothing to protect
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def error_output(ename, evalue):
    return {"output_type": "error", "ename": ename, "evalue": evalue,
            "traceback": [f"{ename}: {evalue}"]}


def cut(text, limit):
    if len(text) <= limit:
        return text
    return (text[:limit] + f"\n[output cut by the grader: {len(text):,} characters, "
            f"only the first {limit:,} kept]\n")


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


def main():
    not_dumpable()
    cell_timeout, limit = int(sys.argv[1]), int(sys.argv[2])
    descriptor = int(sys.argv[3])
    os.set_inheritable(descriptor, False)
    result = os.fdopen(descriptor, "w", closefd=True)
    import nbformat
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    nb = nbformat.reads(sys.stdin.read(), as_version=4)
    sys.stdin.close()
    stopped = None  # (cell index, reason)

    def on_cell_executed(cell, cell_index, execute_reply):
        content = execute_reply.get("content", {}) if execute_reply else {}
        timed_out = content.get("ename") == "CellTimeoutError"  # nbclient's stand-in reply
        if content.get("status") == "error" and (timed_out or not any(
                o.get("output_type") == "error" for o in cell.outputs)):
            ename, evalue = content.get("ename", "Error"), content.get("evalue", "")
            cell.outputs.append(nbformat.from_dict(error_output(ename, evalue)))

    client = NotebookClient(
        nb, timeout=cell_timeout, allow_errors=True, interrupt_on_timeout=True,
        kernel_name="python3", resources={"metadata": {"path": os.getcwd()}},
        on_cell_executed=on_cell_executed, record_timing=False,
        error_on_timeout={"ename": "CellTimeoutError", "evalue": (
            f"the grader stopped this cell after {cell_timeout} s "
            "(does it loop forever?)"), "traceback": []},
    )
    try:
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                try:
                    client.execute_cell(cell, index)
                except DeadKernelError:
                    stopped = (index, "the kernel died while it ran (os._exit, a crash, "
                                      "or it ran out of memory)")
                    break
                except CellTimeoutError:
                    stopped = (index, f"it did not stop {cell_timeout} s after it was "
                                      "interrupted")
                    break
                timed_out = any(o.get("ename") == "CellTimeoutError"
                                for o in cell.get("outputs", []))
                if timed_out and not run_sync(answers)(client.kc, INTERRUPT_GRACE):
                    stopped = (index, f"it ran past {cell_timeout} s and ignored the interrupt")
                    break
    except Exception as error:  # the kernel did not start or did not shut down
        if stopped is None:
            first = next((i for i, c in enumerate(nb.cells)
                          if c.cell_type == "code" and not c.get("outputs")), 0)
            stopped = (first, f"the kernel failed: {type(error).__name__}: {error}"[:500])
    if stopped is not None:
        index, reason = stopped
        for later, cell in enumerate(nb.cells[index:], start=index):
            if cell.cell_type == "code":
                message = STOPPED.format(reason=reason) if later == index else (
                    f"Not run: the grader stopped an earlier cell ({reason}).")
                cell.outputs.append(nbformat.from_dict(error_output("NotRun", message)))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cut_outputs(cell, limit)
    nb.metadata["lm10_stopped"] = None if stopped is None else {
        "cell": stopped[0], "reason": stopped[1]}
    result.write(json.dumps(nb))
    result.close()


if __name__ == "__main__":
    main()
