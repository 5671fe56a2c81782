"""What a class of 300 or 3,000 students needs on a hub, from this course's own measurements.

    python -m benchmarks.hub_sizing [--submissions 20] [--lab LM10-L2]

(from the repository's root; grading/JUPYTERHUB.md, "Sizing", shows its output and the
arithmetic). It measures on this machine:

- grading: `make autograde`'s path (grading.batch.autograde) on submissions of the lab (correct,
  mistake, hard-coded, blank, broken in turn; benchmarks/autograde.py's): with one worker on
  N/3 and on N submissions, which gives a batch's start (workers, warm sandboxes: paid once)
  and the seconds each further submission adds; then with one worker per core on N, which
  shows how that scales over this machine's cores; and each worker's peak memory, the
  proportional set size (PSS: pages shared between processes split among them) summed over the
  worker's process tree (the worker, its warm sandbox and kernels, its trusted test process);
- a student's server: the PSS of an idle JupyterLab server with the course's extensions;
- a student's disk: what the student edition holds (lessons/, labs/, lib/lmcourse), the SmolLM2
  cache the lessons convert into (lmcourse.pretrained.cache_root()), one lab's notebook and
  its feedback page as nbgrader writes them;
- the image: the size of this Python installation and of its environment.

A student's kernel is measured by benchmarks/lessons.py (peak RSS per lesson); pass the largest
it printed as --kernel-gb. The table then applies the stated assumptions (ASSUMED) to the
measured numbers.
"""

import argparse
import contextlib
import math
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from benchmarks.autograde import environment, make_course, submissions
from tools.course_copy import AUTOGRADE

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30
MIB = 1 << 20
LABS = len(list((ROOT / "solutions").glob("LM10-L*")))
ASSUMED = {
    "user node": (8, 32 * GIB),  # cores, memory of a node for students' servers
    "grading node": (16, 64 * GIB),  # the instructor's grading server's node
    "usable memory": 0.85,  # of a node's, the rest for the system and Kubernetes
    "submissions kept per lab": 3,  # a student's submissions of one lab in the exchange
    "grading window s": 3600,  # a lab's whole class graded within an hour
}


def pss(process):
    """PSS of a process and everything under it, in bytes (0 for what is gone)."""
    total = 0
    for p in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error, OSError):
            total += p.memory_full_info().pss
    return total


def grade(lab, count, jobs):
    """grading.batch.autograde on `count` submissions with `jobs` workers: (wall s, peak PSS of the
    largest worker tree, peak PSS of the whole batch)."""
    with tempfile.TemporaryDirectory(prefix="lm10-hub-sizing-") as scratch:
        course = make_course(Path(scratch), lab, lambda nb: submissions(lab, nb, count))
        start = time.monotonic()
        batch = subprocess.Popen(
            [sys.executable, *AUTOGRADE, lab, "--jobs", str(jobs)],
            cwd=course,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        peaks = {"worker": 0, "batch": 0}
        parent = psutil.Process(batch.pid)

        def sample():
            while batch.poll() is None:
                try:
                    workers = parent.children()
                except psutil.Error:
                    break
                for worker in workers:
                    peaks["worker"] = max(peaks["worker"], pss(worker))
                peaks["batch"] = max(peaks["batch"], pss(parent))
                time.sleep(0.5)

        sampler = threading.Thread(target=sample)
        sampler.start()
        output = batch.communicate()[0]
        sampler.join()
        wall = time.monotonic() - start
        if batch.returncode:
            raise SystemExit(f"grading.batch.autograde failed:\n{output[-3000:]}")
        return wall, peaks["worker"], peaks["batch"]


def idle_server():
    """PSS of a headless JupyterLab server with the course's extensions, once it answers."""
    with tempfile.TemporaryDirectory(prefix="lm10-hub-sizing-home-") as home:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                f"--port={port}",
                "--ServerApp.token=sizing",
                f"--notebook-dir={home}",
                *(["--allow-root"] if os.geteuid() == 0 else []),
            ],
            env=dict(
                environment(), HOME=home, JUPYTER_CONFIG_PATH=str(ROOT / "grading/hub/student")
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            import urllib.request

            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token=sizing")
                    break
                except OSError:
                    time.sleep(1)
            time.sleep(3)
            return pss(psutil.Process(server.pid))
        finally:
            server.terminate()
            server.wait(timeout=60)


def folder_bytes(*paths):
    return sum(f.stat().st_size for p in paths for f in Path(p).rglob("*") if f.is_file())


def feedback_bytes(lab):
    """(notebook, feedback page) bytes of one graded submission of `lab` (the correct one)."""
    with tempfile.TemporaryDirectory(prefix="lm10-hub-sizing-feedback-") as scratch:
        course = make_course(Path(scratch), lab, lambda nb: submissions(lab, nb, 1))
        run = dict(cwd=course, env=environment(), capture_output=True, text=True)
        subprocess.run([sys.executable, *AUTOGRADE, lab, "--jobs", "1"], check=True, **run)
        subprocess.run(
            [sys.executable, "-m", "nbgrader", "generate_feedback", lab, "--force"],
            check=True,
            **run,
        )
        notebook = next((course / "submitted").glob(f"*/{lab}/{lab}.ipynb")).stat().st_size
        page = next((course / "feedback").glob(f"*/{lab}/{lab}.html")).stat().st_size
        return notebook, page


def table(m, students):
    cores, memory = ASSUMED["user node"]
    g_cores, g_memory = ASSUMED["grading node"]
    usable = ASSUMED["usable memory"]
    per_student = m["server"] + m["kernel"]
    per_user_node = math.floor(memory * usable / per_student)
    workers = min(g_cores, math.floor(g_memory * usable / m["worker"]))
    lab_s = m["start s"] + students * m["s per submission"] / workers
    cache = m["cache"]
    home = m["edition"] + LABS * (2 * m["notebook"] + m["page"])  # work, nbgrader's cache, feedback
    exchange = students * LABS * (ASSUMED["submissions kept per lab"] * m["notebook"] + m["page"])
    rows = [
        ("students", f"{students:,}"),
        (
            "memory, all at work at once",
            f"{students} x {per_student / GIB:.2f} GiB = {students * per_student / GIB:,.0f} GiB",
        ),
        (
            f"user nodes ({cores} cores, {memory // GIB} GiB)",
            f"{per_user_node} students each -> {math.ceil(students / per_user_node)} nodes",
        ),
        (
            f"grading one lab, one node ({g_cores} cores, {g_memory // GIB} GiB)",
            f"{workers} workers: {m['start s']:.0f} s + {students} x "
            f"{m['s per submission']:.2f} s / {workers} = {lab_s / 60:,.1f} min",
        ),
        (
            "grading nodes for one hour per lab",
            f"{math.ceil(lab_s / ASSUMED['grading window s'])}",
        ),
        (
            "home per student (SmolLM2 cache in the image)",
            f"{home / MIB:.0f} MiB -> {students * home / GIB:,.1f} GiB",
        ),
        (
            "home per student (SmolLM2 cache in the home)",
            f"{(home + cache) / MIB:.0f} MiB -> {students * (home + cache) / GIB:,.1f} GiB",
        ),
        (
            "instructor's course (submitted, autograded, feedback)",
            f"{students * LABS * (2 * m['notebook'] + m['page']) / GIB:,.2f} GiB",
        ),
        ("exchange, as used", f"{exchange / GIB:,.2f} GiB"),
        (
            f"exchange, every quota full ({m['quota'] / MIB:.0f} MiB)",
            f"{students * m['quota'] / GIB:,.0f} GiB",
        ),
    ]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab", default="LM10-L2")
    parser.add_argument("--submissions", type=int, default=30)
    parser.add_argument(
        "--kernel-gb", type=float, required=True, help="largest peak RSS of benchmarks/lessons.py"
    )
    parser.add_argument("--quota-mib", type=float, default=128, help="the exchange's quota")
    args = parser.parse_args()
    cores, n = os.cpu_count(), args.submissions
    few = grade(args.lab, n // 3, 1)
    one = grade(args.lab, n, 1)
    many = grade(args.lab, n, cores)
    marginal = (one[0] - few[0]) / (n - n // 3)
    notebook, page = feedback_bytes(args.lab)
    from lmcourse.pretrained import cache_root

    m = {
        "s per submission": marginal,
        "start s": one[0] - n * marginal,
        "worker": max(few[1], one[1], many[1]),
        "server": idle_server(),
        "kernel": args.kernel_gb * 1e9,
        "edition": folder_bytes(ROOT / "lessons", ROOT / "labs", ROOT / "lib" / "lmcourse"),
        "cache": folder_bytes(cache_root()),
        "notebook": notebook,
        "page": page,
        "environment": folder_bytes(sys.prefix),
        "python": folder_bytes(sys.base_prefix),
        "quota": args.quota_mib * MIB,
    }
    print(f"Measured here ({cores} cores, {psutil.virtual_memory().total / GIB:.0f} GiB):")
    print(f"  grading.batch.autograde on submissions of {args.lab}:")
    print(f"    one worker, {n // 3} submissions: {few[0]:6.1f} s")
    print(f"    one worker, {n} submissions: {one[0]:6.1f} s")
    print(
        f"    -> {marginal:.2f} s per further submission, {m['start s']:.0f} s to start the batch"
    )
    print(f"    {cores} workers, {n} submissions: {many[0]:6.1f} s")
    print(
        "    a worker's peak PSS (worker, sandbox, kernels, trusted tests): "
        f"{m['worker'] / MIB:.0f} MiB"
    )
    print(f"  an idle JupyterLab server: {m['server'] / MIB:.0f} MiB PSS")
    print(f"  a student's kernel (benchmarks/lessons.py, largest peak): {args.kernel_gb:.2f} GB")
    print(f"  lessons/, labs/, lib/lmcourse: {m['edition'] / MIB:.1f} MiB")
    print(f"  SmolLM2 cache (converted weights): {m['cache'] / MIB:.0f} MiB")
    print(
        f"  one graded notebook: {notebook / 1024:.0f} KiB, "
        f"its feedback page: {page / 1024:.0f} KiB"
    )
    print(f"  Python {m['python'] / MIB:.0f} MiB, environment {m['environment'] / MIB:.0f} MiB")
    print(f"Assumed: {ASSUMED}, {LABS} labs")
    for students in (300, 3000):
        print()
        for label, value in table(m, students):
            print(f"  {label:<52} {value}")


if __name__ == "__main__":
    main()
