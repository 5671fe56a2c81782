"""`make lab` starts JupyterLab on the course (headless here, with a port option), and what it
protects when its user is also the instructor (below): a collected submission runs nothing as
her when she opens it, validates it or looks at its chart."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import nbformat
import pytest
import traps
from browsing import BIN, START_S, STEP_S, jupyterlab
from conftest import make_gradebook
from lab_cases import course_copy

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_serves_jupyterlab_on_the_course_root():
    # `make lab` first puts every lab into the gradebook, minutes on first use (make gradebook):
    # done here, outside the 90 s JupyterLab has to answer in.
    make_gradebook()
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


# What `make lab` protects when its one user is also the instructor
# (grading/jupyter_server_config.py, grading/labconfig/): a submission collected under
# grading/submitted runs nothing as her when she opens it, validates it or looks at it, and a
# student's own lab, fetched from the assignment list, still validates. Played on a copy of the
# course, in JupyterLab started as `make lab` starts it (tests/browsing.py), with nbgrader's own
# assignment list and Validate.

LAB = "LM10-L1"
STUDENT = "mallory"


def _marking(mark):
    """A notebook whose one cell leaves a file at `mark` (a path) when it runs."""
    code = f"import pathlib\npathlib.Path({str(mark)!r}).write_text('ran')"
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])


def _call(lab, method, route, body=None, **arguments):
    """The server's JSON answer to `method route?arguments` (with `body` as JSON), the token in
    the header."""
    query = f"?{urllib.parse.urlencode(arguments)}" if arguments else ""
    data = json.dumps(body).encode() if body is not None else b"" if method == "POST" else None
    request = urllib.request.Request(
        f"{lab.url}{route}{query}",
        data=data,
        method=method,
        headers={"Authorization": f"token {lab.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=STEP_S) as reply:
        text = reply.read()
    return json.loads(text) if text else None


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course copy with LM10-L1 released into its exchange (as `make gradebook` does), and
    mallory's collected submission: the lab, her kernel launcher, a notebook that leaves a
    mark and one with her chart (written once the listener is up)."""
    root = tmp_path_factory.mktemp("lab-guards")
    grading = course_copy(root, labs=[LAB])
    marks = tmp_path_factory.mktemp("marks")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    for step in ("generate_assignment", "release_assignment"):
        done = subprocess.run(
            [str(BIN / "nbgrader"), step, LAB, "--force"],
            cwd=grading,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    hers = grading / "submitted" / STUDENT / LAB
    hers.mkdir(parents=True)
    shutil.copy(root / "labs" / LAB / f"{LAB}.ipynb", hers)
    (hers / "ipykernel_launcher.py").write_text(
        traps.HER_KERNEL_LAUNCHER.format(mark=str(marks / "her-launcher-ran"))
    )
    nbformat.write(_marking(marks / "her-notebook-ran"), hers / "check-me.ipynb")
    return {"root": root, "grading": grading, "hers": hers, "marks": marks}


@pytest.fixture(scope="module")
def lab(course, tmp_path_factory):
    """JupyterLab on the course copy, started as `make lab` starts it (JUPYTER_CONFIG_PATH:
    the copy's grading folder; nothing else of the protections is set by the test)."""
    with jupyterlab(course["root"], course["grading"], tmp_path_factory.mktemp("lab")) as lab:
        yield lab


def _run_in_kernel(lab, kernel_id, code):
    """What `code` prints in the server's kernel `kernel_id` (reached by its connection file)."""
    from jupyter_client import BlockingKernelClient

    runtime = Path(lab.log).parent / "run"
    client = BlockingKernelClient(connection_file=str(runtime / f"kernel-{kernel_id}.json"))
    client.load_connection_file()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=STEP_S)
        printed = []

        def keep(message):
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])

        reply = client.execute_interactive(code, output_hook=keep, timeout=STEP_S)
        assert reply["content"]["status"] == "ok", reply["content"]
        return "".join(printed)
    finally:
        client.stop_channels()


def test_opening_a_collected_notebook_imports_nothing_of_its_folder(course, lab):
    """The instructor opens mallory's collected notebook: its kernel starts in her folder and
    neither runs her `ipykernel_launcher.py` nor has her folder on sys.path."""
    notebook = course["hers"] / f"{LAB}.ipynb"
    opened = {
        "path": str(notebook.relative_to(course["root"])),
        "name": notebook.name,
        "type": "notebook",
        "kernel": {"name": "python3"},
    }
    session = _call(lab, "POST", "/api/sessions", body=opened)
    try:
        where = traps.WHERE_A_KERNEL_IMPORTS_FROM
        seen = json.loads(_run_in_kernel(lab, session["kernel"]["id"], where))
    finally:
        _call(lab, "DELETE", f"/api/sessions/{session['id']}")
    assert seen["cwd"] == str(course["hers"].resolve()), seen  # the kernel started in her folder
    assert not (course["marks"] / "her-launcher-ran").exists(), "her launcher ran as the instructor"
    assert seen["folder on sys.path"] == [], seen


def test_validate_refuses_a_collected_notebook_and_runs_a_fetched_lab(course, lab):
    """Validate on mallory's collected notebook is refused before any kernel starts, saying
    why and to use Autograde; a lab the student fetches from the assignment list lands in the
    server's root and validates there, her own cells run (the control)."""
    path = str((course["hers"] / "check-me.ipynb").relative_to(course["root"]))
    refused = _call(lab, "POST", "/assignments/validate", path=path)
    assert refused["success"] is False, refused
    assert refused["value"].startswith("Not validated."), refused
    assert "outside any sandbox" in refused["value"] and "Autograde" in refused["value"], refused
    assert not (course["marks"] / "her-notebook-ran").exists(), "her notebook ran in Validate"
    # nor through a link to her folder from the course's root (nbgrader runs what a link inside
    # the root points to)
    (course["root"] / "peek").symlink_to(course["hers"], target_is_directory=True)
    refused = _call(lab, "POST", "/assignments/validate", path="peek/check-me.ipynb")
    assert refused["value"].startswith("Not validated."), refused
    assert not (course["marks"] / "her-notebook-ran").exists(), "her notebook ran in Validate"

    fetched = _call(lab, "POST", "/assignments/fetch", course_id="LM10", assignment_id=LAB)
    assert fetched["success"] is True, fetched
    mine = course["root"] / LAB  # nbgrader's fetch: Exchange.assignment_dir "." of the root
    assert (mine / f"{LAB}.ipynb").is_file(), sorted(p.name for p in course["root"].iterdir())
    validated = _call(lab, "POST", "/assignments/validate", path=f"{LAB}/{LAB}.ipynb")
    assert validated["success"] is True, validated
    # the released lab's stubs raise: Validate ran it and reports its failing tests
    assert "NotImplementedError" in json.dumps(validated["value"]), validated
    own_mark = course["marks"] / "her-own-scratch-ran"
    nbformat.write(_marking(own_mark), mine / "scratch.ipynb")
    validated = _call(lab, "POST", "/assignments/validate", path=f"{LAB}/scratch.ipynb")
    assert validated["success"] is True, validated
    assert own_mark.exists(), "a notebook of the student's own did not run in Validate"


def test_a_collected_chart_reads_nothing_in_the_instructors_jupyterlab(course, lab, browser):
    """mallory's stored Vega-Lite chart reads the lab's solution from the server (a relative
    address, the page's cookies) and sends each cell to her address: the instructor's
    JupyterLab shows the notebook and her address hears nothing."""
    name = "look-at-me.ipynb"
    with traps.listening() as (address, heard):
        nbformat.write(traps.her_chart(address, LAB, "cell_type"), course["hers"] / name)
        path = (course["hers"] / name).relative_to(course["root"])
        problems = []
        page = lab.page(browser, f"/lab/tree/{path}", problems)
        try:
            shown = page.locator(".jp-RenderedMarkdown").filter(has_text=traps.SHOWN_TEXT).first
            shown.wait_for(timeout=START_S * 1000)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not heard:
                page.wait_for_timeout(1000)
            page.wait_for_timeout(2000)  # whatever else it sends
        finally:
            page.close()
    assert heard == [], heard


def test_nbconvert_in_a_collected_folder_runs_nothing_of_it(course, tmp_path):
    """`jupyter nbconvert --to html` of her notebook, with nbconvert's lab template and with
    its classic one, run in her collected folder from a terminal of `make lab`
    (JUPYTER_CONFIG_PATH: the course's grading folder, PYTHONSAFEPATH=1), writes the pages and
    runs neither her module nor her template; run without the course's configuration, the same
    commands run both (the control: her files work)."""
    folder = tmp_path / "submitted" / STUDENT / LAB
    (folder / "lab").mkdir(parents=True)
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('my answer')")]),
        folder / "answers.ipynb",
    )
    runs = {}
    for run, config_path in (("make lab", course["grading"]), ("control", tmp_path / "none")):
        name = run.replace(" ", "-")  # her template's mark goes through a shell
        marks = {
            "her module": tmp_path / f"{name}-module",
            "her template": tmp_path / f"{name}-tpl",
        }
        (folder / "codeop.py").write_text(traps.HER_CODEOP.format(mark=str(marks["her module"])))
        (folder / "lab" / "index.html.j2").write_text(
            traps.HER_TEMPLATE.format(mark=str(marks["her template"]))
        )
        env = dict(
            os.environ,
            PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
            JUPYTER_CONFIG_PATH=str(config_path),
            PYTHONSAFEPATH="1",
        )
        pages = []
        for template in ("lab", "classic"):
            page = folder / "answers.html"
            page.unlink(missing_ok=True)
            done = subprocess.run(
                [str(BIN / "jupyter"), "nbconvert", "--to", "html", "--template", template]
                + ["answers.ipynb"],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            shown = page.read_text() if page.exists() else ""
            pages.append(done.returncode == 0 and "my answer" in shown or done.stderr[-600:])
        runs[run] = {name: mark.exists() for name, mark in marks.items()} | {"pages": pages}
    assert runs["control"]["her module"] and runs["control"]["her template"], runs["control"]
    made = runs["make lab"]
    assert not made["her module"] and not made["her template"], made
    assert made["pages"] == [True, True], made
