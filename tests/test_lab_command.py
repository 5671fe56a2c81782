"""`make lab` starts JupyterLab on the course (headless here, with a port option)."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_serves_jupyterlab_on_the_course_root():
    # `make lab` first puts every lab into the gradebook, minutes on first use (make gradebook):
    # done here, outside the 90 s JupyterLab has to answer in.
    subprocess.run(
        ["make", "--no-print-directory", "gradebook"], cwd=ROOT, check=True, capture_output=True
    )
    port = _free_port()
    token = "lm10-test"
    args = (
        f"--no-browser --ip=127.0.0.1 --port={port} --IdentityProvider.token={token} "
        "--ServerApp.open_browser=False"
    )
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "lab", f"JUPYTER_ARGS={args}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        listing = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                url = f"http://127.0.0.1:{port}/api/contents?token={token}"
                with urllib.request.urlopen(url, timeout=2) as reply:
                    listing = json.load(reply)
                break
            except OSError:
                time.sleep(0.5)
        assert listing is not None, f"JupyterLab did not answer on port {port} within 90 s"
        names = {item["name"] for item in listing["content"]}
        assert {"lessons", "labs", "lib"} <= names, f"server root is not the course: {names}"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=5) as r:
            assert b"JupyterLab" in r.read(), "the /lab page is not JupyterLab"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
