"""The class played through a real JupyterHub on loopback, as grading/JUPYTERHUB.md sets it up.

`jupyterhub` (PyPI, the dev extras) with configurable-http-proxy (npm: `make hub-proxy`, run by
`make test`, installs it in .npm-tools/), its built-in SimpleLocalProcessSpawner and its
shared-password authenticator, on random loopback ports. Two students and an instructor log in
with the password through the hub's login form; a hub service token (the test's driver) starts
their single-user servers through the hub's REST API and then talks only to those servers,
through the hub's proxy: the instructor's formgrader API generates and releases LM10-L2,
collects, autogrades (the course's sandboxed pipeline), generates and releases feedback; the
students' assignment-list API fetches and submits (the answer written with the contents API)
and fetches feedback. Nothing here calls nbgrader directly. The gradebook and the feedback
pages must show what each student's answers earned.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import requests
from lab_cases import course_copy, l2

ROOT = Path(__file__).resolve().parents[1]
LAB = "LM10-L2"
STUDENTS = {"alice": l2.correct, "bob": lambda nb: nb}  # bob hands in the blank release
PASSWORD = "lm10-test-password"  # the shared password of the test authenticator
TOKEN = "lm10-test-" + os.urandom(16).hex()
STUDENT_CONFIG = """import os

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "LM10"
c.Exchange.root = {exchange!r}
# every server runs as one system user here: the student id is the hub user's name
c.CourseDirectory.student_id = os.environ["JUPYTERHUB_USER"]
c.Execute.extra_arguments = ["--IPKernelApp.extensions=lmcourse.offlimits"]
"""
HUB_CONFIG = """c = get_config()  # noqa: F821
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = "sqlite:///{state}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{state}/jupyterhub_cookie_secret"
c.JupyterHub.pid_file = "{state}/jupyterhub.pid"
c.ConfigurableHTTPProxy.pid_file = "{state}/proxy.pid"
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = {password!r}
c.Authenticator.allowed_users = {users!r}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{homes}/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.args = {args!r}
c.Spawner.http_timeout = 300
c.Spawner.start_timeout = 300
c.Spawner.environment = {{"PATH": {path!r}}}
c.JupyterHub.services = [{{"name": "course-driver", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "course-driver", "services": ["course-driver"],
                            "scopes": ["admin:users", "admin:servers", "access:servers"]}}]


def nbgrader_setup(spawner):
    # the instructor's server opens the course root and reads grading/nbgrader_config.py;
    # students read a configuration that names only the course and the exchange
    if spawner.user.name == "instructor":
        spawner.notebook_dir = {course!r}
        spawner.environment["JUPYTER_CONFIG_PATH"] = {grading!r}
    else:
        spawner.environment["JUPYTER_CONFIG_PATH"] = {student_config!r}


c.Spawner.pre_spawn_hook = nbgrader_setup
"""


def proxy_command():
    """configurable-http-proxy: the repository's (make hub-proxy) or one on PATH."""
    local = ROOT / ".npm-tools" / "node_modules" / ".bin" / "configurable-http-proxy"
    return str(local) if local.exists() else shutil.which("configurable-http-proxy")


@pytest.fixture(scope="module", autouse=True)
def hub_installed():
    """CI (.ci/run sets LM10_REQUIRE_HUB=1) must have them; elsewhere, skip loudly."""
    missing = [
        what
        for what, found in (
            ("configurable-http-proxy (make hub-proxy)", proxy_command()),
            (
                "jupyterhub (pip install -e '.[dev]')",
                shutil.which("jupyterhub", path=str(Path(sys.executable).parent)),
            ),
            ("bubblewrap (apt-get install bubblewrap)", shutil.which("bwrap")),
        )
        if not found
    ]
    if missing:
        message = "not installed: " + ", ".join(missing)
        if os.environ.get("LM10_REQUIRE_HUB") == "1":
            pytest.fail(message)
        pytest.skip(message)


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def wait_for(what, check, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except requests.RequestException:
            pass
        time.sleep(1)
    raise AssertionError(f"{what}: not ready after {seconds} s")


class Hub:
    def __init__(self, url, process, log):
        self.url, self.process, self.log = url, process, log
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {TOKEN}"

    def call(self, method, path, **kwargs):
        response = self.session.request(method, self.url + path, timeout=900, **kwargs)
        assert response.status_code < 400, (
            method,
            path,
            response.status_code,
            response.text[:2000],
            self.tail(),
        )
        return response

    def tail(self):
        self.log.flush()
        return Path(self.log.name).read_text()[-4000:]

    def start_server(self, user):
        self.call("POST", f"/hub/api/users/{user}/server")
        wait_for(
            f"{user}'s server",
            lambda: (
                self.call("GET", f"/hub/api/users/{user}")
                .json()["servers"]
                .get("", {})
                .get("ready")
            ),
            300,
        )

    def nbgrader(self, user, path, **body):
        """POST to an nbgrader endpoint of `user`'s server; nbgrader's answer, checked."""
        answer = self.call("POST", f"/user/{user}/{path}", data=json.dumps(body)).json()
        if isinstance(answer, dict) and "success" in answer:
            assert answer["success"], (
                path,
                answer.get("error") or answer.get("log"),
                answer.get("value"),
            )
        return answer


def login(url, user, password):
    """Log in through the hub's form, as a browser does; the hub's answer."""
    with requests.Session() as browser:
        browser.get(f"{url}/hub/login", timeout=60)
        return browser.post(
            f"{url}/hub/login",
            timeout=60,
            allow_redirects=False,
            data={"username": user, "password": password, "_xsrf": browser.cookies.get("_xsrf")},
        )


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    base = tmp_path_factory.mktemp("hub")
    course, homes, state = base / "course", base / "home", base / "state"
    grading, exchange, student_config = course / "grading", base / "exchange", base / "student"
    for folder in (homes, state, exchange, student_config):
        folder.mkdir(parents=True)
    course_copy(course, [LAB])
    with open(grading / "nbgrader_config.py", "a") as handle:
        handle.write(f"c.Exchange.root = {str(exchange)!r}\n")
    (student_config / "nbgrader_config.py").write_text(
        STUDENT_CONFIG.format(exchange=str(exchange))
    )
    port, hub_port, proxy_port = free_ports(3)
    bin_path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    config = HUB_CONFIG.format(
        port=port,
        hub_port=hub_port,
        proxy_port=proxy_port,
        proxy=proxy_command(),
        state=state,
        password=PASSWORD,
        users={"alice", "bob", "instructor"},
        homes=homes,
        singleuser=str(Path(sys.executable).parent / "jupyterhub-singleuser"),
        args=["--allow-root"] if os.getuid() == 0 else [],
        path=bin_path,
        token=TOKEN,
        course=str(course),
        grading=str(grading),
        student_config=str(student_config),
    )
    (state / "jupyterhub_config.py").write_text(config)
    log = open(state / "hub.log", "w+")  # noqa: SIM115 (open while the hub runs)
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyterhub"), "-f", "jupyterhub_config.py"],
        cwd=state,
        env=dict(os.environ, PATH=bin_path),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    hub = Hub(f"http://127.0.0.1:{port}", process, log)
    try:
        wait_for("the hub", lambda: requests.get(f"{hub.url}/hub/api", timeout=5).ok, 180)
        yield hub
    finally:
        process.send_signal(signal.SIGTERM)  # the hub stops the servers it spawned
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


@pytest.fixture(scope="module")
def played(hub):
    logins = {user: login(hub.url, user, PASSWORD) for user in (*STUDENTS, "instructor")}
    wrong = login(hub.url, "alice", "not-the-password")
    for user in (*STUDENTS, "instructor"):
        hub.start_server(user)
    hub.nbgrader("instructor", f"formgrader/api/assignment/{LAB}/assign")
    hub.nbgrader("instructor", f"formgrader/api/assignment/{LAB}/release")
    course = {"course_id": "LM10", "assignment_id": LAB}
    for student, answer in STUDENTS.items():
        listed = hub.nbgrader(student, "assignments/fetch", **course)
        assert any(
            a["assignment_id"] == LAB and a["status"] == "fetched" for a in listed["value"]
        ), listed
        path = f"/user/{student}/api/contents/{LAB}/{LAB}.ipynb"
        nb = nbformat.from_dict(hub.call("GET", path).json()["content"])
        hub.call(
            "PUT",
            path,
            data=json.dumps({"type": "notebook", "format": "json", "content": answer(nb)}),
        )
        hub.nbgrader(student, "assignments/submit", **course)
    hub.nbgrader("instructor", f"formgrader/api/assignment/{LAB}/collect")
    graded = {
        s: hub.nbgrader("instructor", f"formgrader/api/submission/{LAB}/{s}/autograde")
        for s in STUDENTS
    }
    submissions = hub.call("GET", f"/user/instructor/formgrader/api/submissions/{LAB}").json()
    hub.nbgrader("instructor", f"formgrader/api/assignment/{LAB}/generate_feedback")
    hub.nbgrader("instructor", f"formgrader/api/assignment/{LAB}/release_feedback")
    pages = {}
    for student in STUDENTS:
        hub.nbgrader(student, "assignments/fetch_feedback", **course)
        folder = hub.call("GET", f"/user/{student}/api/contents/{LAB}/feedback").json()
        pages[student] = [
            hub.call("GET", f"/user/{student}/api/contents/{entry['path']}/{LAB}.html").json()[
                "content"
            ]
            for entry in folder["content"]
        ]
    return {
        "logins": logins,
        "wrong": wrong,
        "graded": graded,
        "pages": pages,
        "scores": {s["student"]: (s["score"], s["max_score"]) for s in submissions},
    }


def test_users_log_in_with_the_password(played):
    for user, response in played["logins"].items():
        assert response.status_code == 302, (user, response.status_code)
        assert "/hub/login" not in response.headers["location"], user
    assert played["wrong"].status_code == 403


def test_autograded_scores_are_what_the_answers_earned(played):
    assert all(g["success"] for g in played["graded"].values()), played["graded"]
    assert played["scores"]["alice"] == (10.0, 13.0)  # 3 more points are graded by hand
    assert played["scores"]["bob"] == (0.0, 13.0)


def test_students_fetch_their_feedback_through_their_servers(played):
    for student, pages in played["pages"].items():
        assert len(pages) == 1, (student, len(pages))
        found = re.search(r"Score:\s*([\d.]+)\s*/\s*([\d.]+)", pages[0])
        assert found, f"no score on {student}'s feedback page"
        assert (float(found[1]), float(found[2])) == played["scores"][student]
        assert "### BEGIN HIDDEN TESTS" not in pages[0]
