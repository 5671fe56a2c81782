"""The limits of a graded sandbox come from one place, grading/nbgrader_config.py through
SandboxLimits (grading/host/sandbox.py): each described, the same for the worker's warm sandbox and
for SandboxedExecute, and a bad value refused by name. No sandbox is started here."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
from traitlets import TraitError
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from grading.host import sandbox, tmpfs
from grading.host.course_preprocessors import SandboxedExecute

GRADING = Path(__file__).resolve().parents[1] / "grading"
LIMITS = [f.name for f in dataclasses.fields(sandbox.Limits) if f.name != "room"]


def course_config(monkeypatch, **limits):
    """grading/nbgrader_config.py as nbgrader reads it, with `limits` set on top."""
    monkeypatch.setenv("JUPYTER_PATH", os.environ.get("JUPYTER_PATH", ""))  # it adds to it
    config = PyFileConfigLoader("nbgrader_config.py", path=str(GRADING)).load_config()
    for name, value in limits.items():
        setattr(config.SandboxLimits, name, value)
    return config


def test_every_limit_is_configurable_and_described():
    traits = sandbox.SandboxLimits.class_traits(config=True)
    assert sorted(traits) == sorted(LIMITS)
    for name in LIMITS:
        assert len(traits[name].help) > 20, f"{name} is not described"
        assert traits[name].default_value == getattr(sandbox.Limits(), name)
    assert sandbox.SandboxLimits().limits() == sandbox.Limits()
    assert sandbox.SandboxLimits().limits(room=True) == sandbox.Limits(room=True)


def test_the_course_configuration_reaches_the_warm_sandbox_and_the_grader_alike(monkeypatch):
    changed = {"output_chars": 500, "memory_bytes": 6 << 30, "processes": 300}
    config = course_config(monkeypatch, **changed)
    warm = sandbox.SandboxLimits(config=config).limits()  # what workers.serve warms with
    grader = SandboxedExecute(config=config)
    assert grader.output_chars == 500
    assert warm == sandbox.Limits(**changed)
    assert sandbox.SandboxLimits(config=course_config(monkeypatch)).limits() == sandbox.Limits()


def test_differences_name_every_limit_that_differs():
    a, b = sandbox.Limits(), sandbox.Limits(output_chars=500, room=True)
    assert sandbox.differences(a, b) == "output_chars 20000 -> 500, room False -> True"
    assert sandbox.differences(a, sandbox.Limits()) == ""


@pytest.mark.parametrize("name", LIMITS)
def test_a_limit_below_one_is_refused_by_name(name):
    with pytest.raises(TraitError, match=name):
        sandbox.SandboxLimits(config=Config({"SandboxLimits": {name: 0}}))


WRITABLE = ("/dev/shm", "/tmp", "/home/student")


def writable_folders(command):
    """{writable folder of the sandbox: the bubblewrap option that makes it}"""
    made = {}
    for i, word in enumerate(command):
        target = {"--bind": i + 2, "--tmpfs": i + 1}.get(word)
        if target is not None and command[target] in WRITABLE:
            made[command[target]] = word
    return made


def test_the_folders_file_cap_is_the_launchers_or_its_absence_is_said(monkeypatch, caplog):
    """Where the launcher can mount (grading/host/tmpfs.py), bubblewrap binds its capped
    folders and runs after it; where it cannot, bubblewrap makes its own, capped in bytes only,
    and the instructor's log says so once, with the reason. Nothing is started here."""
    limits = sandbox.Limits(home_bytes=8 << 20, files=123)
    monkeypatch.setattr(tmpfs, "_problem", "")
    command = sandbox.bwrap_command("/usr/bin/bwrap", limits)
    start = command.index("/usr/bin/bwrap")
    assert command[:start] == tmpfs.launcher(
        tmpfs.staging(("shm", "tmp", "home")).values(), 8 << 20, 123
    )
    assert writable_folders(command) == dict.fromkeys(WRITABLE, "--bind")

    monkeypatch.setattr(tmpfs, "_problem", "capped folders: Operation not permitted")
    monkeypatch.setattr(sandbox, "_said", set())
    with caplog.at_level("WARNING", logger=sandbox.log.name):
        for _ in range(2):
            command = sandbox.bwrap_command("/usr/bin/bwrap", limits)
    assert command[0] == "/usr/bin/bwrap"
    assert writable_folders(command) == dict.fromkeys(WRITABLE, "--tmpfs")
    assert command.count(str(8 << 20)) == 3
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "not in files" in said[0] and "Operation not permitted" in said[0]


def test_the_kernel_keeps_the_graders_thread_settings_and_nothing_else(monkeypatch):
    """The sandbox's environment is cleared; torch's thread count and how its idle threads wait
    are the grader's (a spinning thread burns a busy machine's cores), and nothing else of the
    grader's environment passes. Nothing is started here."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.setenv("LM10_GRADERS_OWN", "gradebook.db")
    command = sandbox.bwrap_command("/usr/bin/bwrap", sandbox.Limits())
    given = {command[i + 1]: command[i + 2] for i, a in enumerate(command) if a == "--setenv"}
    assert {k: given.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")} == {
        "OMP_NUM_THREADS": "1",
        "OMP_WAIT_POLICY": "PASSIVE",
    }, given
    assert "--clearenv" in command and "LM10_GRADERS_OWN" not in given, given


def test_what_a_killed_grader_left_is_swept_and_a_live_graders_is_kept(monkeypatch, tmp_path):
    """A grader killed before its clean-up leaves a home, a staging folder or the room's
    stand-ins in the temporary folder; the next batch removes those whose grader is gone
    (sweep_homes) and keeps those of a grader that still runs, the room's included (it was
    named without the grader's process number, so a dead grader's could never be told apart)."""
    monkeypatch.setattr(sandbox.tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    made = {}
    for what in sandbox.LEFTOVERS:
        for grader, pid in (("dead", dead.pid), ("alive", os.getpid())):
            made[what, grader] = tmp_path / f"lm10-{what}-{pid}-x1"
            (made[what, grader] / "inside").mkdir(parents=True)
    monkeypatch.setattr(sandbox, "_stand_ins", None)
    stand_ins = sandbox.room_stand_ins()  # this process's, made in tmp_path: alive
    sandbox.sweep_homes()
    assert {key: path.exists() for key, path in made.items()} == {
        key: key[1] == "alive" for key in made
    }
    assert all(path.is_dir() for path in stand_ins.values())
    assert next(iter(stand_ins.values())).parent.name.startswith(f"lm10-room-{os.getpid()}-")
