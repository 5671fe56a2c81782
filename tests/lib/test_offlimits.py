"""lmcourse.offlimits: what a lab's test compares against is out of the student's code's reach."""

import sys
import threading

import pytest
import torch
import torch.nn.functional as F
from lmcourse import offlimits

CELL = offlimits._cell_prefixes()[-1]  # notebook cells compile under file names like this one


def cell(source, name, namespace):
    """Run `source` as the notebook cell compiled under file `name`."""
    exec(compile(source, name, "exec"), namespace)
    return namespace


@pytest.fixture
def notebook():
    """A notebook's namespace: a setup cell with a reference and an allowed helper, an answer
    cell of the student's, and the file name of the running test cell."""
    namespace = {"torch": torch, "F": F}
    setup = (
        "def reference(x):\n"
        "    return F.layer_norm(x, x.shape[-1:])\n"
        "def helper(x):\n"
        "    return F.layer_norm(x, x.shape[-1:])\n"
    )
    answers = (
        "def direct(x):\n"
        "    return F.layer_norm(x, x.shape[-1:])\n"
        "def builtin(x):\n"
        "    return torch.layer_norm(x, x.shape[-1:])\n"
        "def through_module(x):\n"
        "    return torch.nn.LayerNorm(x.shape[-1])(x)\n"
        "def by_name(x):\n"
        "    return reference(x)\n"
        "def through_helper(x):\n"
        "    return helper(x)\n"
        "def swallowed(x):\n"
        "    try:\n"
        "        return reference(x)\n"
        "    except Exception:\n"
        "        return x\n"
        "def by_hand(x):\n"
        "    mean = x.mean(-1, keepdim=True)\n"
        "    return (x - mean) / ((x - mean).pow(2).mean(-1, keepdim=True) + 1e-5).sqrt()\n"
    )
    cell(setup, CELL + "setup.py", namespace)
    cell(answers, CELL + "answer.py", namespace)
    return namespace


NAMES = ["torch.nn.functional.layer_norm", "torch.layer_norm", "reference"]


def call(namespace, function, test_file=None):
    guard = offlimits.Guard(NAMES, namespace, test_file=test_file)
    with guard:
        try:
            namespace[function](torch.randn(2, 4))
            error = None
        except offlimits.OffLimitsError as caught:
            error = str(caught)
    return guard.fired, error


@pytest.mark.parametrize(
    ("function", "fired"),
    [
        ("direct", "torch.nn.functional.layer_norm"),
        ("builtin", "torch.layer_norm"),
        ("through_module", "torch.nn.functional.layer_norm"),
        ("by_name", "reference"),
        ("through_helper", "torch.nn.functional.layer_norm"),  # a helper not declared is theirs
    ],
)
def test_the_students_code_calling_a_reference_is_stopped_and_named(notebook, function, fired):
    names, error = call(notebook, function)
    assert names == [fired]
    assert error == offlimits.message(fired) and "write it yourself" in error


def test_a_reference_the_student_catches_is_still_reported(notebook):
    names, error = call(notebook, "swallowed")
    assert names == ["reference"] and error is None


def test_code_written_by_hand_and_the_tests_own_references_run(notebook):
    assert call(notebook, "by_hand") == ([], None)
    test = CELL + "test.py"
    cell("expected = reference(torch.randn(3))\nmine = by_hand(torch.randn(3))\n", test, notebook)
    guard = offlimits.Guard(NAMES, notebook, test_file=test)
    with guard:  # the test cell's reference, and the declared setup helper it calls, may run
        cell("expected = reference(torch.randn(3))\n", test, notebook)
        assert F.layer_norm(torch.ones(2), (2,)).shape == (2,)  # library code, no cell
    assert guard.fired == []


def test_a_module_is_off_limits_as_a_whole():
    namespace = cell(
        "import lmcourse\ndef count(c):\n    return lmcourse.describe(c)['total']\n",
        CELL + "module.py",
        {},
    )
    guard = offlimits.Guard(["lmcourse.count"], namespace)
    with guard, pytest.raises(offlimits.OffLimitsError, match="lmcourse.count is off limits"):
        namespace["count"]("SmolLM2-135M")
    assert guard.fired == ["lmcourse.count"]


def test_declarations_are_read_from_comment_lines_only():
    source = (
        "# Tests for f (locked).\n"
        "# Off limits while graded: torch.layer_norm, `reference`\n"
        "#   Off limits while graded: reference, lmcourse.count\n"
        "x = '# Off limits while graded: not_a_declaration'\n"
    )
    assert offlimits.declared(source) == ["torch.layer_norm", "reference", "lmcourse.count"]
    assert offlimits.declared("assert f(1) == 2\n") == []


def test_a_name_that_stands_for_nothing_is_a_clear_error():
    with pytest.raises(LookupError, match="'no_such_reference' names no module"):
        offlimits.Guard(["no_such_reference"], {})
    with pytest.raises(LookupError, match="is no function, class or module"):
        offlimits.Guard(["answer"], {"answer": 42})


def test_switching_the_guard_off_is_stopped_too():
    namespace = cell(
        "import sys\ndef unguard(x):\n    sys.setprofile(None)\n", CELL + "evasion.py", {}
    )
    guard = offlimits.Guard([], namespace)
    with guard, pytest.raises(offlimits.OffLimitsError, match="switch off"):
        namespace["unguard"](None)
    assert guard.fired == ["sys.setprofile"]


THREADS = (
    "import threading\n"
    "from tqdm.auto import tqdm\n"
    "def progress(x):\n"
    "    return sum(tqdm([1.0, 2.0], mininterval=0)) * x\n"
    "def in_a_thread(x):\n"
    "    out = []\n"
    "    worker = threading.Thread(target=lambda: out.append(F.layer_norm(x, x.shape[-1:])))\n"
    "    worker.start()\n"
    "    worker.join()\n"
    "    return out[0] if out else x\n"
)


def test_a_thread_is_no_offence_and_runs_under_the_same_guard():
    """A progress bar (tqdm starts a monitor thread) keeps its answer; a thread the student's
    code starts during the call is guarded as the call is: its forbidden call is reported."""
    namespace = cell(THREADS, CELL + "threads.py", {"F": F})
    guard = offlimits.Guard(["torch normalisation layers"], namespace)
    with guard:
        assert namespace["progress"](torch.ones(2)).tolist() == [3.0, 3.0]
    assert guard.fired == []
    guard = offlimits.Guard(["torch normalisation layers"], namespace)
    raised = []  # the thread's own error, as a student's thread would meet it
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_type))
        with guard:
            namespace["in_a_thread"](torch.randn(2, 4))
    assert guard.fired == ["torch normalisation layers"]
    assert raised == [offlimits.OffLimitsError]


ROUTES = {  # every route torch offers to a normalisation layer
    "functional": "F.layer_norm(x, x.shape[-1:])",
    "builtin": "torch.layer_norm(x, x.shape[-1:])",
    "native": "torch.native_layer_norm(x, x.shape[-1:], None, None, 1e-5)[0]",
    "operator": "torch.ops.aten.native_layer_norm(x, [x.shape[-1]], None, None, 1e-5)[0]",
    "module": "torch.nn.LayerNorm(x.shape[-1])(x)",
    "rms": "F.rms_norm(x, x.shape[-1:])",
    "rms_operator": "torch.ops.aten.rms_norm(x, [x.shape[-1]])",
    "rms_module": "torch.nn.RMSNorm(x.shape[-1])(x)",
    "group": "F.group_norm(x[None], 1)[0]",
    "instance": "F.instance_norm(x[None])[0]",
    "batch": "F.batch_norm(x.T, None, None, training=True).T",
    "group_builtin": "torch.group_norm(x[None], 1)[0]",
    "fused_encoder": (  # an encoder layer with zero attention: x + ffn(layer_norm(x))
        "torch._transformer_encoder_layer_fwd(x[None], 4, 1, torch.zeros(12, 4), torch.zeros(12),"
        " torch.zeros(4, 4), torch.zeros(4), False, True, 1e-5, torch.ones(4), torch.zeros(4),"
        " torch.ones(4), torch.zeros(4), torch.eye(4), torch.zeros(4), torch.eye(4),"
        " torch.zeros(4), None, None)[0] - x"
    ),
    "torchscript": "torch.jit.CompilationUnit(SCRIPT).rms(x, torch.ones(x.shape[-1]), 1e-6)",
    "references": "torch._refs.native_layer_norm(x, x.shape[-1:], None, None, 1e-5)[0]",
    "decompositions": "torch._decomp.decompositions._fused_rms_norm(x, [4], None, 1e-6)[0]",
}


SCRIPT = """
def rms(x, w, eps: float):
    return torch.rms_norm(x, [x.size(-1)], w, eps)
"""


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_family_is_stopped_by_every_route_torch_offers(route):
    import torch._decomp.decompositions  # noqa: F401 (the routes reach these modules)
    import torch._refs  # noqa: F401

    namespace = cell(
        f"def answer(x):\n    return {ROUTES[route]}\n",
        CELL + f"{route}.py",
        {"torch": torch, "F": F, "SCRIPT": SCRIPT},
    )
    guard = offlimits.Guard(["torch normalisation layers"], namespace)
    with guard, pytest.raises(offlimits.OffLimitsError, match="normalisation layers are off"):
        namespace["answer"](torch.randn(3, 4))
    assert guard.fired == ["torch normalisation layers"]


def test_a_family_leaves_vector_norms_and_the_tests_own_references_alone():
    namespace = cell(
        "def by_norm(x):\n    return x / (x.norm(dim=-1, keepdim=True) / x.shape[-1] ** 0.5)\n",
        CELL + "vector.py",
        {},
    )
    test = CELL + "family_test.py"
    guard = offlimits.Guard(["torch normalisation layers"], namespace, test_file=test)
    with guard:
        namespace["by_norm"](torch.randn(3, 4))
        cell("expected = torch.nn.RMSNorm(4)(torch.randn(3, 4))\n", test, {"torch": torch})
    assert guard.fired == []


AGENT = """
def answer(guard, target, args):
    with guard:
        return target(*args)


def dispatch(target, args):
    return target(*args)
"""


def test_under_the_agent_nothing_beneath_it_passes_for_the_tests_side(tmp_path):
    """In the sandbox the agent arms the guard around one call of the student's code: a norm
    reached through the agent's own functions again (a student's code may import it), or an
    answer that *is* torch's function, with no notebook frame between it and the agent, is
    still the student's; an honest answer passes."""
    agent_file = str(tmp_path / "agent.py")
    agent = cell(AGENT, agent_file, {})
    namespace = cell(
        "def through_agent(x):\n"
        "    out = []\n"
        "    dispatch(out.extend, (map(F.layer_norm, [x], [x.shape[-1:]]),))\n"
        "    return out[0]\n"
        "def by_hand(x):\n"
        "    return (x - x.mean(-1, keepdim=True)) / x.std(-1, correction=0, keepdim=True)\n",
        CELL + "agent_answers.py",
        {"F": F, "dispatch": agent["dispatch"]},
    )
    x = torch.randn(3, 4)
    for target, args in (
        (namespace["through_agent"], (x,)),
        (F.layer_norm, (x, (4,))),
        (torch.layer_norm, (x, (4,))),
    ):
        guard = offlimits.Guard(["torch normalisation layers"], namespace, boundary=(agent_file,))
        with pytest.raises(offlimits.OffLimitsError, match="normalisation layers are off"):
            agent["answer"](guard, target, args)
        assert guard.fired == ["torch normalisation layers"], target
    guard = offlimits.Guard(["torch normalisation layers"], namespace, boundary=(agent_file,))
    agent["answer"](guard, namespace["by_hand"], (x,))
    assert guard.fired == []


# Her callables that torch runs beneath a call its function mode passed on (a tensor's hook,
# run by backward; a function Tensor.apply_ maps): the reference itself, or a partial of it,
# with no notebook frame between it and the mode's own frame (the thirty-fourth hub tester).
BENEATH = {
    "hook_functional": "leaf.register_hook(functools.partial(F.layer_norm, normalized_shape=(4,)))",
    "hook_builtin": "leaf.register_hook(functools.partial(torch.layer_norm, normalized_shape=[4]))",
    "hook_reference": "leaf.register_hook(reference)",
}


@pytest.mark.parametrize("route", sorted(BENEATH) + ["apply"])
def test_what_torch_runs_for_her_beneath_the_guards_mode_is_still_hers(tmp_path, route):
    """The guard's function mode passes each torch call on from a frame of its own file, and the
    guard took every call beneath such a frame for the guard's own: her f that hung a
    reference (or a partial of one) on a tensor as a hook and called backward, or mapped one
    with Tensor.apply_, ran it unguarded, nothing flagged (the thirty-fourth hub tester)."""
    import functools

    agent_file = str(tmp_path / "agent.py")
    agent = cell(AGENT, agent_file, {})
    namespace = cell(
        "def reference(x):\n    return 2 * x\n", CELL + "beneath_setup.py", {"torch": torch}
    )
    body = (
        "    return torch.tensor([1.0, 2.0]).apply_(reference)\n"
        if route == "apply"
        else "    leaf = torch.zeros(4, requires_grad=True)\n"
        f"    {BENEATH[route]}\n"
        "    (leaf * x).sum().backward()\n"
        "    return leaf.grad\n"
    )
    namespace.update(functools=functools, F=F)
    cell(f"def f(x):\n{body}", CELL + "beneath_answer.py", namespace)
    guard = offlimits.Guard(
        ["torch normalisation layers", "reference"], namespace, boundary=(agent_file,)
    )
    with pytest.raises(offlimits.OffLimitsError):
        agent["answer"](guard, namespace["f"], (torch.tensor([1.0, 2.0, 3.0, 5.0]),))
    assert guard.fired in (["torch normalisation layers"], ["reference"]), guard.fired


def test_a_thread_started_before_the_guard_runs_under_it_too():
    """threading.setprofile reaches threads started later only: a thread already running (a
    library's, tqdm's monitor, which runs her code) called a reference unseen (the
    thirty-fourth hub tester). The guard hooks every thread while it is armed, and no longer
    after; a thread that ends meanwhile is no trouble."""
    namespace = cell(
        "import operator, threading\n"
        "jobs, done, go = [], [], threading.Event()\n"
        "def work():\n"
        "    go.wait()\n"
        "    done.append(operator.mul(2, jobs.pop()))\n"
        "def f(x):\n"
        "    jobs.append(x)\n"
        "    go.set()\n"
        "    worker.join()\n"
        "    return done.pop()\n"
        "worker = threading.Thread(target=work)\n"
        "brief = threading.Thread(target=go.wait)\n",
        CELL + "earlier_thread.py",
        {},
    )
    namespace["worker"].start()
    namespace["brief"].start()  # ends while the guard is armed
    guard = offlimits.Guard(["operator.mul"], namespace)
    with guard:
        assert namespace["f"](3) == 6  # the thread's own error is not raised there: recorded
    assert guard.fired == ["operator.mul"]
    namespace["brief"].join()
    assert guard.others == ()


def test_an_honest_call_that_reaches_torchs_dispatch_alone_is_not_stopped(tmp_path):
    """torch wraps a dispatch mode's __torch_dispatch__ in its lazy `_disable_dynamo`, which runs
    torch._dynamo's `disable` (a family's route) at the first operator each new mode sees: from
    her frame where no function-mode call was between (torch.manual_seed), her honest answer
    was stopped, 0 for the part (the thirty-fourth hub tester). The guard's own dispatch mode
    is not wrapped."""
    agent_file = str(tmp_path / "agent.py")
    agent = cell(AGENT, agent_file, {})
    namespace = cell(
        "def seeded(x):\n    torch.manual_seed(0)\n    return x * 2\n",
        CELL + "seeded.py",
        {"torch": torch},
    )
    for _ in range(3):
        guard = offlimits.Guard(["torch normalisation layers"], namespace, boundary=(agent_file,))
        agent["answer"](guard, namespace["seeded"], (torch.ones(2),))
        assert guard.fired == []


# Once torch._dynamo is imported (the sandbox's warm start imports it; here, any test before that
# compiled), torch.manual_seed is wrapped in torch's lazy `_disable_dynamo`, whose every call runs
# torch._dynamo's code, a family's route: an honest seed in her answer was stopped there, and the
# test above passed or failed by which tests ran before it in the process.
DISABLED = {
    "an honest seed": ("torch.manual_seed(0)\nreturn x * 2", []),
    "a reference wrapped": (
        "return torch._disable_dynamo(torch.nn.functional.layer_norm)(x, (2,))",
        ["torch normalisation layers"],
    ),
    "a partial of a reference wrapped": (
        "import functools\n"
        "f = functools.partial(torch.nn.functional.layer_norm, normalized_shape=(2,))\n"
        "return torch._disable_dynamo(f)(x)",
        ["torch normalisation layers"],
    ),
    "her function wrapped": (
        "def mine(y):\n    return torch.nn.functional.layer_norm(y, (2,))\n"
        "return torch._disable_dynamo(mine)(x)",
        ["torch normalisation layers"],
    ),
    "a compiled reference wrapped": (
        "return torch._disable_dynamo(torch.compile(torch.nn.functional.layer_norm))(x, (2,))",
        ["torch normalisation layers"],
    ),
    # TorchScript runs rms_norm past both modes: only the wrapped function's check stops it
    "a TorchScript reference wrapped": (
        "return torch._disable_dynamo(script.g)(x)",
        ["torch normalisation layers"],
    ),
}
TORCHSCRIPT = (
    "script = torch.jit.CompilationUnit('def g(x):\\n    return torch.rms_norm(x, [2])\\n')\n"
)


@pytest.mark.parametrize("body", DISABLED, ids=list(DISABLED))
def test_torchs_disable_wrapper_passes_what_it_wraps_and_nothing_more(tmp_path, body):
    import torch._dynamo  # noqa: F401 (as the sandbox's warm start does)

    source, fired = DISABLED[body]
    agent_file = str(tmp_path / "agent.py")
    agent = cell(AGENT, agent_file, {})
    indented = "".join(f"    {line}\n" for line in source.splitlines())
    namespace = cell(f"{TORCHSCRIPT}def f(x):\n{indented}", CELL + "disabled.py", {"torch": torch})
    for _ in range(2):  # the wrapper's first call (it builds torch's disable) and a later one
        guard = offlimits.Guard(["torch normalisation layers"], namespace, boundary=(agent_file,))
        if fired:
            with pytest.raises(offlimits.OffLimitsError):
                agent["answer"](guard, namespace["f"], (torch.ones(2),))
        else:
            agent["answer"](guard, namespace["f"], (torch.ones(2),))
        assert guard.fired == fired


# What torch's lazy `_disable_dynamo` wrapper calls is its function's `__dynamo_disable`
# attribute, hers to set: a decomposition of torch's (the public
# torch.export.default_decompositions() holds them), set on torch.random.manual_seed, computed
# rms_norm beneath torch.manual_seed, passed as the wrapper's own work, nothing flagged (the
# thirty-fifth hub tester). Set by the answer cell, before the call; each is run twice.
FORGED_DISABLE = {
    "a decomposition": "dec",
    "torch's disable of a decomposition": "torch.compiler.disable(dec)",
    "her function pointing at one": "mine",
}


FAMILY = ["torch normalisation layers"]


@pytest.mark.parametrize("value", FORGED_DISABLE, ids=list(FORGED_DISABLE))
def test_a_disable_wrapper_she_set_on_torchs_function_is_not_passed(tmp_path, value):
    import torch._dynamo  # noqa: F401 (as the sandbox's warm start does)

    agent_file = str(tmp_path / "agent.py")
    agent = cell(AGENT, agent_file, {})
    seed = torch.random.manual_seed
    before = seed.__dict__.get("__dynamo_disable")
    try:
        namespace = cell(
            "table = torch.export.default_decompositions()\n"
            "dec = [v for k, v in table.items() if str(k) == 'aten._fused_rms_norm.default'][0]\n"
            "def mine(*args):\n    return dec(*args)\n"
            "mine._torchdynamo_orig_callable = dec\n"
            "seed = torch.random.manual_seed\n"
            f"seed.__dynamo_disable = {FORGED_DISABLE[value]}\n"
            "def f(x):\n    return torch.manual_seed(x, [2], None, 1e-6)[0]\n",
            CELL + "forged_disable.py",
            {"torch": torch},
        )
        for _ in range(2):
            guard = offlimits.Guard(FAMILY, namespace, boundary=(agent_file,))
            with pytest.raises(offlimits.OffLimitsError):
                agent["answer"](guard, namespace["f"], (torch.tensor([1.0, 3.0]),))
            assert guard.fired == ["torch normalisation layers"]
    finally:
        if before is None:
            seed.__dict__.pop("__dynamo_disable", None)
        else:
            seed.__dict__["__dynamo_disable"] = before
    guard = offlimits.Guard(FAMILY, namespace, boundary=(agent_file,))
    honest = cell("def g(x):\n    torch.manual_seed(0)\n    return x\n", CELL + "g.py", namespace)
    agent["answer"](guard, honest["g"], (torch.ones(2),))
    assert guard.fired == []


# torch's own decomposition of the fused rms_norm (a file of the family's routes), hung on a
# grad_fn of two outputs as its pre-hook: backward, a call the guard's mode passed on, runs it
# on her rows and hands its two values (the norm and its rstd) on as the node's gradients.
ROUTE_AS_HOOK = (
    "table = torch.export.default_decompositions()\n"
    "dec = [v for k, v in table.items() if str(k) == 'aten._fused_rms_norm.default'][0]\n"
    "def f(x):\n"
    "    n = x.shape[-1]\n"
    "    rows = x.reshape(-1, 1, n)\n"
    "    leaf = torch.zeros(rows.shape[0], 1, n + 1, requires_grad=True)\n"
    "    a, b = leaf.split([n, 1], dim=-1)\n"
    "    a.grad_fn.register_prehook(functools.partial(dec, rows, weight=None, eps=1e-6))\n"
    "    (a.sum() + b.sum()).backward()\n"
    "    return leaf.grad[..., :n].reshape(x.shape)\n"
)


def test_torchs_own_route_code_hung_as_her_hook_is_hers(tmp_path):
    """Beneath a call the guard's modes passed on, torch's own code of a family's routes
    passed, whoever chose to run it there: a decomposition of rms_norm hung as a grad_fn's
    pre-hook computed the norm for her, nothing fired (the thirty-fifth hub tester)."""
    import functools

    import torch._dynamo  # noqa: F401 (as the sandbox's warm start does)

    agent_file = str(tmp_path / "agent.py")
    agent = cell(AGENT, agent_file, {})
    namespace = cell(ROUTE_AS_HOOK, CELL + "hook.py", {"torch": torch, "functools": functools})
    x = torch.tensor([1.0, 2.0, 3.0, 5.0])
    guard = offlimits.Guard(FAMILY, namespace, boundary=(agent_file,))
    with pytest.raises(offlimits.OffLimitsError):
        agent["answer"](guard, namespace["f"], (x,))
    assert guard.fired == FAMILY
    assert torch.allclose(namespace["f"](x), torch.rms_norm(x, [4], eps=1e-6))  # unguarded


# Her code recurses to Python's limit, then calls the reference on the way back up.
DEEP = (
    "def deep(x):\n"
    "    try:\n"
    "        r = deep(x)\n"
    "    except BaseException:\n"
    "        r = None\n"
    "    if r is None:\n"
    "        try:\n"
    "            r = operator.mul(2, x)\n"
    "        except BaseException:\n"
    "            r = None\n"
    "    return r\n"
)


def test_a_thread_whose_hook_could_not_run_counts_as_the_guard_lost():
    """A thread hooked through the C API that recursed to the limit let the call of a
    reference through unseen, nothing fired, `lost` False (the thirty-fifth hub tester): an
    event its hook could not judge counts as the guard lost now."""
    namespace = cell(
        "import operator, threading\n"
        "done, go = [], threading.Event()\n" + DEEP + "def work():\n"
        "    go.wait()\n"
        "    done.append(deep(3))\n"
        "def f():\n"
        "    go.set()\n"
        "    worker.join()\n"
        "    return done.pop()\n"
        "worker = threading.Thread(target=work)\n",
        CELL + "deep_thread.py",
        {},
    )
    namespace["worker"].start()
    guard = offlimits.Guard(["operator.mul"], namespace)
    with guard:
        assert namespace["f"]() == 6
    assert guard.lost


def test_a_thread_started_during_the_call_whose_hook_could_not_run_counts_as_lost():
    """The same in a thread started while the guard is armed (threading.setprofile): CPython
    unset the hook there when it raised at the recursion limit, and the guard never knew."""
    namespace = cell(
        "import operator, threading\n"
        "done = []\n" + DEEP + "def f():\n"
        "    worker = threading.Thread(target=lambda: done.append(deep(3)))\n"
        "    worker.start()\n"
        "    worker.join()\n"
        "    return done.pop()\n",
        CELL + "deep_new_thread.py",
        {},
    )
    guard = offlimits.Guard(["operator.mul"], namespace)
    with guard:
        assert namespace["f"]() == 6
    assert guard.lost


def test_a_program_run_during_the_call_counts_as_the_guard_lost():
    """The thirty-ninth hub tester's: her f ran a python (torch.utils.collect_env's run, a
    shell whose output it returns) that computed the reference, unguarded."""
    import subprocess

    guard = offlimits.Guard(["operator.mul"], {})
    with guard:
        subprocess.run(["true"], check=True)
    assert guard.lost
    with offlimits.Guard(["operator.mul"], {}) as quiet:
        sum([1, 2])
    assert not quiet.lost


def test_a_program_run_during_the_call_is_named_as_one():
    """The fortieth's open row (the seventy-eighth hub tester): an honest torch.compile whose
    first compilation falls in a graded call runs inductor's C++ compiler, a program, and the
    stop named sys.setprofile, as if she had switched the guard off. It names a program now;
    a guard lost otherwise (her hook unset) is still sys.setprofile's."""
    import subprocess

    guard = offlimits.Guard(["operator.mul"], {})
    with guard:
        subprocess.run(["true"], check=True)
    assert guard.lost and guard.lost_as == offlimits.PROGRAM
    assert "a program it started then" in offlimits.message(guard.lost_as)
    assert offlimits.PROGRAM in offlimits.STOPS
    unset = offlimits.Guard(["operator.mul"], {})
    with unset:
        sys.setprofile(None)
    assert unset.lost and unset.lost_as == "sys.setprofile"


def test_in_the_sandbox_every_process_but_the_kernels_ancestors_is_hers(monkeypatch):
    """The sandbox's /proc, as _others_alive reads it: the kernel (7) and its ancestors (6, 5,
    1) are the grader's; a process of hers beside them (a python her answer cell left running,
    reparented to 1 once its starter exited: the guard's check of the kernel's own children
    missed it) counts as alive unless a zombie; one unreadable counts as alive. A guard armed
    `alone` there is lost as PROGRAM; one that is not (Validate, her own machine) never looks."""
    stats = {
        "1": b"1 (python) S 0",
        "5": b"5 (python) S 1",
        "6": b"6 (a) b) S 5",  # a name with a parenthesis and a space in it
        "7": b"7 (python) R 6",
    }
    monkeypatch.setattr(offlimits, "_READLINK", lambda path: "7")
    monkeypatch.setattr(offlimits, "_LISTDIR", lambda path: [*stats, "self", "sys"])
    monkeypatch.setattr(offlimits, "_read", lambda path: stats.get(path.split("/")[2], b""))
    assert offlimits._others_alive() is False
    stats["9"] = b"9 (python) S 1"
    assert offlimits._others_alive() is True
    stats["9"] = b"9 (python) Z 1"
    assert offlimits._others_alive() is False
    stats["9"] = None  # could not be read (every descriptor held)
    assert offlimits._others_alive() is True
    stats["9"] = b"9 (python) S 1"
    monkeypatch.setattr(offlimits, "_forked_children", lambda: False)
    alone = offlimits.Guard(["operator.mul"], {}, alone=True)
    with alone:
        pass
    assert alone.lost and alone.lost_as == offlimits.PROGRAM
    with offlimits.Guard(["operator.mul"], {}) as elsewhere:
        pass
    assert not elsewhere.lost


def test_a_process_whose_main_thread_exited_while_another_runs_is_alive(monkeypatch):
    """Her python's main thread exited alone (SYS_exit) while a thread of it computes: /proc's
    stat of the process reads Z (its main thread's), its tasks say it lives (the eighty-first
    hub tester). A true zombie's tasks are all Z; tasks that cannot be listed count as alive."""
    files = {
        "/proc/1/stat": b"1 (python) S 0",
        "/proc/7/stat": b"7 (python) R 1",
        "/proc/9/stat": b"9 (python) Z 1",
        "/proc/9/task/9/stat": b"9 (python) Z 1",
        "/proc/9/task/10/stat": b"10 (python) S 1",
    }
    tasks = {"/proc": ["1", "7", "9", "self"], "/proc/9/task": ["9", "10"]}

    def listdir(path):
        if path not in tasks:
            raise PermissionError(path)
        return tasks[path]

    monkeypatch.setattr(offlimits, "_READLINK", lambda path: "7")
    monkeypatch.setattr(offlimits, "_LISTDIR", listdir)
    monkeypatch.setattr(offlimits, "_read", lambda path: files.get(path, b""))
    assert offlimits._others_alive() is True
    files["/proc/9/task/10/stat"] = b"10 (python) Z 1"  # every thread ended: a zombie
    assert offlimits._others_alive() is False
    del tasks["/proc/9/task"]
    assert offlimits._others_alive() is True


def assert_her_copy_of_repeat_kv_is_stopped(answer, file, kv, n):
    """Her `answer` cell's expand_kv, which runs a copy of the declared repeat_kv, is stopped
    as repeat_kv; her own formula beside it (`mine`) is not."""
    from transformers.models.llama.modeling_llama import repeat_kv

    namespace = cell(
        answer + "def mine(kv, n):\n    return kv.repeat_interleave(n, dim=1)\n",
        CELL + file,
        {"torch": torch, "repeat_kv": repeat_kv},
    )
    guard = offlimits.Guard(["repeat_kv"], namespace)
    with guard, pytest.raises(offlimits.OffLimitsError):
        namespace["expand_kv"](kv, n)
    assert guard.fired == ["repeat_kv"]
    with offlimits.Guard(["repeat_kv"], namespace) as honest:
        assert torch.equal(namespace["mine"](kv, n), repeat_kv(kv, n))
    assert honest.fired == []


def test_a_compiled_copy_of_a_reference_is_stopped():
    """The fortieth hub tester's: her answer cell compiled the declared reference (a function,
    declared by its name) with torch.compile(backend="eager", dynamic=True) and called it once;
    her f called the compiled copy, which runs a code object dynamo rewrote from the
    reference's (its file and lines, not its identity): the value computed, nothing fired."""
    assert_her_copy_of_repeat_kv_is_stopped(
        "_copy = torch.compile(repeat_kv, backend='eager', dynamic=True)\n"
        "_copy(torch.randn(2, 2, 5, 4), 3)\n"
        "def expand_kv(kv, n):\n"
        "    return _copy(kv, n)\n",
        "compiled_copy.py",
        torch.randn(3, 4, 7, 8),
        2,
    )


def test_another_files_copy_of_a_reference_is_stopped():
    """The fortieth hub tester's: transformers keeps a copy of the declared repeat_kv in many
    models' files; her f called mistral's and computed the reference, nothing fired."""
    assert_her_copy_of_repeat_kv_is_stopped(
        "from transformers.models.mistral.modeling_mistral import repeat_kv as twin\n"
        "def expand_kv(kv, n):\n"
        "    return twin(kv, n)\n",
        "twin.py",
        torch.randn(2, 2, 5, 8),
        3,
    )


def test_a_compiled_copy_of_another_files_copy_is_stopped():
    """The fortieth hub tester's: torch.compile of mistral's copy of the declared repeat_kv, a
    code object dynamo rewrote from a copy: neither in the reference's file nor its bytecode."""
    assert_her_copy_of_repeat_kv_is_stopped(
        "from transformers.models.mistral.modeling_mistral import repeat_kv as twin\n"
        "_copy = torch.compile(twin, backend='eager', dynamic=True)\n"
        "_copy(torch.randn(2, 2, 5, 4), 3)\n"
        "def expand_kv(kv, n):\n"
        "    return _copy(kv, n)\n",
        "compiled_twin.py",
        torch.randn(3, 4, 7, 8),
        2,
    )


def test_another_files_copy_of_a_declared_modules_function_is_stopped():
    """The forty-first hub tester's: L4 and L5 declare transformers.models.llama.modeling_llama,
    a module (its file guarded); her f called mistral's copy of its rotate_half and computed it,
    nothing fired. Her own code of the same bytecode (LlamaMLP's forward, typed) is her work."""
    from transformers.models.llama.modeling_llama import rotate_half

    namespace = cell(
        "from transformers.models.mistral.modeling_mistral import rotate_half as twin\n"
        "def f(x):\n"
        "    return twin(x)\n"
        "class MLP(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.gate_proj = self.up_proj = self.down_proj = torch.nn.Identity()\n"
        "        self.act_fn = torch.nn.SiLU()\n"
        "    def forward(self, x):\n"
        "        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))\n"
        "        return down_proj\n"
        "def g(x):\n"
        "    return MLP()(x)\n",
        CELL + "module_twin.py",
        {"torch": torch},
    )
    declared = ["transformers.models.llama.modeling_llama"]
    x = torch.randn(2, 8)
    guard = offlimits.Guard(declared, namespace)
    with guard, pytest.raises(offlimits.OffLimitsError):
        namespace["f"](x)
    assert guard.fired == declared
    with offlimits.Guard(declared, namespace) as honest:
        assert torch.equal(namespace["g"](x), torch.nn.functional.silu(x) * x)
        assert torch.equal(torch.cat((-x[..., 4:], x[..., :4]), dim=-1), rotate_half(x))
    assert honest.fired == []


def test_a_line_anyone_writes_is_no_copy_of_the_reference():
    """LM10-L6's setup gives the student `attention_parameters`, which sums `p.numel() for p in
    layer.parameters()`: the same generator expression, code for code, as the declared
    `reference_parameters`' own. Counted as a copy of the reference, every honest answer that
    called the setup's helper was stopped (the L6 solution failed Validate). A comprehension,
    generator expression or lambda is nobody's copy (another file's copy of a whole declared
    function still is: test_another_files_copy_of_a_reference_is_stopped)."""
    setup = cell(
        "def reference_parameters(model):\n"
        "    return sum(p.numel() for p in model.parameters())\n"
        "def helper(layer):\n"
        "    return sum(p.numel() for p in layer.parameters())\n",
        CELL + "setup_genexpr.py",
        {},
    )
    answer = cell(
        "def count(model):\n"
        "    return helper(model) + sum([p.numel() for p in model.parameters()]) * 0\n"
        "def cheat(model):\n"
        "    return reference_parameters(model)\n",
        CELL + "answer_genexpr.py",
        {"helper": setup["helper"], "reference_parameters": setup["reference_parameters"]},
    )
    namespace = answer
    model = torch.nn.Linear(3, 2)
    with offlimits.Guard(["reference_parameters"], namespace) as honest:
        assert namespace["count"](model) == 8
    assert honest.fired == []
    guard = offlimits.Guard(["reference_parameters"], namespace)
    with guard, pytest.raises(offlimits.OffLimitsError):  # the reference itself still is
        namespace["cheat"](model)
    assert guard.fired == ["reference_parameters"]


TEST = "# Off limits while graded: operator.mul\nassert f(3) == 6"
VALIDATED = {
    "honest": ("def f(x):\n    return 2 * x\n", None),
    # a worker her answer cell left running: the grader stops the test (PROGRAM)
    "worker": (
        "import multiprocessing, time\n"
        "_w = multiprocessing.get_context('fork').Process(target=time.sleep, args=(60,))\n"
        "_w.start()\n"
        "def f(x):\n    return 2 * x\n",
        "A process of yours ran while a test called your code",
    ),
    # the guard's error caught by her code: the grader stops the test whatever she did
    "caught": (
        "import operator\n"
        "def f(x):\n    try:\n        return operator.mul(2, x)\n"
        "    except Exception:\n        return 2 * x\n",
        "operator.mul is off limits",
    ),
    # torch.compile runs uncompiled under the guard, as in the sandbox (057adb6): it passes
    "compiled": (
        "import torch\n@torch.compile\ndef _d(x):\n    return x + x\n"
        "def f(n):\n    return int(_d(torch.tensor([float(n)]))[0])\n",
        None,
    ),
    # torch.compile first called during the test, torch._dynamo not imported before it: the
    # grader (TORCH_COMPILE_DISABLE) passes it, Validate ran it compiled, inductor's compiler a
    # program, and failed it with the PROGRAM words (the eighty-third hub tester)
    "compiled during the test": (
        "import torch\ndef f(n):\n"
        "    return int(torch.compile(lambda x: x + x)(torch.tensor([float(n)]))[0])\n",
        None,
    ),
}


def validated(folder, answers, env=None):
    """nbgrader's Validator, with the course's extension (this module, as the course's
    nbgrader_config.py loads it), on a lab() of each of `answers` ({name: her answer cell}),
    its test TEST, in a process of its own (`env`: its environment): {name: Validator's
    answer}."""
    import json
    import subprocess

    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    paths = []
    for name, answer in answers.items():
        nb = new_notebook(cells=[new_code_cell(answer), new_code_cell(TEST)])
        nb.cells[0].metadata["nbgrader"] = {
            "grade": False, "solution": True, "locked": False, "grade_id": "answer",
            "schema_version": 3,
        }  # fmt: skip
        nb.cells[1].metadata["nbgrader"] = {
            "grade": True, "solution": False, "locked": True, "grade_id": "test_f",
            "points": 1, "schema_version": 3,
        }  # fmt: skip
        paths.append(folder / f"{name}.ipynb")
        nbformat.write(nb, paths[-1])
    code = (
        "import json, sys\n"
        "from nbgrader.validator import Validator\n"
        "from traitlets.config import Config\n"
        "c = Config()\n"
        "c.Execute.extra_arguments = ['--IPKernelApp.extensions=lmcourse.offlimits']\n"
        "for path in sys.argv[1:]:\n"
        "    print('validated', json.dumps(Validator(config=c).validate(path)), flush=True)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, paths)],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    found = [
        json.loads(line[10:]) for line in done.stdout.splitlines() if line[:10] == "validated "
    ]
    return dict(zip(answers, found, strict=True))


def test_validate_fails_what_the_grader_stops(tmp_path):
    """Validate, in her own kernel (the course's nbgrader_config.py loads this module as an
    IPython extension), passed a test whose guard was lost (a worker of hers alive, her code
    recursed to the limit) or fired into an error her code caught: the grader's sandbox stops
    both (0 for the part). Now Validate fails them with the grader's words; torch.compile
    runs uncompiled under the guard, as in the sandbox, so an honest compile passes both."""
    answers = validated(tmp_path, {name: answer for name, (answer, _) in VALIDATED.items()})
    for name, (_, words) in VALIDATED.items():
        answer = answers[name]
        errors = [f["error"] for f in answer.get("failed", [])]
        if words is None:
            assert errors == [], (name, errors)
        else:
            assert len(errors) == 1 and "OffLimitsError" in errors[0] and words in errors[0], (
                name,
                errors,
            )


def test_validate_spares_a_plot_in_a_home_without_matplotlibs_font_cache(tmp_path):
    """The eighty-seventh tester: her honest f plots when called (matplotlib.pyplot imported
    inside it). The grader's sandbox finds matplotlib's fonts before any notebook (d777273) and
    passes it; Validate, in a home without matplotlib's font cache (a student who never plotted,
    or a matplotlib upgraded since), ran fc-list during the test, a program, and failed it with
    the PROGRAM words. Validate finds the fonts before it arms the guard, as the sandbox does."""
    import os

    answer = (
        "def f(x):\n    import io\n    import matplotlib.pyplot as plt\n    plt.plot([1, x])\n"
        "    plt.title('her plot')\n    plt.savefig(io.BytesIO())\n    plt.close()\n"
        "    return 2 * x\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPL", "XDG_"))}
    env["HOME"] = str(home)
    answer = validated(tmp_path, {"plot": answer}, env)["plot"]
    assert answer.get("failed", []) == [], [f["error"][-300:] for f in answer["failed"]]
