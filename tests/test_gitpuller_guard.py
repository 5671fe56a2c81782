"""What an "Open on the hub" link (nbgitpuller) may do to the folders of whoever clicks it:
grading/hub/gitpuller_guard.py around nbgitpuller's own GitPuller, with a local repository as
the course's (LM10_LESSONS_REPOS). tests/test_jupyterhub.py plays the links on a real hub."""

from __future__ import annotations

import subprocess

import pytest
from traitlets import Unicode
from traitlets.config import Configurable

from grading.hub import gitpuller_guard


@pytest.fixture
def course(tmp_path, monkeypatch):
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    (lessons / "T1.md").write_text("# a lesson\n")
    git = ["git", "-c", "user.email=l@m", "-c", "user.name=lm10", "-C", str(lessons)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "lessons"], check=True)
    home = tmp_path / "home"
    (home / "LM10-L2").mkdir(parents=True)
    (home / "LM10-L2" / "LM10-L2.ipynb").write_text('{"her": "answers"}')
    monkeypatch.setenv(gitpuller_guard.REPOS_VARIABLE, str(lessons))
    monkeypatch.setenv("HOME", str(home))
    gitpuller_guard.guard()
    return lessons, home


def pull(lessons, home, target, **link):
    from nbgitpuller import handlers

    class Server(Configurable):
        root_dir = Unicode(str(home))

    puller = handlers.GitPuller(str(lessons), str(home / target), parent=Server(), **link)
    for _ in puller.pull():
        pass


def test_a_link_moves_no_folder_of_hers_aside(course):
    """A classmate's link of the course's repository, `targetpath=LM10-L2&backup=true`, renamed
    the clicker's assignment folder to LM10-L2_backup_<time> and cloned the lessons in its place
    (the sixty-second hub tester's). Refused now, with or without `backup`; the course's own
    link into a new folder, and again into its clone, still pulls."""
    lessons, home = course
    for link in ({"backup": "true"}, {"backup": "false"}, {}):
        with pytest.raises(ValueError, match="not pulled"):
            pull(lessons, home, "LM10-L2", branch=None, depth=None, **link)
    assert sorted(p.name for p in home.iterdir()) == ["LM10-L2"]
    assert [p.name for p in (home / "LM10-L2").iterdir()] == ["LM10-L2.ipynb"]
    pull(lessons, home, "lm10", branch=None, depth=None)
    pull(lessons, home, "lm10", branch=None, depth=None)
    assert (home / "lm10" / "T1.md").is_file()
    with pytest.raises(ValueError, match="backup"):
        pull(lessons, home, "lm10", branch=None, depth=None, backup="true")
