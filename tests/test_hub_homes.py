"""grading/hub/homes.py: a server sees its own home and no other, played with the servers'
bubblewrap options (no hub: a second)."""

import shutil
import subprocess

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
