"""JupyterLab and chromium for the browser tests (tests/test_browser.py, test_book.py,
test_class_report.py, test_formgrader_browser.py, test_similarity.py): `jupyterlab`, a server
started as `make lab` starts it, and the chromium they drive. The `browser` fixture (Debian's
chromium driven by Playwright, skipped loudly where either is missing, a failure where
LM10_REQUIRE_BROWSER=1) is in tests/conftest.py, so every test module has it without an import."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--disable-extensions",
]
BIN = Path(sys.executable).parent
SHOTS = Path(os.environ.get("LM10_SCREENSHOTS", ROOT / "build" / "screenshots"))
VIEWPORT = {"width": 1200, "height": 800}
# A loaded 2-core machine: JupyterLab's start, T2's run (about 100 s there), one validation.
START_S, RUN_S, STEP_S = 180, 900, 300
# No toast over the screenshots, and no autosave: a run's outputs are the student's to save, and
# the check below is that opening, reading and validating write nothing.
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server on loopback, a random port and token, its own data and settings."""

    def __init__(self, url: str, token: str, log: Path):
        self.url, self.token, self.log = url, token, log

    def get(self, path: str) -> int:
        """HTTP status of GET path (with the token)."""
        try:
            with urllib.request.urlopen(f"{self.url}{path}?token={self.token}", timeout=30) as r:
                return r.status
        except urllib.error.HTTPError as error:
            return error.code

    def page(self, browser, path: str, problems: list[str]):
        """A new tab on path; console errors and uncaught exceptions are appended to problems."""
        page = browser.new_page(viewport=VIEWPORT)
        page.set_default_timeout(STEP_S * 1000)
        page.on("console", lambda m: m.type == "error" and problems.append(f"{path}: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"{path}: uncaught {e}"))
        page.goto(f"{self.url}{path}?token={self.token}&reset")  # reset: no earlier tabs
        return page


@contextlib.contextmanager
def jupyterlab(root: Path, config_path: Path, scratch: Path):
    """JupyterLab serving root, started as `make lab` starts it (JUPYTER_CONFIG_PATH, lessons
    trusted), with the app exposed to the page so that the test can read the notebook model."""
    token, port = secrets.token_hex(24), free_port()
    env = dict(
        os.environ,
        JUPYTER_CONFIG_PATH=str(config_path),
        JUPYTER_DATA_DIR=str(scratch / "data"),
        JUPYTER_RUNTIME_DIR=str(scratch / "run"),
        JUPYTERLAB_SETTINGS_DIR=str(scratch / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(scratch / "workspaces"),
        PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
        PYTHONWARNINGS="ignore::DeprecationWarning",
    )
    for name, values in SETTINGS.items():
        target = scratch / "settings" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    lessons = sorted(map(str, root.glob("lessons/*.ipynb")))
    if lessons:  # a course without lessons (tests/test_formgrader_browser.py) trusts none
        subprocess.run(
            [str(BIN / "jupyter"), "trust", *lessons],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
        )
    log = scratch / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [
                str(BIN / "jupyter"),
                "lab",
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={port}",
                "--port-retries=0",
                f"--IdentityProvider.token={token}",
                f"--notebook-dir={root}",
                "--LabApp.expose_app_in_browser=True",
                "--allow-root",
            ],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    lab = Lab(f"http://127.0.0.1:{port}", token, log)
    try:
        deadline = time.monotonic() + START_S
        while lab_status(lab) != 200:
            assert server.poll() is None, f"JupyterLab exited:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"JupyterLab did not start:\n{log.read_text()}"
            time.sleep(1)
        yield lab
    finally:
        server.terminate()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def lab_status(lab: Lab) -> int | None:
    try:
        return lab.get("/api/status")
    except OSError:
        return None
