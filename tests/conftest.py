"""Shared fixtures and helpers.

Fixtures: the SmolLM2 models are loaded once per test session (and converted from the GGUF file
first if the user's cache does not hold them yet): tests must not modify them.

Helpers that several test modules use are plain functions here, imported with
`from conftest import random_model, spec` (pytest puts tests/ on sys.path). A test module
imports no other test module (tests/test_imports.py): what several share is here or in a helper
module (tests/browsing.py, tests/formgrader_pages.py, tests/traps.py, tests/lib/parity_cases.py,
tests/lab_cases).

The `browser` fixture (below) is chromium for the browser tests.
"""

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# `make test-fast` is `pytest tests -m "not slow"`. Every test of these modules is marked slow:
# each starts a sandbox, a kernel, a Jupyter server, a hub or a browser (or runs nbgrader's
# pipeline, or takes minutes). A test elsewhere that starts one fails, naming what it started
# (`pytest_runtest_protocol` below): add its module here, or mark the test @pytest.mark.slow.
SLOW_MODULES = frozenset(
    {
        "test_book.py",
        "test_browser.py",
        "test_class_report.py",
        "test_exchange.py",
        "test_formgrader_browser.py",
        "test_grading_hostile.py",
        "test_jupyterhub.py",
        "test_lab_command.py",
        "test_labs.py",
        "test_lessons.py",
        "test_lessons_perturbed.py",
        "test_similarity.py",
        "test_student_edition.py",
        "test_warm_sandbox_neighbours.py",
    }
)


# `make test` runs this folder and strict nbval on the lessons in one pytest session on three
# workers (pytest-xdist, `--dist loadfile`): a work unit is a file, a test module or a lesson
# (nbval runs a lesson's cells in one kernel, in order). Units are handed out in collection
# order, one to a worker when it has two tests left, so a worker's last unit starts while the
# others still work: every unit of ten seconds or more is listed here, longest first (wall time
# of each on its worker, measured in a whole `make test` on 2 cores, 2026-12-06), and the rest,
# seconds each, follow in their usual order and even out the end. Left in collection order,
# the strict lessons came last (after tests/): T5 started last and ran alone for its final
# 30 s, on one core.
# (Finer units, such as one lab of test_labs.py, would need `--dist loadgroup`, which reads a
# group from the test's node id: pytest 9.2 no longer takes the id xdist 3.8 rewrites.)
LONGEST_FIRST = (
    "tests/test_lessons_perturbed.py",  # 671 s
    "tests/test_jupyterhub.py",  # 653 s, most of it waiting for servers
    "tests/test_labs.py",  # 575 s
    "tests/test_grading_hostile.py",  # 453 s
    "tests/test_class_report.py",  # 173 s
    "tests/test_browser.py",  # 144 s
    "tests/test_warm_sandbox_neighbours.py",  # 97 s
    "lessons/LM10-T6-porting-a-model.ipynb",  # 85 s
    "tests/lib/test_tinygpt.py",  # 79 s
    "tests/test_lab_command.py",  # 67 s
    "lessons/LM10-T5-kv-cache.ipynb",  # 66 s
    "tests/lib/test_pretrained.py",  # 58 s
    "tests/test_formgrader_browser.py",  # 48 s
    "lessons/LM10-T4-rmsnorm-swiglu-moe.ipynb",  # 41 s
    "tests/test_book.py",  # 41 s
    "lessons/LM10-T3-grouped-query-attention.ipynb",  # 37 s
    "tests/test_exchange.py",  # 36 s
    "tests/lib/test_fastdecode.py",  # 35 s
    "tests/test_lab_inputs.py",  # 30 s
    "lessons/LM10-T2-rotary-positions.ipynb",  # 20 s
    "tests/lib/test_slips.py",  # 20 s
    "tests/test_formgrader_page.py",  # 17 s
    "lessons/LM10-T7-architecture-zoo.ipynb",  # 14 s
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.is_relative_to(TESTS) and (
            item.path.relative_to(TESTS).as_posix() in SLOW_MODULES
        ):
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):  # an xdist worker; after pytest's own grouping by fixture
        rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
        root = TESTS.parent
        items.sort(key=lambda item: rank.get(item.path.relative_to(root).as_posix(), len(rank)))


def pytest_configure(config):
    """On a worker of `make test`, torch computes on one thread: three workers share two cores,
    and a worker's two threads waiting for each other's core cost more than they gain. Kernels,
    sandboxes and servers the tests start keep torch's default."""
    if hasattr(config, "workerinput"):
        import torch

        torch.set_num_threads(1)


# make targets that start a Jupyter server, a kernel, a sandbox or nbgrader's grading
_MAKE_STARTS = {"lab", "test", "test-perturbed", "notebooks", "autograde", "feedback", "book"}
_SERVERS = {"lab", "server", "notebook"}  # jupyter's subcommands that start a server


def starts(args) -> str | None:
    """What a command line starts that a fast test must not: a sandbox, a kernel, a Jupyter
    server or notebook run, nbgrader's grading, a hub or a browser; None for anything else."""
    argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
    argv = [os.fsdecode(a) for a in argv]
    if len(argv) == 1:  # a shell command line
        argv = argv[0].split()
    names = [Path(a).name for a in argv]

    def verb(program):  # the first word after the program's name that is not an option
        rest = argv[names.index(program) + 1 :]
        return next((a for a in rest if not a.startswith("-")), "")

    if "bwrap" in names:
        return "a sandbox (bubblewrap)"
    if {"ipykernel_launcher", "ipykernel"} & set(names):
        return "a kernel"
    if names and names[0].startswith(("chromium", "chrome", "headless_shell")):
        return "a browser"
    if "run-driver" in argv:
        return "a browser (Playwright's driver)"
    if {"jupyterhub", "configurable-http-proxy"} & set(names):
        return "a hub"
    if "--nbval" in argv or "--execute" in argv:
        return "a notebook run"
    if {"grading.batch.autograde", "grading.batch.workers"} & set(argv):
        return "a batch of sandboxed grading"
    if "nbgrader" in names and verb("nbgrader") in {"autograde", "validate", "generate_feedback"}:
        return f"nbgrader {verb('nbgrader')}"
    if names and names[0] in {f"jupyter-{s}" for s in _SERVERS}:
        return "a Jupyter server"
    if "jupyter" in names and verb("jupyter") in _SERVERS:
        return "a Jupyter server"
    if names[:1] == ["make"] and "-n" not in argv and _MAKE_STARTS & set(argv[1:]):
        return f"make {' '.join(sorted(_MAKE_STARTS & set(argv[1:])))}"
    return None


class StartedInAFastTest(RuntimeError):
    """A test outside SLOW_MODULES, not marked slow, started a sandbox, kernel, server, hub or
    browser."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Outside the slow tests, every process started from this one (its setup, call and
    teardown, module fixtures included) is refused if it is one that `starts` names."""
    if item.get_closest_marker("slow") or not item.path.is_relative_to(TESTS):
        yield  # a slow test, or a lesson's cell under strict nbval
        return
    original = subprocess.Popen.__init__

    def guarded(self, args, *rest, **options):
        what = starts(args)
        if what:
            raise StartedInAFastTest(
                f"{item.nodeid} starts {what} ({args!r}): a test that does is slow; add its "
                "module to SLOW_MODULES in tests/conftest.py or mark it @pytest.mark.slow, so "
                "that `make test-fast` leaves it to `make test`"
            )
        return original(self, args, *rest, **options)

    subprocess.Popen.__init__ = guarded
    try:
        yield
    finally:
        subprocess.Popen.__init__ = original


def spec(**changes):
    """A tiny Llama-style ModelSpec; keyword arguments override fields."""
    from lmcourse import ModelSpec

    base = dict(
        d=32,
        layers=2,
        vocab=64,
        heads=4,
        kv_heads=2,
        head_dim=8,
        ffn="swiglu",
        hidden=48,
        act="silu",
        norm="rms",
    )
    return ModelSpec(**(base | changes))


def random_model(s, seed: int = 0):
    """A DecoderLM of spec `s` in eval mode with large random weights (std 0.3) and norm scales
    away from one, so that a norm or scale applied in the wrong place shows."""
    import torch
    from lmcourse import DecoderLM

    torch.manual_seed(seed)
    model = DecoderLM(s).eval()
    model.reset_parameters(std=0.3)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn_like(p))
    return model


@functools.cache
def meta_model(name: str):
    """transformers' own model of the published config `name`, without memory (shapes only)."""
    import torch
    from lmcourse import configs
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(configs.load(name))


def turned_pairs(x, inv_freq, position):
    """x [head_dim] in the 'half' layout, pair i = (x[i], x[i + dim/2]) turned by position *
    inv_freq[i] with a 2x2 rotation: [pairs, 2]. Written independently of lmcourse's rope."""
    import torch

    half = x.shape[0] // 2
    a, b = x[:half].double(), x[half:].double()
    angle = position * inv_freq.double()
    return torch.stack((a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()), -1)


def decoder_blocks(model):
    """The decoder blocks of a transformers causal LM (GPT-2 calls them `h`, OPT nests them)."""
    base = model.base_model
    base = base.decoder if hasattr(base, "decoder") else base
    return base.layers if hasattr(base, "layers") else base.h


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """The SmolLM2 tokenizer."""
    from lmcourse.pretrained import load_tokenizer

    return load_tokenizer()


@pytest.fixture(scope="session")
def smollm2_hf():
    """transformers' LlamaForCausalLM with the real SmolLM2-135M-Instruct weights (read only)."""
    from lmcourse.pretrained import load_smollm2_transformers

    return load_smollm2_transformers()


@pytest.fixture(scope="session")
def smollm2(smollm2_hf):
    """The course's DecoderLM with the same weights as `smollm2_hf` (read only)."""
    from lmcourse import from_transformers

    return from_transformers(smollm2_hf).eval()


@pytest.fixture(scope="session")
def sandbox_installed():
    """CI (.ci/run sets LM10_REQUIRE_SANDBOX=1) must have bubblewrap; elsewhere, skip loudly."""
    if shutil.which("bwrap") is None:
        message = "bubblewrap is not installed: apt-get install bubblewrap (.ci/run does)"
        if os.environ.get("LM10_REQUIRE_SANDBOX") == "1":
            pytest.fail(message)
        pytest.skip(message)


def make_gradebook():
    """`make gradebook` in this repository (every lab in its gradebook and released into
    grading/exchange, as `make lab` does first), one test at a time: test_browser and
    test_lab_command both run it, and under `make test` they may run at once on two workers,
    two nbgraders writing the same gradebook and exchange (a clean clone's run 39: `make
    gradebook` exited 2 in test_browser). A lock on a file outside the tree waits for the
    other; the second then finds the stamp up to date. make's own output is in the error."""
    import fcntl
    import hashlib
    import tempfile

    root = TESTS.parent
    name = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"lm10-gradebook-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(
            ["make", "--no-print-directory", "gradebook"], cwd=root, capture_output=True, text=True
        )
    said = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0, f"make gradebook failed:\n{said}"


@pytest.fixture(scope="module")
def browser():
    """CI (.ci/run sets LM10_REQUIRE_BROWSER=1) must have chromium; elsewhere, skip loudly."""
    from browsing import CHROMIUM, CHROMIUM_ARGS

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None or not CHROMIUM.exists():
        message = (
            "the browser test needs Debian's chromium (apt-get install chromium; .ci/run "
            "does) and Playwright for Python (the dev extras)"
        )
        if os.environ.get("LM10_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
