"""JupyterHub configuration of the LM10 course: one system user per student (grading/JUPYTERHUB.md).

    sudo /opt/lm10/bin/jupyterhub -f grading/hub/jupyterhub_config.py

tests/test_jupyterhub.py runs this file as it is (adding only its own driver service and free
loopback ports). The hub runs as root, from the course's Python environment, and:

- logs people in with their system accounts (PAM) if they are in the Unix group of the
  students or of the instructors; everyone else is refused;
- starts each person's server as their own system user (LocalProcessSpawner), in their home,
  which it makes private (0700) first; a student's server reads the students' configuration
  (grading/hub/student, grading/hub/config), an instructor's opens the course, `~/LM10`, a
  clone of this repository that only they can read, with the course's grading configuration
  (the formgrader, the grading sandbox) and the exchange's;
- runs the exchange, ngshare (grading/hub/ngshare_service.py), as a hub service under a system
  user of its own, with its database and files in a folder only that user can open. Every
  server's token may call it (the scope `access:services!service=ngshare`), and it knows whose
  token it is from the hub.

Site settings, from the hub's environment:

    LM10_HUB_STATE            /srv/lm10               hub/ (the hub's database and cookie
                                                      secret, root only) and ngshare/ (the
                                                      exchange's, its user only)
    LM10_NGSHARE_SERVICE_URL  http://127.0.0.1:10101  where ngshare listens; servers call it there
    LM10_NGSHARE_MAX_REQUEST_MIB  16                  the largest request ngshare reads (a
                                                      submission, base64 and form-encoded)
    LM10_NGSHARE_QUOTA_MIB    128                     what a student's submissions may take there

and the names STUDENTS, INSTRUCTORS (Unix groups) and NGSHARE_USER below. The hub listens on
the loopback (`bind_url`): put a TLS reverse proxy in front of it, or give it a certificate
(`c.JupyterHub.ssl_cert`, `ssl_key`) and a public address.
"""

import grp
import os
import pwd
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

COURSE_ID = "LM10"
STUDENTS = "lm10-students"  # Unix group of the students
INSTRUCTORS = "lm10-instructors"  # Unix group of the instructors, who grade
NGSHARE_USER = "lm10-ngshare"  # system user of the exchange, nobody logs in as it
SERVICE = "ngshare"  # the service's name: its address /services/ngshare/, its access scope

HERE = Path(__file__).resolve().parent  # grading/hub of the installed course
BIN = Path(sys.executable).parent  # the course's environment, where the hub runs from
STATE = Path(os.environ.get("LM10_HUB_STATE", "/srv/lm10"))
NGSHARE_SERVICE_URL = os.environ.get("LM10_NGSHARE_SERVICE_URL", "http://127.0.0.1:10101")
MAX_REQUEST_MIB = os.environ.get("LM10_NGSHARE_MAX_REQUEST_MIB", "16")
QUOTA_MIB = os.environ.get("LM10_NGSHARE_QUOTA_MIB", "128")
PATH = f"{BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin"  # nbgrader runs `alembic` from BIN

if os.geteuid() != 0:
    raise SystemExit("run this hub as root: it starts every server as its own system user")


def group_members(name):
    """The users of a Unix group: listed in it, or with it as their primary group."""
    try:
        group = grp.getgrnam(name)
    except KeyError:
        raise SystemExit(f"no Unix group {name!r}: groupadd {name}, then add its users") from None
    primary = {p.pw_name for p in pwd.getpwall() if p.pw_gid == group.gr_gid}
    return sorted(set(group.gr_mem) | primary)


def in_group(account, name):
    return grp.getgrnam(name).gr_gid in os.getgrouplist(account.pw_name, account.pw_gid)


def private_folder(path, account, mode=0o700):
    """`path`, made if missing, a folder of `account` closed to everyone else (fixed if open)."""
    path.mkdir(mode=mode, parents=True, exist_ok=True)
    if path.is_symlink() or not path.is_dir():
        raise RuntimeError(f"{path} must be a folder, not a link")
    info = path.stat()
    if info.st_uid != account.pw_uid:
        if any(path.iterdir()):
            raise RuntimeError(f"{path} belongs to uid {info.st_uid}, not to {account.pw_name}")
        os.chown(path, account.pw_uid, account.pw_gid)  # made just now, by the hub
    if info.st_mode & 0o077:
        os.chmod(path, mode)
    return path


# --- logins: system accounts, only the course's two groups ---
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {STUDENTS, INSTRUCTORS}

# --- the hub's own state, root only ---
hub_state = private_folder(STATE / "hub", pwd.getpwuid(0))
c.JupyterHub.bind_url = "http://127.0.0.1:8000"
c.JupyterHub.db_url = f"sqlite:///{hub_state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(hub_state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(hub_state / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(hub_state / "proxy.pid")
# configurable-http-proxy: the repository's (`make hub-proxy`) or one on PATH
_proxy = HERE.parents[1] / ".npm-tools" / "node_modules" / ".bin" / "configurable-http-proxy"
c.ConfigurableHTTPProxy.command = [
    str(_proxy)
    if _proxy.exists()
    else shutil.which("configurable-http-proxy") or "configurable-http-proxy"
]

# --- the exchange: ngshare as a hub service, under its own user, its folder private ---
try:
    _ngshare = pwd.getpwnam(NGSHARE_USER)
except KeyError:
    raise SystemExit(
        f"no system user {NGSHARE_USER!r} for the exchange: "
        f"useradd --system --no-create-home --shell /usr/sbin/nologin {NGSHARE_USER}"
    ) from None
os.chmod(private_folder(STATE, pwd.getpwuid(0)), 0o711)  # its users pass through, list nothing
ngshare_state = private_folder(STATE / "ngshare", _ngshare)
instructors = group_members(INSTRUCTORS)
if not instructors:
    raise SystemExit(f"the Unix group {INSTRUCTORS!r} has no members: add the instructor")
c.JupyterHub.services = [
    {
        "name": SERVICE,
        "url": NGSHARE_SERVICE_URL,
        "command": [
            sys.executable,
            "-m",
            "grading.hub.ngshare_service",
            "--state",
            str(ngshare_state),
            "--course",
            COURSE_ID,
            "--instructors",
            ",".join(instructors),
            "--max-request-mib",
            MAX_REQUEST_MIB,
            "--quota-mib",
            QUOTA_MIB,
        ],
        "user": NGSHARE_USER,
        "cwd": str(ngshare_state),
        "environment": {"PATH": PATH},
        "display": False,
        "oauth_no_confirm": True,
    }
]
# Every user may call the exchange, and so may every server's token; the exchange itself
# decides what each may do there (a student: their own submissions and feedback).
ACCESS = f"access:services!service={SERVICE}"
c.JupyterHub.load_roles = [{"name": "user", "scopes": ["self", ACCESS]}]
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", ACCESS]

# --- servers: each as its user, in a private home ---
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120


def prepare_server(spawner):
    """Before a server starts: its user's home private; the course and the grading
    configuration for an instructor, the students' configuration for a student."""
    account = pwd.getpwnam(spawner.user.name)  # LocalProcessSpawner runs it as this user
    home = private_folder(Path(account.pw_dir), account)
    environment = {
        "PATH": PATH,
        "LM10_NGSHARE_URL": f"{NGSHARE_SERVICE_URL}/services/{SERVICE}",
        "LM10_NGSHARE_MAX_REQUEST_MIB": MAX_REQUEST_MIB,  # a bigger submission is not sent
    }
    if in_group(account, INSTRUCTORS):
        course = home / COURSE_ID
        if not (course / "grading" / "nbgrader_config.py").is_file():
            raise RuntimeError(f"no course at {course}: clone the course repository there")
        if course.resolve().parent != home.resolve():
            private_folder(course.resolve(), account)
        spawner.notebook_dir = str(course)
        config = [course / "grading", HERE / "config"]
    else:
        config = [HERE / "student", HERE / "config"]
    environment["JUPYTER_CONFIG_PATH"] = os.pathsep.join(map(str, config))
    spawner.environment = {**spawner.environment, **environment}


c.Spawner.pre_spawn_hook = prepare_server
