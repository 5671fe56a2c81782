"""grading/hub/homes.py: a server sees its own home and no other, played with the servers'
bubblewrap options (no hub: a second)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grading.hub import homes

LOOK = (
    "ls {parent}; cat {parent}/bob/answers.txt; touch {parent}/alice/mine && echo wrote; "
    "touch {parent}/planted && echo planted"
)


@pytest.mark.slow  # bubblewrap (tests/conftest.py's rule), though a second
@pytest.mark.skipif(not shutil.which("bwrap"), reason="the servers' sandbox is bubblewrap")
def test_a_server_sees_no_home_but_its_own(tmp_path):
    """The sixty-ninth tester's open row: a home a student opens herself (`chmod 755`) was
    readable by every server, the instructor's among them, whose handlers read a folder a
    request names. With the servers' options alice's server lists her home alone, reads
    nothing of bob's, still writes her own, and writes nothing beside it (the empty folder is
    read-only, not a tmpfs of hers to fill)."""
    parent = tmp_path / "homes"
    alice, bob = parent / "alice", parent / "bob"
    for home in (alice, bob):
        home.mkdir(parents=True)
    (bob / "answers.txt").write_text("bob's answers\n")
    bob.chmod(0o755)

    def look(*options):
        before, after = options or ((), ())
        command = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        command += [*before, "--bind", str(alice), str(alice), *after, "--unshare-pid"]
        command += ["--", "sh", "-c", LOOK.format(parent=parent)]
        return subprocess.run(command, capture_output=True, text=True, timeout=60).stdout

    # without: bob's home and answers (the machine is read-only there, as it is here)
    assert look() == "alice\nbob\nbob's answers\nwrote\n"
    assert look(*homes.others_hidden(alice)) == "alice\nwrote\n"
    assert (alice / "mine").is_file() and not (parent / "planted").exists()


def test_homes_are_hidden_only_where_a_folder_holds_them():
    """No option where the home's folder is the root (never hidden) or already a private
    tmpfs of the sandbox's (the test hub's homes, under /tmp)."""
    assert homes.others_hidden("/home/lm10-alice") == (
        ("--tmpfs", "/home"),
        ("--remount-ro", "/home"),
    )
    assert homes.others_hidden("/srv") == ((), ())
    assert homes.others_hidden("/tmp/hub-homes/lm10-alice", ("/tmp", "/var/tmp")) == ((), ())


@pytest.mark.slow  # bubblewrap (tests/conftest.py's rule), though a second
@pytest.mark.skipif(not shutil.which("bwrap"), reason="the servers' sandbox is bubblewrap")
def test_no_server_sees_a_home_in_another_folder_of_homes(tmp_path):
    """The seventy-third tester's: staff and students in folders of their own
    (`/home/staff/<instructor>`, `/home/students/<her>`). The instructor's server hid the
    folder of its own home only: mallory's opened home, and the `nbgrader_config.py` she left
    there, were read in it, as the sixty-ninth's attack needs. Every folder that holds a home of
    the course is hidden now, in every server."""
    instructor = tmp_path / "staff" / "instructor"
    mallory, bob = tmp_path / "students" / "mallory", tmp_path / "students" / "bob"
    for home in (instructor, mallory, bob):
        home.mkdir(parents=True)
    (mallory / "nbgrader_config.py").write_text("print('hers')\n")
    mallory.chmod(0o755)
    course = [str(h) for h in (instructor, mallory, bob)]

    def look(home):
        before, after = homes.others_hidden(home, (), course)
        command = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        command += [*before, "--bind", str(home), str(home), *after, "--unshare-pid", "--"]
        command += ["sh", "-c", f"ls {tmp_path}/staff {tmp_path}/students; cat {mallory}/*.py"]
        return subprocess.run(command, capture_output=True, text=True, timeout=60).stdout

    assert "hers" not in look(instructor)
    assert look(instructor).split() == [f"{tmp_path}/staff:", "instructor", f"{tmp_path}/students:"]
    assert look(bob).split() == [f"{tmp_path}/staff:", f"{tmp_path}/students:", "bob"]


@pytest.mark.slow  # bubblewrap (tests/conftest.py's rule), though a second
@pytest.mark.skipif(not shutil.which("bwrap"), reason="the servers' sandbox is bubblewrap")
def test_a_folder_of_homes_that_holds_the_exchange_still_starts_a_server(tmp_path):
    """The seventy-third tester's false stop: a home in the folder that holds the exchange's
    socket folder (`/srv/<her>` and `/srv/lm10/exchange`): the folder was read-only before its
    mount point was made, and bwrap started nothing ("Can't mkdir parents ... Read-only file
    system"). The servers bind the exchange before the folders of homes are made read-only."""
    home, exchange = tmp_path / "srv" / "alice", tmp_path / "srv" / "lm10" / "exchange"
    for folder in (home, exchange):
        folder.mkdir(parents=True)
    before, after = homes.others_hidden(home)
    config = (Path(homes.__file__).parent / "jupyterhub_config.py").read_text()
    body = config[config.index("def sandbox_command") :]
    binds = ["--ro-bind", str(exchange), str(exchange)]
    exchange_first = body.index("str(EXCHANGE_SOCKET_DIR), str(EXCHANGE_SOCKET_DIR)")
    if exchange_first < body.index("*homes_read_only"):
        options = [*before, "--bind", str(home), str(home), *binds, *after]
    else:
        options = [*before, "--bind", str(home), str(home), *after, *binds]
    command = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", *options]
    command += ["--", "sh", "-c", f"ls {exchange.parent.parent}"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout.split()) == (0, ["alice", "lm10"]), run.stderr


def test_every_folder_of_the_courses_homes_is_hidden(monkeypatch):
    """Each folder holding a home of the course's, shallower first; none that is the root,
    lies in the server's own home, or holds or lies in a folder the sandbox replaces."""
    monkeypatch.setattr(homes.Path, "is_dir", lambda _: True)  # as on a machine of the course
    course = ["/home/instructor", "/home/students/a", "/home/students/b", "/tmp/x/c", "/var/d"]
    course += ["/home/students/a/nested/e", "/f"]
    # /var/d and /f: their folders stay (/var holds /var/tmp; the root), the homes themselves
    # are hidden (the seventy-seventh hub tester)
    assert homes.others_hidden("/home/students/a", ("/tmp", "/var/tmp"), course) == (
        ("--tmpfs", "/f", "--tmpfs", "/home", "--tmpfs", "/home/students", "--tmpfs", "/var/d"),
        ("--remount-ro", "/f", "--remount-ro", "/home", "--remount-ro", "/home/students")
        + ("--remount-ro", "/var/d"),
    )
    # never the server's own home, nor a home that holds it or a replaced folder, nor the root
    assert homes.others_hidden("/var/d", ("/tmp", "/var/tmp"), ["/var/d", "/var", "/"]) == ((), ())


@pytest.mark.slow  # bubblewrap (tests/conftest.py's rule), though a second
@pytest.mark.skipif(not shutil.which("bwrap"), reason="the servers' sandbox is bubblewrap")
def test_a_home_in_a_folder_not_made_yet_stops_no_server(tmp_path):
    """The seventy-fifth tester's false stop: the hub makes a home (and the folders above it)
    at its user's first start, so one account of the course whose home lies in a folder not
    made yet (a cohort's `/home/students-2027/<her>` before any of them logs in, a student who
    never does) gave every other server `--tmpfs` of that folder, which bwrap cannot make in
    the read-only root: "Can't mkdir ...: Read-only file system", no one's server started, the
    instructor's neither. A folder not there holds no home to hide."""
    instructor, bob = tmp_path / "staff" / "instructor", tmp_path / "students" / "bob"
    for home in (instructor, bob):
        home.mkdir(parents=True)
    course = [str(instructor), str(bob), str(tmp_path / "students-2027" / "alice")]
    before, after = homes.others_hidden(bob, (), course)
    command = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    command += [*before, "--bind", str(bob), str(bob), *after, "--unshare-pid", "--"]
    command += ["sh", "-c", f"echo started; ls {tmp_path}/staff"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout.split()) == (0, ["started"]), run.stderr


def test_a_home_in_the_sandboxs_own_dev_or_proc_hides_nothing_there():
    """An account of the course with a home of `/dev/null` (or in /proc): hiding its folder put
    an empty /dev over bwrap's, every device gone (/dev/null, the terminals) in every server.
    The sandbox makes its own /dev and /proc; no home of the machine is seen there."""
    assert homes.others_hidden("/dev/shm/x", (), ["/dev/null", "/proc/1/x"]) == ((), ())
    assert homes.others_hidden("/nonexistent-lm10/a", (), ["/dev/null"]) == ((), ())


@pytest.mark.slow  # bubblewrap (tests/conftest.py's rule), though a second
@pytest.mark.skipif(not shutil.which("bwrap"), reason="the servers' sandbox is bubblewrap")
def test_a_home_whose_folder_stays_is_hidden_itself(tmp_path):
    """The seventy-third tester's open row: a home of the course directly under a folder that
    holds one the sandbox replaces (`/var/<her>` beside `/var/tmp`) or under the root was seen
    by every server, the instructor's among them (its folder cannot be hidden). Such a home is
    hidden itself now: its name listed, nothing in it."""
    var = tmp_path / "var"
    alice, mallory = var / "alice", var / "mallory"
    for folder in (alice, mallory, var / "tmp"):
        folder.mkdir(parents=True)
    (mallory / "nbgrader_config.py").write_text("print('hers')\n")
    mallory.chmod(0o755)
    before, after = homes.others_hidden(alice, (str(var / "tmp"),), [str(alice), str(mallory)])
    command = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    command += [*before, "--bind", str(alice), str(alice), *after, "--unshare-pid", "--"]
    command += [
        "sh",
        "-c",
        f"ls {var}; ls {mallory}; cat {mallory}/*.py; touch {alice}/x && echo wrote",
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert run.stdout.split() == ["alice", "mallory", "tmp", "wrote"], (run.stdout, run.stderr)


@pytest.mark.slow  # bubblewrap (tests/conftest.py's rule), though a second
@pytest.mark.skipif(not shutil.which("bwrap"), reason="the servers' sandbox is bubblewrap")
def test_a_folder_of_homes_that_is_a_link_starts_servers_and_hides_homes(tmp_path):
    """The eightieth hub tester's false stop: a folder of homes that is a link with an absolute
    target (`ln -s /data/home /home`): bubblewrap makes its mounts in a root of its own, where
    that link leads nowhere, so no server started, anyone's ("Can't mkdir /home/<her>: No such
    file or directory"). The hub hands bubblewrap each home with its folders resolved
    (`homes.home_path`): the server starts, in its own home, and mallory's opened home is
    hidden."""
    data, links = tmp_path / "data" / "home", tmp_path / "home"
    for name in ("instructor", "mallory"):
        (data / name).mkdir(parents=True)
    links.symlink_to(data)  # absolute, as ln -s makes it
    (data / "mallory" / "nbgrader_config.py").write_text("print('hers')\n")
    (data / "mallory").chmod(0o755)
    course = [str(homes.home_path(links / name)) for name in ("instructor", "mallory")]
    instructor = homes.home_path(links / "instructor")
    before, after = homes.others_hidden(instructor, (), course)
    command = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    command += [*before, "--bind", str(instructor), str(instructor), *after, "--unshare-pid"]
    command += ["--chdir", str(instructor), "--", "sh", "-c"]
    command += [f"ls {links}/; cat {links}/mallory/*.py; touch x && pwd"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert run.stdout.split() == ["instructor", str(instructor)], (run.stdout, run.stderr)


PLAY_BIND_MOUNT = """
import shutil, subprocess, sys
from pathlib import Path
from grading.hub import homes
data, home = Path(sys.argv[1]), Path(sys.argv[2])
course = [str(home / name) for name in ("instructor", "mallory")]
instructor = home / "instructor"
before, after = homes.others_hidden(instructor, (), course)
command = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
command += [*before, "--bind", str(instructor), str(instructor), *after, "--unshare-pid"]
command += ["--chdir", str(instructor), "--", "sh", "-c"]
command += [f"ls {home}/; ls {data}/; cat {data}/mallory/*.py; touch x && pwd"]
print(subprocess.run(command, capture_output=True, text=True, timeout=60).stdout, end="")
"""


@pytest.mark.slow  # bubblewrap (tests/conftest.py's rule), though a second
@pytest.mark.skipif(not shutil.which("bwrap"), reason="the servers' sandbox is bubblewrap")
def test_a_folder_of_homes_reached_by_a_second_path_is_hidden_there_too(tmp_path):
    """The eighty-fourth hub tester's open row: a folder of homes that is a bind mount of
    another (`mount --bind /data/home /home`, as an fstab line makes it). `others_hidden` hid
    `/home` by path, and the instructor's server listed `instructor mallory` under
    `/data/home` and read mallory's opened `nbgrader_config.py` (`print('hers')`). Played in
    a mount namespace of the test's own (`unshare -m`: the bind mount is gone with it): now
    every other path of a hidden folder is hidden too (`homes.other_paths`, from
    /proc/self/mountinfo), and the server still starts and writes in its own home."""
    data, home = tmp_path / "data" / "home", tmp_path / "home"
    for name in ("instructor", "mallory"):
        (data / name).mkdir(parents=True)
    home.mkdir()
    (data / "mallory" / "nbgrader_config.py").write_text("print('hers')\n")
    (data / "mallory").chmod(0o755)
    unshare = ["unshare", "-m", "--propagation", "private"]
    if os.geteuid() != 0:
        unshare.insert(1, "-r")  # a user namespace of its own, where it may mount
    if subprocess.run([*unshare, "true"], capture_output=True).returncode:
        pytest.skip("no mount namespace of the test's own here")
    script = 'mount --bind "$1" "$2" && exec "$3" -c "$4" "$1" "$2"'
    run = subprocess.run(
        [*unshare, "sh", "-c", script, "sh", data, home, sys.executable, PLAY_BIND_MOUNT],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[1],
    )
    instructor = home / "instructor"
    assert run.stdout.split() == ["instructor", str(instructor)], (run.stdout, run.stderr)
