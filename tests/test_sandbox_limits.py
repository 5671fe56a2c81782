"""The limits of a graded sandbox come from one place, grading/nbgrader_config.py through
SandboxLimits (grading/host/sandbox.py): each described, the same for the worker's warm sandbox and
for SandboxedExecute, and a bad value refused by name. No sandbox is started here."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from traitlets import TraitError
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from grading.host import sandbox
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
