"""What an "Open on the hub" link (nbgitpuller) may pull, and where, in a server of the hub.

nbgitpuller clones or merges the repository its link names (`repo`) into the folder it names
(`targetpath`), as the server's user, on a plain GET: one click on a link, or a page of anyone's
that opens the link in a frame or a window (a navigation, which JupyterHub's XSRF check lets
through). Without this guard a classmate's link could pull a repository of hers into
`~/.local/share/jupyter/kernels/python3` of whoever clicked (a kernel specification of hers,
whose command runs at that person's next kernel, as that person: the instructor's solutions, a
classmate's answers) or into `~/.ipython`, `~/.jupyter`, or the instructor's course.

So in the hub's servers nbgitpuller pulls only a repository the hub names
(LM10_LESSONS_REPOS, which the hub passes to students' servers and not to instructors'), into a
folder under the server's root whose path has no hidden or `..` part (never the root itself).
Anything else is refused before nbgitpuller runs a git command.

The link's page (`/git-pull`, what the link opens first) is refused on the same terms, with a
403, before it renders anything; and nbgitpuller's templates are escaped. nbgitpuller 1.3
renders them with autoescaping off: the link's `urlpath` (or `repo`, `targetpath`) went into the
page as HTML, so a link of a classmate's ran her script on the origin of whoever opened it
(`/hub/user-redirect/git-pull?repo=x&urlpath=<script>...`): with that person's cookies, her
script read their notebooks, opened a terminal on their server, and, from the instructor's
link, read the solutions and the gradebook. Loaded by grading/hub/config/jupyter_server_config.py
in every server the hub starts.
"""

import functools
import os
from pathlib import Path

REPOS_VARIABLE = "LM10_LESSONS_REPOS"  # set by grading/hub/jupyterhub_config.py


def allowed_repos():
    """The repositories this server's links may pull (space-separated in the environment)."""
    return {r.rstrip("/") for r in os.environ.get(REPOS_VARIABLE, "").split()}


def check(repo, target, root, backup=False):
    """Why a pull of `repo` into `target` (a path nbgitpuller made under the server's `root`)
    is refused, or None if it may go. `backup` is the link's (nbgitpuller moves an existing
    `target` aside first where it is any non-empty string, "false" too)."""
    allowed = allowed_repos()
    if not allowed:
        return f"this server pulls no repository (${REPOS_VARIABLE} names none for it)"
    if repo.rstrip("/") not in allowed:
        return f"{repo!r} is not the course's repository ({', '.join(sorted(allowed))})"
    root = os.path.normpath(os.path.expanduser(root))
    parts = Path(os.path.relpath(os.path.normpath(target), root)).parts
    if parts in ((), (".",)) or any(p == ".." or p.startswith(".") for p in parts):
        return f"{target!r}: a folder under {root} without hidden or '..' parts"
    if not Path(target).resolve().is_relative_to(Path(root).resolve()):
        return f"{target!r} leads out of {root}"
    # A folder of hers that is no clone stays where it is: a classmate's link of the course's
    # repository with `targetpath=LM10-L2&backup=true` renamed the clicker's assignment folder
    # to LM10-L2_backup_<time> and cloned the lessons in its place, so that her Submit sent the
    # lessons (the sixty-second hub tester's); without `backup` such a pull fails in git.
    if backup:
        return "backup=...: a link moves no folder aside"
    if os.path.lexists(target) and not os.path.isdir(os.path.join(target, ".git")):
        return f"{target!r} is a folder of this server's that no link pulled"
    return None


def guard():
    """Make nbgitpuller's handlers refuse what `check` refuses, and its pages escape what they
    show."""
    from nbgitpuller import handlers
    from nbgitpuller.pull import GitPuller
    from tornado import web

    handlers.jinja_env.autoescape = True
    page = handlers.UIHandler.get

    @functools.wraps(page)
    @web.authenticated  # who asks first: no one else learns what this server pulls
    async def guarded_page(self):
        repo = self.get_argument("repo", "")
        root = os.path.expanduser(self.settings.get("server_root_dir") or "~")
        target = self.get_argument("targetpath", None) or self.get_argument(
            "targetPath", repo.rstrip("/").split("/")[-1]
        )
        backup = self.get_argument("backup", False)
        refused = check(repo, os.path.join(root, target), root, backup)
        if refused:
            raise web.HTTPError(403, "not pulled: %s", refused)
        return await page(self)

    handlers.UIHandler.get = guarded_page

    class GuardedGitPuller(GitPuller):
        def __init__(self, git_url, repo_dir, **kwargs):
            parent = kwargs.get("parent")
            root = getattr(parent, "root_dir", None) or os.path.expanduser("~")
            refused = check(git_url, repo_dir, root, kwargs.get("backup"))
            if refused:
                raise ValueError(f"not pulled: {refused}")
            super().__init__(git_url, repo_dir, **kwargs)

    handlers.GitPuller = GuardedGitPuller
