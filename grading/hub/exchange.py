"""nbgrader's side of the course's exchange: ngshare_exchange, with the course's collect and
release_feedback (grading/hub/config/nbgrader_config.py names these classes).

ngshare_exchange (PyPI, 0.5.3) is nbgrader's client of ngshare: release, fetch, submit, list,
fetch feedback as it ships them. Two of its steps work through the whole class in one loop and
stop at the first student whose files they cannot handle, and one of those files comes from
the student:

- its collect writes a submission's files where their names say, then the exchange's time of
  submission over `timestamp.txt`; a submission holding `timestamp.txt/x` makes that a folder,
  the write fails and no student after that one is collected. `Collect` here takes each
  submission on its own: names checked (relative, no `.` or `..`, no file that is also a folder,
  at most `max_files`), written into a new folder beside the student's (files opened with
  O_EXCL | O_NOFOLLOW: nothing there can be a link), the exchange's time of submission written
  last as `timestamp.txt` (a `timestamp.txt` of the student's own is left out, with a warning),
  then put in place of the student's folder in one rename. Git's and Mercurial's metadata is
  left out too, with a warning (`GIT_METADATA`): a submission holding `.git/config` made its
  folder a repository of the student's, and any git command the instructor ran there (`git
  status`, a shell prompt that shows the branch) ran the student's commands as the instructor
  (`core.fsmonitor`, `core.pager`): her solutions, the gradebook, her hub token. So is
  nbgrader's configuration (`NBGRADER_CONFIG`): nbgrader's commands load `nbgrader_config.py`
  from the folder they run in, so `nbgrader validate` run in a collected folder ran the
  student's file as the instructor. A submission
  that fails any of this is not collected, its student is named in the log, and every other
  student is collected; the command then fails, so the instructor sees who is missing.
- its release_feedback stops at the first feedback folder without `timestamp.txt`, before any
  feedback is sent. `ReleaseFeedback` sends each student's pages on their own and names the
  students it could not send, failing at the end.
- its submit, when the exchange refuses a submission (not enrolled, over the quota), logs it
  and reports success: the Assignments panel says nothing. `Submit` fails instead, with the
  exchange's own message; and a submission larger than the exchange reads
  ($LM10_NGSHARE_MAX_REQUEST_MIB, which the hub sets) is not sent, with a message that says
  so, since the exchange would only cut the connection. Its submit also matches nbgrader's
  `CourseDirectory.ignore` against file names only, so a folder it names (`feedback/`,
  `.ipynb_checkpoints/`) was sent with the submission; `Submit` leaves out what lies in one.

Every request goes to the exchange's Unix socket ($LM10_NGSHARE_SOCKET: no TCP port another
user's process could take while the exchange is down; in Kubernetes, where it is unset, to
$LM10_NGSHARE_URL, the exchange pod's Service) with the server's exchange token
($LM10_EXCHANGE_TOKEN, which can do nothing but call the exchange), never with the server's
own token ($JUPYTERHUB_API_TOKEN, which opens the server). The hub sets all three variables
(jupyterhub_config.py). Names that reach the instructor's terminal or log are printed escaped
(`shown`), and collect refuses names with control or formatting characters, as the exchange
does. The instructor enrols students with `python -m grading.hub.exchange add_students LM10
roster.csv` (ngshare-course-management's commands, through the same socket and token).
"""

import base64
import binascii
import fnmatch
import glob
import os
import shutil
import sys
import tempfile
import unicodedata
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from urllib.parse import urlencode

import ngshare_exchange
import requests
from nbgrader.utils import parse_utc
from ngshare_exchange import course_management
from traitlets import Integer, default

from grading.hub.unix_http import SocketAdapter

URL_VARIABLE = "LM10_NGSHARE_URL"  # the hub sets it for every server (jupyterhub_config.py)
SOCKET_VARIABLE = "LM10_NGSHARE_SOCKET"  # where the exchange listens
TOKEN_VARIABLE = "LM10_EXCHANGE_TOKEN"  # the server's token for the exchange, and nothing else
MAX_REQUEST_VARIABLE = "LM10_NGSHARE_MAX_REQUEST_MIB"  # and this, the exchange's request limit
TIMESTAMP = "timestamp.txt"  # the exchange's time of submission; nbgrader reads it
REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}  # as grading/hub/ngshare_service.py
# What makes a folder a repository whose configuration runs commands (git: a `.git` folder or
# file, or a `HEAD` beside `objects/` and `refs/`, git's own test, is_git_directory; Mercurial:
# `.hg`, whose hgrc holds hooks): never collected, wherever it lies in a submission, whatever
# its case (git on a case-insensitive file system reads `.GIT`).
REPOSITORY_FOLDERS = {".git", ".hg"}
GIT_METADATA = REPOSITORY_FOLDERS | {"head"}
# nbgrader's configuration, which every nbgrader command loads from the folder it runs in
# (NbGrader.load_cwd_config): never collected, in any folder of a submission, in any case.
NBGRADER_CONFIG = {"nbgrader_config.py", "nbgrader_config.json"}


class Refused(Exception):
    """A student's submission or feedback that cannot be handled; the others go on."""


def shown(name):
    """`name` as it may be printed: everything outside printable ASCII escaped."""
    return ascii(name)


def exchange_session():
    """A requests session that reaches the exchange (its socket, its token) and nothing else."""
    path, token = os.environ.get(SOCKET_VARIABLE), os.environ.get(TOKEN_VARIABLE)
    if not token:
        raise RuntimeError(
            f"${TOKEN_VARIABLE} is not set: the course's exchange is reached from a server "
            "the course's JupyterHub started"
        )
    session = requests.Session()
    session.trust_env = False  # no proxy from the environment between a server and the exchange
    if path:  # one machine: the socket; in Kubernetes, the URL (a Service no user pod can take)
        session.mount("http://", SocketAdapter(path))
        session.mount("https://", SocketAdapter(path))
    session.headers["Authorization"] = f"token {token}"
    return session


class ThroughTheSocket:
    """ngshare_exchange's requests, sent by `exchange_session` (ngshare_exchange sends
    $JUPYTERHUB_API_TOKEN, the server's own token, to a URL)."""

    def ngshare_api_request(self, method, url, data=None, params=None):
        try:
            with exchange_session() as session:
                response = session.request(
                    method, self.ngshare_url + self.encode_url(url), data=data, params=params
                )
        except Exception:
            self.log.exception("An error occurred when querying the exchange at %s", url)
            return None
        return self._ngshare_api_check_error(response, url)


class Exchange(ThroughTheSocket, ngshare_exchange.Exchange):
    @default("_ngshare_url")
    def _address_from_the_hub(self):
        return os.environ.get(URL_VARIABLE, "")


class FetchAssignment(ThroughTheSocket, ngshare_exchange.ExchangeFetchAssignment):
    pass


class FetchFeedback(ThroughTheSocket, ngshare_exchange.ExchangeFetchFeedback):
    pass


class ReleaseAssignment(ThroughTheSocket, ngshare_exchange.ExchangeReleaseAssignment):
    pass


class List(ThroughTheSocket, ngshare_exchange.ExchangeList):
    pass


class Submit(ThroughTheSocket, ngshare_exchange.ExchangeSubmit):
    refusal = None  # the exchange's message when it refuses a request

    def _ngshare_api_check_error(self, response, url):
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if isinstance(answer, dict) and not answer.get("success"):
            self.refusal = str(answer.get("message", ""))[:500]
        elif response.status_code != 200:
            self.refusal = f"HTTP status {response.status_code}"
        return super()._ngshare_api_check_error(response, url)

    def ignore_patterns(self):
        files = super().ignore_patterns()
        folders = self.coursedir.ignore

        def ignore(directory, filename, filesize):
            inside = Path(directory).relative_to(self.src_path).parts
            if any(fnmatch.fnmatch(part, g) for part in inside for g in folders):
                return True
            return files(directory, filename, filesize)

        return ignore

    def ngshare_api_post(self, url, data, params=None):
        limit = float(os.environ.get(MAX_REQUEST_VARIABLE) or 0) * 1024 * 1024
        size = len(urlencode(data))
        if limit and size > limit:
            self.fail(
                f"Not submitted: it takes {size / 1048576:.1f} MiB to send and the exchange "
                f"accepts at most {limit / 1048576:g} MiB. Remove large files from the lab's "
                "folder, or clear large outputs, and submit again."
            )
        return super().ngshare_api_post(url, data, params)

    def post_submission(self, src_path):
        timestamp = super().post_submission(src_path)
        if timestamp is None:
            self.fail(f"Not submitted: the exchange refused it: {self.refusal or 'no answer'}")
        return timestamp


def has_hidden_characters(name):
    return any(unicodedata.category(ch) in REFUSED_CATEGORIES for ch in name)


def plain_name(name):
    """A student id as ngshare gives it, checked to be one folder name."""
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or "/" in name
        or has_hidden_characters(name)
    ):
        raise Refused(f"not a usable student id: {shown(name)}")
    return name


def is_git_metadata(parts):
    """Whether a file at these path parts is, or lies in, git's metadata (`GIT_METADATA`)."""
    folded = [p.casefold() for p in parts]
    return bool(REPOSITORY_FOLDERS & set(folded)) or folded[-1] in GIT_METADATA


def is_nbgrader_config(parts):
    """Whether a file at these path parts is one nbgrader loads as its configuration."""
    return parts[-1].casefold() in NBGRADER_CONFIG


def checked_files(files, limit):
    """(relative path, bytes) for each file of a submission as ngshare hands it over, or Refused.
    Entries under `timestamp.txt` (the exchange writes that file) and git's metadata are left
    out, and so is nbgrader's configuration; they are returned as the second item."""
    if not isinstance(files, list):
        raise Refused("the exchange's answer holds no file list")
    if len(files) > limit:
        raise Refused(f"{len(files)} files, more than the {limit} a submission may hold")
    kept, folders, dropped = {}, set(), []
    for entry in files:
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str) or "\\" in path or has_hidden_characters(path):
            raise Refused(f"a file name that is not a plain path: {shown(path)}")
        parts = PurePosixPath(path).parts
        if not parts or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise Refused(f"a file name outside the submission's folder: {shown(path)}")
        if parts[0] == TIMESTAMP or is_git_metadata(parts) or is_nbgrader_config(parts):
            dropped.append(path)
            continue
        key = "/".join(parts)
        if key in kept or key in folders:
            raise Refused(f"{shown(path)} twice, or as a file and a folder")
        ancestors = {"/".join(parts[:i]) for i in range(1, len(parts))}
        if ancestors & kept.keys():
            raise Refused(f"{shown(path)} lies inside a file of the same submission")
        try:
            kept[key] = base64.b64decode(entry.get("content", ""), validate=False)
        except (binascii.Error, TypeError, ValueError) as error:
            raise Refused(f"{shown(path)} is not base64: {error}") from None
        folders |= ancestors
    return kept, dropped


def write_tree(folder, files):
    """Write `files` (relative path -> bytes) into the new, empty `folder`; never through a link."""
    for key, content in files.items():
        target = folder.joinpath(*key.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)


class Collect(ThroughTheSocket, ngshare_exchange.ExchangeCollect):
    max_files = Integer(
        1000, help="Most files one submission may hold; a bigger one is not collected"
    ).tag(config=True)

    def copy_files(self):
        if not self.src_records:
            self.log.warning("No submissions of %s to collect", self.coursedir.assignment_id)
        failed = {}
        for record in self.src_records:
            student = record.get("student_id")
            try:
                self.collect_one(plain_name(student), record["timestamp"])
            except (Refused, OSError, ValueError) as why:
                failed[shown(student)] = (
                    f"{type(why).__name__}: {shown(str(why))}"
                    if isinstance(why, OSError)
                    else str(why)
                )
                self.log.error(
                    "Not collected: %s's submission: %s", shown(student), failed[shown(student)]
                )
        if failed:
            self.fail(
                f"collected {len(self.src_records) - len(failed)} of {len(self.src_records)} "
                f"submissions of {self.coursedir.assignment_id}; not collected: "
                + "; ".join(f"{s} ({why})" for s, why in failed.items())
            )

    def collect_one(self, student, listed_time):
        lab = self.coursedir.assignment_id
        dest = Path(self.coursedir.format_path(self.coursedir.submitted_directory, student, lab))
        if dest.is_dir() and not dest.is_symlink():
            existing = self.coursedir.get_existing_timestamp(str(dest))
            if not self.update or (existing is not None and listed_time <= existing):
                self.log.info("No newer submission to collect: %s %s", student, lab)
                return
        answer = self.ngshare_api_get(f"/submission/{self.coursedir.course_id}/{lab}/{student}")
        if answer is None:
            raise Refused("the exchange did not hand it over (see the error above)")
        timestamp = str(answer.get("timestamp", ""))
        parse_utc(timestamp)  # ValueError if the exchange's time does not read as one
        files, dropped = checked_files(answer.get("files"), self.max_files)
        if dropped:
            self.log.warning(
                "%s's submission holds %s, left out: collect writes the exchange's time of "
                "submission as timestamp.txt, and no git metadata or nbgrader configuration "
                "(a repository of the student's, or her nbgrader_config.py, would run her "
                "commands in any git or nbgrader command run there)",
                shown(student),
                ", ".join(map(shown, dropped)),
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=f".{lab}-collecting-", dir=dest.parent))
        old = None
        try:
            fresh.chmod(0o777 & ~current_umask())
            write_tree(fresh, files)
            write_tree(fresh, {TIMESTAMP: timestamp.encode()})
            if dest.exists() or dest.is_symlink():
                old = dest.with_name(f".{lab}-replaced-{fresh.name}")
                dest.rename(old)
            fresh.rename(dest)
            self.log.info("Collected: %s %s (submitted %s)", student, lab, shown(timestamp))
        finally:
            if fresh.exists():
                shutil.rmtree(fresh)
            if old is not None:
                if old.is_dir() and not old.is_symlink():
                    shutil.rmtree(old)
                else:
                    old.unlink()


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


class ReleaseFeedback(ThroughTheSocket, ngshare_exchange.ExchangeReleaseFeedback):
    def copy_files(self):
        exclude = {s for s in (self.coursedir.student_id_exclude or "").split(",") if s}
        failed, sent = {}, 0
        for folder in sorted(Path(p) for p in glob.glob(self.src_path)):
            student = folder.parent.name
            if student in exclude or not folder.is_dir():
                continue
            try:
                self.release_one(student, folder)
                sent += 1
            except (Refused, OSError, ValueError) as why:
                failed[shown(student)] = shown(str(why))
                self.log.error("Feedback not released to %s: %s", shown(student), shown(str(why)))
        if failed:
            self.fail(
                f"released feedback to {sent} students; not to: "
                + "; ".join(f"{s} ({why})" for s, why in failed.items())
            )

    def release_one(self, student, folder):
        pages = sorted(p for p in folder.glob("*.html") if p.is_file() and not p.is_symlink())
        if not pages:
            raise Refused(f"no feedback page in {folder}")
        stamp = folder / TIMESTAMP
        if not stamp.is_file() or stamp.is_symlink():
            raise Refused(f"no {TIMESTAMP} in {folder}: collect the submission again")
        timestamp = stamp.read_text().strip()
        parse_utc(timestamp)
        feedback = [{"notebook_id": p.stem, "path": str(p)} for p in pages]
        self.log.info("Releasing feedback to %s (submission of %s)", student, shown(timestamp))
        if self.post_feedback(student, timestamp, feedback) is None:
            raise Refused("the exchange refused it (see the error above)")


def manage_course(argv=None):
    """ngshare-course-management's commands (add_students, add_student, remove_students, ...),
    through the exchange's socket with the server's exchange token."""
    session = exchange_session()
    course_management.requests = SimpleNamespace(
        post=session.post,
        delete=session.delete,
        get=session.get,
        codes=requests.codes,
        exceptions=requests.exceptions,
    )
    course_management.get_header = dict  # the session sends the exchange token itself
    course_management._ngshare_url = os.environ.get(URL_VARIABLE, "")
    course_management.main(argv)


if __name__ == "__main__":
    manage_course(sys.argv[1:])
