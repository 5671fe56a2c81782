"""JupyterHub configuration of the LM10 course: one system user per student (grading/JUPYTERHUB.md).

    sudo /opt/lm10/bin/jupyterhub -f grading/hub/jupyterhub_config.py

tests/test_jupyterhub.py runs this file as it is (adding only its own driver service and free
loopback ports). The hub runs as root, from the course's Python environment, and:

- logs people in with their system accounts (PAM) if they are in the Unix group of the
  students or of the instructors; everyone else is refused;
- starts each person's server as their own system user (LocalProcessSpawner), in their home,
  which it makes private (0700) first, inside a bubblewrap sandbox of its own (`sandbox_command`):
  its own PID namespace (the server and everything it starts die together, when the server
  stops or the hub does, and no one else's process is visible), a private /tmp, /var/tmp and
  /dev/shm, the rest of the machine read-only, TMPDIR and every cache under the private home,
  kernels on ZeroMQ's ipc transport in that private /tmp (no TCP port a classmate could reach),
  the course's kernel (grading/hub/kernel.py: ipykernel's IOPub pipe on ipc too, no debugger);
  none of the hub's standard streams (each server writes to a pipe whose lines the hub logs
  under its name, plain: grading/hub/server_output.py), and the hub's own log plain too
  (grading/hub/plain_logs.py: it logs parts of students' requests);
  each server on a host of its own (<user>.<the hub's host>: its own origin in a browser),
  serving on a port the hub listens on for it until its route is gone (no one else can take
  it); a student's server without user namespaces inside;
  A student's server reads the students' configuration (grading/hub/student,
  grading/hub/config), an instructor's opens the course, `~/LM10`, a clone of this repository
  that only they can read, with the course's grading configuration (the formgrader, the grading
  sandbox) and the exchange's;
- runs the exchange, ngshare (grading/hub/ngshare_service.py), as a hub service under a system
  user of its own, with its database and files in a folder only that user can open. It listens
  on a Unix socket in a folder that only it can write, inside root's state folder: no TCP port,
  so no user's process can take its address while it is down. Each server gets a token of its
  own for it (LM10_EXCHANGE_TOKEN) that carries the one scope `access:services!service=ngshare`
  and can do nothing else; the server's own token cannot call the exchange. The hub revokes it
  when the server stops, and the exchange asks the hub again about a token after at most
  LM10_EXCHANGE_AUTH_CACHE_SECONDS.

Site settings, from the hub's environment:

    LM10_HUB_STATE            /srv/lm10               hub/ (the hub's database and cookie
                                                      secret, root only), ngshare/ (the
                                                      exchange's, its user only)
                                                      and exchange/ (its socket: written by
                                                      the exchange's user only)
    LM10_NGSHARE_MAX_REQUEST_MIB  16                  the largest request ngshare reads (a
                                                      submission, base64 and form-encoded)
    LM10_NGSHARE_QUOTA_MIB    128                     what a student's submissions may take there
                                                      (content, names, and 4 KiB per file)
    LM10_NGSHARE_MAX_FILES    500                     most files in one request
    LM10_NGSHARE_MIB_PER_MINUTE  64                   most MiB of request bodies the exchange
                                                      reads from one student in any minute
    LM10_EXCHANGE_AUTH_CACHE_SECONDS  5               how long the exchange trusts the hub's
                                                      last answer about a token
    LM10_HUB_URL              http://localhost:8000   the hub's public address; each server is
                                                      at <user>.<its host> (wildcard DNS and
                                                      certificate)
    LM10_SANDBOX_TMPFS_MIB    1024                    each server's /tmp, /var/tmp, /dev/shm
    LM10_STUDENT_MAX_TASKS    1024                    a student's processes and threads
    LM10_SERVER_PTYS          16                      a server's pseudo-terminals at once
                                                      (its terminals)
    LM10_LESSONS_REPOS        (none)                  the repositories that "Open on the hub"
                                                      links (nbgitpuller) may pull into a
                                                      student's home, space-separated (the
                                                      course's student edition, as `make book
                                                      REPO=` names it); none: every link is
                                                      refused. Instructors' servers pull nothing

and the names STUDENTS, INSTRUCTORS (Unix groups) and NGSHARE_USER below. The hub listens on
the loopback (`bind_url`): put a TLS reverse proxy in front of it, or give it a certificate
(`c.JupyterHub.ssl_cert`, `ssl_key`) and a public address.
"""

import contextlib
import grp
import os
import pwd
import resource
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from jupyterhub.auth import PAMAuthenticator
from jupyterhub.spawner import LocalProcessSpawner

from grading.host.sandbox import cpu_parent
from grading.hub import (
    access_log,
    asked_logout,
    homes,
    no_keyrings,
    plain_logs,
    proxy_output,
    ptys,
    server_output,
)

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

# The hub's own log plain: JupyterHub and tornado log parts of a student's requests as they
# are (the scopes or roles she asks a token for: "Not assigning requested scopes ...", "No such
# role: ..."; a request's address sent to the hub's own port, past the proxy, where tornado
# accepts C1 controls), into the administrator's terminal
plain_logs.install()
# ... and bounded: JupyterHub logs every request with its whole address, and anyone on the
# machine reaches the hub's port without a credential (484 MB of the log a second from one
# student's long addresses: the forty-fifth tester's table). Each address cut, at most 50
# lines a second, the rest counted (grading/hub/access_log.py)
c.JupyterHub.tornado_settings = {"log_function": access_log.bounded}
# ... and every line of it: tornado's warning for each refused request and JupyterHub's "Not
# authorizing access to ..." carry the whole address (6.3 MB in 10 s from one student's token):
# each message cut (shorter past 16 KiB in a second), at most 100 lines a second, the rest counted
# (access_log.LinesPerSecond)
c.JupyterHub.logging_config = {
    "filters": {"bounded": {"()": "grading.hub.access_log.LinesPerSecond"}},
    "handlers": {"console": {"filters": ["bounded"]}},
}

COURSE_ID = "LM10"
STUDENTS = "lm10-students"  # Unix group of the students
INSTRUCTORS = "lm10-instructors"  # Unix group of the instructors, who grade
NGSHARE_USER = "lm10-ngshare"  # system user of the exchange, nobody logs in as it
SERVICE = "ngshare"  # the service's name: its address /services/ngshare/, its access scope

HERE = Path(__file__).resolve().parent  # grading/hub of the installed course
BIN = Path(sys.executable).parent  # the course's environment, where the hub runs from
STATE = Path(os.environ.get("LM10_HUB_STATE", "/srv/lm10"))
MAX_REQUEST_MIB = os.environ.get("LM10_NGSHARE_MAX_REQUEST_MIB", "16")
QUOTA_MIB = os.environ.get("LM10_NGSHARE_QUOTA_MIB", "128")
MAX_FILES = os.environ.get("LM10_NGSHARE_MAX_FILES", "500")
MIB_PER_MINUTE = os.environ.get("LM10_NGSHARE_MIB_PER_MINUTE", "64")
AUTH_CACHE_SECONDS = os.environ.get("LM10_EXCHANGE_AUTH_CACHE_SECONDS", "5")
HUB_URL = os.environ.get("LM10_HUB_URL", "http://localhost:8000")  # servers: <user>.<its host>
TMPFS_MIB = int(os.environ.get("LM10_SANDBOX_TMPFS_MIB", "1024"))
# the files one of them holds whatever their size: tmpfs's default, half the machine's pages
# (bwrap 0.8 sets a tmpfs's size, not its nr_inodes)
TMPFS_FILES = os.sysconf("SC_PHYS_PAGES") // 2
STUDENT_MAX_TASKS = int(os.environ.get("LM10_STUDENT_MAX_TASKS", "1024"))
# the pseudo-terminals (JupyterLab's terminals) one server may hold at once, from a devpts of
# its own (grading/hub/ptys.py): bwrap's own draws on the machine's one pool, which one
# student could take for everyone
SERVER_PTYS = int(os.environ.get("LM10_SERVER_PTYS", "16"))
LESSONS_REPOS = " ".join(os.environ.get("LM10_LESSONS_REPOS", "").split())
PATH = f"{BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin"  # nbgrader runs `alembic` from BIN
EXCHANGE_TOKEN_NOTE = "the course's exchange, for this server"  # marks the tokens it revokes
no_keyrings.check_machine()  # the sandbox's filter must know this machine's system calls
BWRAP = shutil.which("bwrap")
if BWRAP is None:
    raise SystemExit(
        "no bubblewrap (bwrap): every server runs in its sandbox; apt-get install bubblewrap"
    )

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


def mount_of(path):
    """(mount point, options) of the file system that holds `path`, from /proc/self/mountinfo."""
    best = ("", "")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point, options = fields[4], fields[5]
        super_options = fields[fields.index("-") + 3] if "-" in fields else ""
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[0]):
            best = (point, f"{options},{super_options}")
    return best


def socket_buffers_flag():
    """The machine's one pool of TCP buffer memory (net.ipv4.tcp_mem, in pages): a thirteenth
    tester's attack (issue 39). Every TCP socket of the machine, in any network namespace, is
    charged to it; past its last value the kernel grows no socket's buffers, so the proxy's
    connections to every server and to the hub stall. A connection a student keeps full and
    unread holds up to net.core.wmem_max + rmem_max, each doubled by the kernel."""
    page = os.sysconf("SC_PAGE_SIZE")
    pressure, _, most = (
        int(n) * page for n in Path("/proc/sys/net/ipv4/tcp_mem").read_text().split()
    )
    core = Path("/proc/sys/net/core")
    each = 2 * (int((core / "wmem_max").read_text()) + int((core / "rmem_max").read_text()))
    return (
        "kernel socket buffers: every TCP connection of the machine draws on one pool "
        f"(net.ipv4.tcp_mem: {most >> 20} MiB at most, the kernel squeezing every socket from "
        f"{pressure >> 20} MiB); a student's own loopback connections, kept full and unread, "
        f"hold up to {each >> 20} MiB each, so a few hundred of them (at least "
        f"{-(-most // each)}, two descriptors each) take the pool, and then "
        "every connection of the machine stalls (the proxy's to every server and to the hub), "
        "whoever's, until her processes end. No rlimit bounds it (RLIMIT_AS counts none of "
        "it; a network namespace per server shares the pool). A memory-limited cgroup per "
        "server (cgroup v2 charges socket buffers to it) well under the pool bounds one "
        "student, not several together; here, a person watches /proc/net/sockstat (TCP mem, "
        "in pages; UDP's pool, net.ipv4.udp_mem, is taken the same way, one unread socket "
        "at a time) and ends the processes that hold it"
    )


def not_bounded_here():
    """What this machine lets one student take from everyone, that this configuration cannot
    bound by itself: said in the hub's log at every start, for a person to act on
    (grading/JUPYTERHUB.md, "What one machine does not bound")."""
    flags = [
        "memory: a student's server and kernels together may take all of the machine's memory "
        "(LocalProcessSpawner sets no memory limit; its temporary folders are capped at "
        f"{TMPFS_MIB} MiB each, but not their files: each takes up to {TMPFS_FILES:,} empty "
        "files, about 1 KiB of the kernel's memory each, which no size counts): put each "
        "server in a memory-limited cgroup (SystemdSpawner with mem_limit, which counts that "
        "memory too) or leave room for every student's peak",
    ]
    if not HUB_URL.startswith("https://"):
        flags.append(
            f"cookies: the hub is served over plain http ({HUB_URL}): its login cookie cannot "
            "carry the __Host- prefix, so a page a student's server serves, on a sibling host, "
            "can set cookies that reach the hub as its own (cookie tossing: a login cookie of "
            "hers, to log a classmate or the instructor in as her), and passwords cross the "
            "network in clear: serve the hub over https (LM10_HUB_URL=https://...)"
        )
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # what each of her processes gets
    flags.append(
        "ports and open files: every server shares this machine's network and its table of "
        f"open files; a student's processes ({STUDENT_MAX_TASKS}, {files} descriptors each) may "
        f"bind every port of the ephemeral range ({high - low + 1} ports, {low}-{high}): then "
        "no server starts (the hub draws each server's port there) and the proxy reaches no "
        "server and not the hub, for everyone, until her processes end; hold idle "
        "connections to the proxy, the hub or a classmate's server until its descriptors run "
        "out; or hold every file the system lets users open (fs.file-max). A network "
        "namespace and a memory-limited cgroup per server bound them (pods); here, a person "
        "watches the hub's log for servers that cannot start and ends the processes that hold "
        "the ports"
    )
    flags.append(socket_buffers_flag())
    if cpu_parent() is None:
        flags.append(
            "CPU: no cgroup v1 cpu hierarchy here for a CPU cgroup per server, so the cores "
            "are shared between sessions (autogroups): a student whose processes each make a "
            f"session of their own (up to {STUDENT_MAX_TASKS}) takes a share per process from "
            "everyone else: give each server a CPU cgroup (SystemdSpawner with cpu_limit, pods)"
        )
    mounts = {
        mount_of(str(homes.home_path(pwd.getpwnam(n).pw_dir))) for n in group_members(STUDENTS)
    }
    for point, options in sorted(mounts):
        if not {"usrquota", "usrjquota", "quota", "prjquota", "uquota"} & set(options.split(",")):
            flags.append(
                f"disk: no user quota on {point}, where students' homes lie: one student can "
                "fill it for everyone (the exchange's quota bounds only what is submitted): "
                "enable user quotas there (quotaon, setquota) or give each home a volume"
            )
    return flags


# --- logins: system accounts, only the course's two groups ---


def in_the_course(name):
    """Whether `name` is a system account in one of the course's two groups, now."""
    try:
        account = pwd.getpwnam(name)
    except KeyError:
        return False
    return in_group(account, STUDENTS) or in_group(account, INSTRUCTORS)


class CourseAccounts(PAMAuthenticator):
    """PAM logins, and every request of a user (her cookie, any token she made) refused once her
    account is gone or has left the course's groups: JupyterHub asks the accounts only at login,
    so a student removed from the machine (`userdel`) kept her hub user, her cookie and every
    token she had made, the exchange's included, and a name given to someone else later is
    the same hub user, her tokens with it. Asked at most every `auth_refresh_age` seconds."""

    async def refresh_user(self, user, handler=None):
        if in_the_course(user.name):
            return True
        self.log.warning(
            "LM10 hub: %r has no account in %s or %s any more: her requests are refused. "
            "Delete her from the hub (the admin page, or DELETE /hub/api/users/<name>): it takes "
            "her tokens with it. Never give the name to anyone else in this course: the "
            "exchange keeps her submissions and feedback under it, for whoever holds it next",
            user.name,
            STUDENTS,
            INSTRUCTORS,
        )
        return False

    def get_handlers(self, app):
        # before JupyterHub's own: a GET of /hub/logout logs out only when it is a navigation
        # (an image in a student's notebook, opened in the instructor's JupyterLab, sent one)
        return [*super().get_handlers(app), ("/logout", asked_logout.hub_handler())]


c.JupyterHub.authenticator_class = CourseAccounts
c.PAMAuthenticator.allowed_groups = {STUDENTS, INSTRUCTORS}
c.Authenticator.auth_refresh_age = 60  # JupyterHub's default is 300

# --- the hub's own state, root only ---
hub_state = private_folder(STATE / "hub", pwd.getpwuid(0))
c.JupyterHub.bind_url = "http://127.0.0.1:8000"
# Every server on a host of its own (alice's at <alice>.<the hub's host>): another origin than
# the hub's and every other server's, so a page a student's server serves (she decides what it
# serves: it runs as her) cannot read the instructor's pages or call her server with her cookies.
# On one origin, it could (tests/test_jupyterhub.py plays it). Needs wildcard DNS and, behind
# TLS, a wildcard certificate; browsers resolve *.localhost to this machine by themselves.
c.JupyterHub.subdomain_host = HUB_URL
# Over https, the hub's login cookie is `__Host-` prefixed: a browser then refuses any cookie of
# that name that a page on a sibling host (a student's server) sets for the parent domain, so
# no one can log a classmate in as herself. Browsers keep the prefix for https pages only:
# over http the hub says so in its log (not_bounded_here).
c.JupyterHub.cookie_host_prefix_enabled = HUB_URL.startswith("https://")
c.JupyterHub.db_url = f"sqlite:///{hub_state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(hub_state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(hub_state / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(hub_state / "proxy.pid")
# ... its output relayed as a server's, bounded: it logged every answer of its REST API with the
# whole path, for anyone on the loopback without a token (794 MB in 10 s: proxy_output.py)
c.JupyterHub.proxy_class = proxy_output.RelayedProxy
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
# Its address: a socket in a folder only the exchange's user writes (no student can make,
# replace or remove anything there), inside root's folder; everyone may connect to it.
EXCHANGE_SOCKET_DIR = private_folder(STATE / "exchange", _ngshare, mode=0o755)
os.chmod(EXCHANGE_SOCKET_DIR, 0o755)
EXCHANGE_SOCKET = EXCHANGE_SOCKET_DIR / "ngshare.sock"
EXCHANGE_URL = f"http://lm10-exchange/services/{SERVICE}"  # its host part names no machine
instructors = group_members(INSTRUCTORS)
if not instructors:
    raise SystemExit(f"the Unix group {INSTRUCTORS!r} has no members: add the instructor")
c.JupyterHub.services = [
    {
        # No "url": the hub's proxy gets no route to it and it has no TCP port at all.
        "name": SERVICE,
        "command": [
            sys.executable,
            "-m",
            "grading.hub.ngshare_service",
            "--state",
            str(ngshare_state),
            "--socket",
            str(EXCHANGE_SOCKET),
            "--prefix",
            f"/services/{SERVICE}/",
            "--course",
            COURSE_ID,
            "--instructors",
            ",".join(instructors),
            "--max-request-mib",
            MAX_REQUEST_MIB,
            "--quota-mib",
            QUOTA_MIB,
            "--max-files",
            MAX_FILES,
            "--mib-per-minute",
            MIB_PER_MINUTE,
            "--auth-cache-seconds",
            AUTH_CACHE_SECONDS,
        ],
        "user": NGSHARE_USER,
        "cwd": str(ngshare_state),
        "environment": {"PATH": PATH},
        "display": False,
    }
]
# Every user may call the exchange (a token they make themselves at /hub/token may carry it);
# the exchange decides what each may do there (a student: their own submissions and feedback).
# A server's own token carries only what JupyterHub gives every server (its activity, access to
# itself): never sent to the exchange, and the exchange refuses it.
ACCESS = f"access:services!service={SERVICE}"
c.JupyterHub.load_roles = [{"name": "user", "scopes": ["self", ACCESS]}]
c.Spawner.server_token_scopes = ["users:activity!user"]

# --- servers: each as its user, in a private home, in a sandbox of its own ---


def listeners(port):
    """The uids of the sockets listening on TCP `port` of this machine (IPv4 and IPv6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(fields[7]))
    return found


CGROUPS = "/sys/fs/cgroup"


def cpu_group(name):
    """A CPU cgroup for `name`'s server (made if need be), or None where the machine has no
    cgroup v1 cpu hierarchy the hub may write. The scheduler shares the cores between the
    machine's top cgroups and, within its root one, between sessions (autogroups): every
    server is a session (LocalProcessSpawner), and a student whose processes each made a
    session of their own (`setsid`, `start_new_session`, up to LM10_STUDENT_MAX_TASKS) took a
    share of the cores per process from every classmate and the instructor (the nineteenth
    tester's table). In a cgroup of its own a server has one share, whatever it starts."""
    if (parent := cpu_parent()) is None:
        return None
    path = parent / f"lm10-server-{name}"
    try:
        path.mkdir(exist_ok=True)
    except OSError:
        return None
    return path


class SandboxedSpawner(LocalProcessSpawner):
    """LocalProcessSpawner, with what a shared machine needs besides the sandbox:

    - the server's port is the hub's: the hub binds it and listens on it (as root) before the
      server starts, hands the listening socket to the server (grading/hub/singleuser.py), and
      closes its own copy only once the proxy no longer routes there (`server_stopped`). No
      other user can bind the port at any moment the proxy may send someone's requests to it:
      not before the server starts (a port the hub draws and the server binds later could be
      taken in between), and not after the server ends on its own (JupyterLab's File > Shut
      Down, a crash), before the hub's next poll notices (a classmate who bound it then got
      the requests, cookies included, that the proxy still sent there). If the port the hub
      is to use is taken, the start fails and says who listens there, for a person to look
      into;
    - a student's processes and threads, together, at most `max_tasks` (RLIMIT_NPROC);
    - no server's processes may take a real-time policy or a nice value below 0;
    - each student's server in a CPU cgroup of its own, where the machine has cgroup v1's cpu
      hierarchy (`cpu_group`): one share of the cores, however many sessions it makes."""

    max_tasks = None  # set per start by prepare_server
    listening = None  # the socket the hub holds on the server's port, while it is routed to
    cpu = None  # the server's CPU cgroup (a folder), made at its start

    def make_preexec_fn(self, name):
        drop_to_user = super().make_preexec_fn(name)
        tasks, cpu = self.max_tasks, self.cpu

        def preexec():
            if cpu:  # as root still
                (cpu / "cgroup.procs").write_text(str(os.getpid()))
            if tasks:
                resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))
            # no real-time policy and no nice below 0, whatever the hub's own limits give:
            # SCHED_FIFO threads or an autogroup at nice -19 would take the cores from every
            # other server, her CPU cgroup or not (the twentieth tester's table)
            for limit in (resource.RLIMIT_RTPRIO, resource.RLIMIT_NICE):
                resource.setrlimit(limit, (0, 0))
            drop_to_user()

        return preexec

    def hold_port(self):
        """Bind and listen on the server's port (any free one unless a port is set)."""
        if self.listening is not None:
            self.listening.close()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT only
        try:
            sock.bind((self.ip or "127.0.0.1", self.port or 0))
            sock.listen(128)
        except OSError as error:
            sock.close()
            others = ", ".join(str(uid) for uid in sorted(listeners(self.port))) or "none seen"
            raise RuntimeError(
                f"port {self.port}, where {self.user.name}'s server was to listen, is taken "
                f"({error.strerror}; uid {others} listens on port {self.port}): not started "
                "there. Someone took the port: a person should find out who (the uid) and why"
            ) from None
        self.listening = sock
        self.port = sock.getsockname()[1]
        return sock.fileno()

    def release_port(self):
        """Close the hub's copy of the server's socket (once the proxy no longer routes there);
        the next start gets a port of its own."""
        if self.listening is not None:
            self.listening.close()
            self.listening = None
        self.port = 0

    async def start(self):
        # Not the instructor's (max_tasks None): the grading sandboxes in her server share the
        # cores by session too, and in one cgroup a submission's threads would outnumber the
        # classmate's graded beside it without making a session (the nineteenth's table)
        self.cpu = cpu_group(self.user.name) if self.max_tasks else None
        fd = self.hold_port()
        # The kernel's keyrings refused in the sandbox (grading/hub/no_keyrings.py): bwrap
        # reads the filter from a descriptor of its own, named in the command for it
        keyrings = no_keyrings.descriptor()
        self.cmd = [str(keyrings) if part == FILTER_FD else part for part in self.cmd]
        if str(keyrings) not in self.cmd:
            os.close(keyrings)
            self.release_port()
            raise RuntimeError(f"{self.user.name}'s server command is not the sandbox's")
        # Nothing of the hub's own standard streams: LocalProcessSpawner passes them on, and a
        # student's server (her code) read the hub's terminal and wrote to it raw. It reads
        # /dev/null and writes to a pipe whose lines the hub logs under its name, plain.
        output, into = os.pipe()
        self.popen_kwargs = {
            **self.popen_kwargs,
            "pass_fds": (fd, keyrings),
            "stdin": subprocess.DEVNULL,
            "stdout": into,
            "stderr": into,
        }
        self.environment = {**self.environment, SERVER_SOCKET_VARIABLE: str(fd)}
        try:
            started = await super().start()
        except BaseException:
            os.close(output)
            self.release_port()
            raise
        finally:
            os.close(into)
            os.close(keyrings)
        server_output.relay(output, self.log, self.user.name)
        return started


c.JupyterHub.spawner_class = SandboxedSpawner
# The hub holds one descriptor per running server (its port): as many as the system lets it.
_, _most_files = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (_most_files, _most_files))
# jupyterhub-singleuser, on the socket the hub listens on for it (grading/hub/singleuser.py);
# -P: nothing from the folder it starts in (the user's home) comes before the course's modules
SINGLEUSER = [sys.executable, "-P", "-m", "grading.hub.singleuser"]
SERVER_SOCKET_VARIABLE = "LM10_SERVER_SOCKET_FD"  # as grading/hub/singleuser.py reads it
c.Spawner.cmd = SINGLEUSER
# A server that ends on its own is noticed within this many seconds (its route removed, its
# port let go): until then, what the proxy sends there waits in the hub's socket.
c.Spawner.poll_interval = 10
# Kernels talk to their server over Unix sockets in the server's private /tmp, not over
# loopback TCP ports that every user of the machine can list and connect to.
c.Spawner.args = ["--KernelManager.transport=ipc"]
c.Spawner.default_url = "/lab"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
RUNTIME = "/tmp/jupyter-runtime"  # inside the sandbox's private /tmp: short ipc socket paths
FILTER_FD = "<the keyrings filter's descriptor>"  # SandboxedSpawner.start names it at each start


def sandbox_command(home, command, nested_users=False, homes_of_course=()):
    """`command` in a bubblewrap sandbox of its own, run as the server's user (bwrap needs no
    privilege: user namespaces). What a systemd machine gives with SystemdSpawner (a scope per
    server, PrivateTmp, ProtectSystem, ProtectHome) it gives by construction:

    - its own PID namespace whose first process is bwrap's: when the server ends, or bwrap is
      signalled (the spawner's stop), or the hub that started it dies (--die-with-parent),
      every process started inside is killed, however it detached; /proc shows only these;
    - a private /tmp, /var/tmp and /dev/shm (tmpfs, gone with the sandbox, each at most
      LM10_SANDBOX_TMPFS_MIB: tmpfs is memory, which they would otherwise take without bound;
      bwrap's own /dev, a tmpfs of half the machine's memory, read-only)
      and its own System V IPC: nothing in them is shared with, or outlives into, another
      user's session;
    - the machine read-only, the home (made private, 0700, by the hub) the only place it
      writes, and the only home it sees (the folder of homes an empty one: grading/hub/
      homes.py); the exchange's socket folder bound read-only (it connects, never writes there);
    - a new session (no terminal of the hub to push input into);
    - pseudo-terminals (her terminals) from a pool of its own, at most LM10_SERVER_PTYS
      (grading/hub/ptys.py, a launcher before bwrap): bwrap's own devpts draws on the
      machine's one pool, which one student's kernel took for everyone;
    - no kernel keyrings (grading/hub/no_keyrings.py): keys belong to a uid of the machine,
      not to a namespace, so a process in any sandbox reached its uid's keys (the instructor's,
      from her grading sandbox: a submission she autograded read them), and a student's keys
      outlived her server and her account; nor io_setup, whose one pool of the machine's
      (fs.aio-max-nr) one student's kernel took for everyone (the same filter), nor io_uring
      (the kernel's largest unprivileged surface; nothing the course runs uses it);
    - unless `nested_users` (the instructor's server, whose grading sandbox is bubblewrap
      too), no user namespace of its own inside: what a student runs cannot make one, so the
      parts of the kernel that only a namespace's "root" reaches (netfilter, mounts of many
      file systems: where most of the kernel's local privilege escalations were found) stay
      out of her reach.

    The course's Python environment and installed course, where they lie under one of the
    folders the sandbox replaces (a checkout under /tmp, as a CI run's may be), are bound
    again read-only: the server starts from them."""
    replaced = ("/tmp", "/var/tmp", "/dev/shm")
    # every other home hidden, as systemd's ProtectHome=tmpfs does (grading/hub/homes.py):
    # each folder holding a home of the course's, not only this one's
    hide_homes, homes_read_only = homes.others_hidden(home, replaced, homes_of_course)
    replaced += tuple(hide_homes[1::2])
    needed = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), HERE.parents[1]}
    again = [
        argument
        for path in sorted(needed)
        if any(path.is_relative_to(folder) for folder in replaced)
        for argument in ("--ro-bind", str(path), str(path))
    ]
    return [
        # a devpts of its own with at most SERVER_PTYS pseudo-terminals, bound over bwrap's,
        # which draws on the machine's one pool (3,072): one student's kernel took it all, and
        # no one else's terminal opened (grading/hub/ptys.py)
        *ptys.launcher(SERVER_PTYS),
        BWRAP,
        *("--ro-bind", "/", "/"),
        *("--dev", "/dev"),
        *ptys.BIND,
        *("--proc", "/proc"),
        # the machine's cgroups hidden behind an empty, read-only folder: each student's CPU
        # cgroup (cpu_group) named her and listed her server's pids and threads to every
        # classmate, so who was on the hub and how busy (the twentieth tester's table)
        *(("--tmpfs", CGROUPS, "--remount-ro", CGROUPS) if Path(CGROUPS).is_dir() else ()),
        # journald's sockets hidden the same way: an entry of hers counted as the hub's unit's,
        # a line forged as the hub's and a flood that made journald drop the hub's own lines
        # (grading/hub/access_log.py, JOURNAL)
        *access_log.journal_hidden(),
        *("--size", str(TMPFS_MIB << 20), "--tmpfs", "/tmp"),
        *("--size", str(TMPFS_MIB << 20), "--tmpfs", "/var/tmp"),
        *("--size", str(TMPFS_MIB << 20), "--tmpfs", "/dev/shm"),
        # bwrap's /dev is a tmpfs of half the machine's memory, hers to write: read-only
        # (its devices, /dev/pts and the capped /dev/shm work as before)
        *("--remount-ro", "/dev"),
        *hide_homes,
        *again,
        *("--bind", str(home), str(home)),
        # before the folders of homes are read-only: bwrap makes its mount point there where
        # one holds it (a home in /srv and the exchange in /srv/lm10: no server started)
        *("--ro-bind", str(EXCHANGE_SOCKET_DIR), str(EXCHANGE_SOCKET_DIR)),
        *homes_read_only,
        *("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"),
        *(() if nested_users else ("--unshare-user", "--disable-userns")),
        *("--seccomp", FILTER_FD),
        "--die-with-parent",
        "--new-session",
        *("--chdir", str(home)),
        "--",
        *command,
    ]


def private_environment(home):
    """TMPDIR and every cache the course's tools use, in the private /tmp or home: nothing at
    a predictable shared path (torch.compile's default was /tmp/torchinductor_<user>)."""
    cache = home / ".cache"
    return {
        "HOME": str(home),
        "TMPDIR": "/tmp",
        "JUPYTER_RUNTIME_DIR": RUNTIME,
        "XDG_CACHE_HOME": str(cache),
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "torchinductor"),
        "TRITON_CACHE_DIR": str(cache / "triton"),
        "MPLCONFIGDIR": str(home / ".config" / "matplotlib"),
        "HF_HOME": str(cache / "huggingface"),
    }


def revoke_exchange_tokens(user):
    """Delete every exchange token the hub made for `user`'s servers."""
    db = user.db
    for token in list(user.orm_user.api_tokens):
        if token.note == EXCHANGE_TOKEN_NOTE:
            db.delete(token)
    db.commit()


def course_homes():
    """The homes of the course's users, now: each server hides every folder holding one."""
    found = set()
    for name in {*group_members(STUDENTS), *group_members(INSTRUCTORS)}:
        with contextlib.suppress(KeyError):
            found.add(str(homes.home_path(pwd.getpwnam(name).pw_dir)))
    return sorted(found)


def prepare_server(spawner):
    """Before a server starts: its user's home private; the course and the grading
    configuration for an instructor, the students' configuration for a student; a fresh
    exchange-only token; the sandbox around the server."""
    account = pwd.getpwnam(spawner.user.name)  # LocalProcessSpawner runs it as this user
    home = private_folder(homes.home_path(account.pw_dir), account)
    revoke_exchange_tokens(spawner.user)
    exchange_token = spawner.user.new_api_token(note=EXCHANGE_TOKEN_NOTE, scopes=[ACCESS])
    environment = {
        "PATH": PATH,
        **private_environment(home),
        "LM10_NGSHARE_URL": EXCHANGE_URL,
        "LM10_NGSHARE_SOCKET": str(EXCHANGE_SOCKET),
        "LM10_EXCHANGE_TOKEN": exchange_token,
        "LM10_NGSHARE_MAX_REQUEST_MIB": MAX_REQUEST_MIB,  # a bigger submission is not sent
        "LM10_LESSONS_REPOS": "",  # an instructor's server pulls nothing (students': below)
        # torch's idle OpenMP threads sleep instead of spinning: every kernel here starts one
        # thread per core, and on a machine shared by a class a spinning thread burns the core a
        # classmate's kernel waits for (no result changes; grading/host/sandbox.py passes the
        # grader's setting into its sandbox the same way)
        "OMP_WAIT_POLICY": "PASSIVE",
    }
    instructor = in_group(account, INSTRUCTORS)
    if instructor:
        course = home / COURSE_ID
        if not (course / "grading" / "nbgrader_config.py").is_file():
            raise RuntimeError(f"no course at {course}: clone the course repository there")
        if course.resolve().parent != home.resolve():
            private_folder(course.resolve(), account)
        spawner.notebook_dir = str(course)
        # the course's, then Validate only on the course's own notebooks (validate_guard.py)
        config = [course / "grading", HERE / "instructor", HERE / "config"]
        # No Python she starts imports from the folder it starts in: a kernel starts in the
        # notebook's folder (`python -m ipykernel_launcher`), and a collected submission's
        # `ipykernel_launcher.py` ran as her when she opened its notebook.
        environment["PYTHONSAFEPATH"] = "1"
        spawner.max_tasks = None  # grading sets its own limits (grading/host/sandbox.py)
    else:
        config = [HERE / "student", HERE / "config"]
        spawner.max_tasks = STUDENT_MAX_TASKS
        # what "Open on the hub" links may pull here (grading/hub/gitpuller_guard.py)
        environment["LM10_LESSONS_REPOS"] = LESSONS_REPOS
    environment["JUPYTER_CONFIG_PATH"] = os.pathsep.join(map(str, config))
    # The course's kernel (grading/hub/kernel.py): nothing of it listens on the loopback, which
    # every user of this machine shares (ipykernel's IOPub pipe and its debugger did)
    environment["JUPYTER_PATH"] = str(HERE / "kernel-data")
    spawner.environment = {**spawner.environment, **environment}
    # the instructor's grading sandbox is bubblewrap, inside hers: it makes user namespaces
    spawner.cmd = sandbox_command(home, SINGLEUSER, instructor, course_homes())


def server_stopped(spawner):
    """After a server stops (its sandbox, and everything in it, gone, and its route): its
    exchange token, and the hub's hold on its port."""
    spawner.release_port()
    revoke_exchange_tokens(spawner.user)
    if spawner.cpu:  # empty once the server's sandbox is gone; kept (and reused) if not
        with contextlib.suppress(OSError):
            spawner.cpu.rmdir()


c.Spawner.pre_spawn_hook = prepare_server
c.Spawner.post_stop_hook = server_stopped
if not LESSONS_REPOS:
    print(
        'LM10 hub: LM10_LESSONS_REPOS names no repository: every "Open on the hub" link '
        "(nbgitpuller) is refused; set it to the course's student edition to open lessons",
        file=sys.stderr,
        flush=True,
    )
for _flag in not_bounded_here():
    print(f"LM10 hub: NOT BOUNDED on this machine: {_flag}", file=sys.stderr, flush=True)
