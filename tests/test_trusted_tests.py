"""The data that crosses from the student's kernel to the trusted tests
(grading/host/trusted_tests.py and grading/in_sandbox/sandbox_agent.py), without a sandbox: what the
student's side encodes, the grader's side decodes to values of exactly their types, and anything
that is not plain data arrives as a handle that equals nothing, has no truth value and names the
student's type. The end-to-end attacks are in tests/test_grading_hostile.py."""

import json
import math

import pytest
import torch

from grading.host import trusted_tests
from grading.in_sandbox import sandbox_agent


def round_trip(value, link=None):
    """`value` encoded as the sandbox encodes it, then decoded as the grader decodes it."""
    text = json.dumps(sandbox_agent.encode(value))
    return trusted_tests.decode(text, link or (lambda request: pytest.fail(f"called {request}")))


class Anything(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def test_plain_data_comes_back_of_exactly_its_type():
    value = {
        "n": 7,
        3: [1.5, None, True, "text"],
        (1, "a"): (2, 3),
        "big": 2**80,
        "special": [math.inf, -math.inf],
    }
    back = round_trip(value)
    assert back == value and type(back[(1, "a")]) is tuple and type(back[3]) is list
    assert math.isnan(round_trip(math.nan))
    assert [type(v) for v in round_trip([1, 1.0, True, "1"])] == [int, float, bool, str]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_tensors_come_back_with_their_dtype_shape_and_values(dtype):
    tensor = (torch.arange(24).reshape(2, 3, 4) % 5).to(dtype)
    for sent in (
        tensor,
        tensor[:, 1:],
        tensor.transpose(0, 2),
        torch.nn.Parameter(tensor) if dtype.is_floating_point else tensor,
    ):
        back = round_trip(sent)
        assert type(back) is torch.Tensor and back.dtype == dtype
        assert back.shape == sent.shape and torch.equal(back, sent.detach())
    empty = round_trip(torch.empty(0, 3, dtype=dtype))
    assert empty.shape == (0, 3) and empty.dtype == dtype


def test_objects_stay_behind_as_handles_that_equal_nothing():
    calls = []
    back = round_trip(Anything(5), link=calls.append)
    assert type(back).__module__ == __name__ and type(back).__qualname__ == "Anything"
    assert (back == 5) is False and back != 5 and back == back  # noqa: PLR0124
    with pytest.raises(TypeError):
        bool(back)
    with pytest.raises(TypeError):
        f"{back:,}"
    with pytest.raises(TypeError):
        back + 1
    with pytest.raises(TypeError):  # not callable: no round trip
        back()
    assert calls == []
    assert back.real is None and calls == [("getattr", calls[0][1], "real")]  # read remotely


def test_a_callable_handle_asks_the_student_side():
    seen = []
    handle = round_trip(len, link=lambda request: seen.append(request) or 3)
    assert handle([1, 2, 3]) == 3
    assert seen == [("call", seen[0][1], ([1, 2, 3],), {})]


@pytest.mark.parametrize(
    "text",
    [
        '{"__tensor__": "object", "shape": [1], "data": ""}',
        '{"__tensor__": "float32", "shape": [2], "data": "AAAA"}',
        '{"__tensor__": "float32", "shape": [-1], "data": ""}',
        '{"__dict__": [[[1, 2], 3]]}',
        '{"__main__": 1}',
        "NaN",
        '{"__float__": "1e999"}',
        '{"__handle__": "1", "module": "m", "qualname": "q", "callable": true}',
        "[" * 100 + "]" * 100,
        "not json",
    ],
)
def test_anything_else_is_refused(text):
    with pytest.raises(trusted_tests.AnswerError):
        trusted_tests.decode(text, lambda request: None)


def test_the_students_exceptions_are_raised_here_as_builtin_or_named_ones():
    with pytest.raises(ValueError, match="norm must be"):
        trusted_tests.raise_error(
            {"error": "ValueError", "builtin": True, "message": "norm must be"}
        )
    with pytest.raises(trusted_tests.StudentError) as caught:  # a name is not a class
        trusted_tests.raise_error({"error": "ValueError", "builtin": False, "message": "x"})
    assert type(caught.value).__name__ == "ValueError"
    with pytest.raises(trusted_tests.StudentError):  # never the grader's own KeyboardInterrupt
        trusted_tests.raise_error({"error": "KeyboardInterrupt", "builtin": True, "message": ""})


def round_trip_reply(value):
    return trusted_tests.decode(json.dumps(value), lambda request: None)


def test_an_earlier_part_stands_in_with_the_test_values_and_nothing_else(monkeypatch):
    """While a later part's test runs, the sandbox's name of an earlier part is a stand-in
    (lmcourse.standins, made by the agent from plain data): the test's values for its own
    arguments, bound as the prompt's parameters are (keywords, defaults, integers of any
    library), and a refusal for anything else; the student's own comes back after."""
    import numpy
    from lmcourse import standins

    namespace = {"block": "the student's own"}
    monkeypatch.setattr(sandbox_agent, "_namespace", lambda: namespace)
    listed = standins.parameters("d, bias=True")
    assert listed == [["d", False, None], ["bias", True, True]]
    sandbox_agent._run(
        (
            "stand_in",
            {
                "block": (listed, [[(768,), 7_087_872]]),
                "absent": (standins.parameters("x"), [[(1,), 2]]),
            },
        )
    )
    standing = namespace["block"]
    for call in ((768,), (numpy.int64(768),), (torch.tensor(768),)):
        assert standing(*call) == 7_087_872
    assert standing(d=768, bias=True) == 7_087_872 and namespace["absent"](1) == 2
    for args, kwargs in (((768.0,), {}), ((64,), {}), ((768,), {"bias": False})):
        with pytest.raises(ValueError, match="stands in with the right values.*answers no call"):
            standing(*args, **kwargs)
    with pytest.raises(TypeError, match=r"block\(d, bias=True\): missing a required argument"):
        standing()
    calls = sandbox_agent._run(("stand_down", ["block", "absent", "never stood in"]))
    assert namespace == {"block": "the student's own"}
    assert round_trip_reply(calls) == {"block": 4, "absent": 1}  # as the grader reads it


def test_a_test_swaps_its_own_name_and_routes_the_swap_to_the_sandbox():
    """In one process (Validate) the name is swapped where the test runs; in the grader's
    trusted process the swap also goes to the sandbox, before the name changes here."""
    from lmcourse import standins

    sent = []

    class Route:
        def stand_in(self, functions):
            sent.append(("in", sorted(functions)))

        def stand_down(self, names):
            sent.append(("down", names))
            return {"block": 2}  # calls answered in the sandbox

    code = (
        "with standing_in(block=('d', {(768,): 7}), size=('n, m=2', {(3,): 9})) as stood:\n"
        "    inside = block(768), size(3, m=2)\n"
        "after, calls = block, stood.calls\n"
    )
    namespace = {"standing_in": standins.standing_in, "block": "own"}
    before = standins.use_room(Route())
    try:
        exec(code, namespace)
    finally:
        standins.use_room(before)
    assert namespace["inside"] == (7, 9) and namespace["after"] == "own"
    assert "size" not in namespace and namespace["calls"] == {"block": 3, "size": 1}
    assert sent == [("in", ["block", "size"]), ("down", ["block", "size"])]
    exec(code, namespace)  # no route: here only
    assert namespace["inside"] == (7, 9) and len(sent) == 2
    assert namespace["calls"] == {"block": 1, "size": 1}
    with pytest.raises(ValueError, match="plain data"):
        standins.standing_in(block=("d", {(768,): object()}))
    with pytest.raises(ValueError, match="not a parameter list"):
        standins.standing_in(block=("d,,", {(768,): 1}))
    with pytest.raises(TypeError, match="too many"):
        standins.standing_in(block=("d", {(768, 2): 1}))


def test_later_sessions_find_what_the_first_setup_imported_already_imported():
    """The warm host imports, once, what the first session's setup imported (as SmolLM2's
    loader imports transformers' Llama classes): a later session's setup finds the module
    there before its own import line. Each session still runs the whole setup."""
    setup = ["import sys\nearly = 'colorsys' in sys.modules", "import colorsys"]
    test = "print(early, colorsys.rgb_to_hsv(0.0, 0.0, 1.0))"
    seen = []

    def student_side(request):
        return json.dumps(sandbox_agent._answer(request)), False

    trusted_tests.warm("")
    try:
        for _ in range(3):
            with trusted_tests.session(setup, []) as tested:
                # the student's side, here with no names: answered as the sandbox's agent would
                outputs, _ = tested.run(test, call=student_side, deadline=None)
            seen.append("".join(o.get("text", "") for o in outputs).strip())
    finally:
        trusted_tests.cool()
    hsv = "(0.6666666666666666, 1.0, 1.0)"
    assert seen == [f"False {hsv}", f"True {hsv}", f"True {hsv}"]


def test_the_executors_stop_carries_none_of_the_error_it_interrupted():
    """The executor's stop (a GraderStop: its words and traceback kept in feedback, whatever came
    before) raised while her error was in flight, at a call of hers that the test makes on its
    way out of a `try` or a `with`: standing_in's exit hands the stand-ins back to the sandbox
    (stand_down), and her code had set that call to loop (sandbox_agent is hers to change).
    Python chained her error to the stop, and IPython's traceback of the stop showed it, message
    and all: what her code computed from the hidden inputs it had met, in the student's feedback
    (the twenty-fifth hub tester). The stop is raised alone."""
    import base64
    import io

    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from grading.host.course_preprocessors import FEEDBACK_MARK, StripHiddenTests

    secret = "the hidden test called gpt2_block(64), (1024), (1600)"
    stop = "the grader stopped this test after 40 s (does your code loop forever?)"
    requests = []

    class Sandbox:  # her kernel, as the executor answers for it
        def send(self, message):
            data = io.BytesIO(base64.b64decode(message["call"]))
            requests.append(sandbox_agent._Unpickler(data).load()[0])

        def receive(self, deadline=None):
            kind = requests[-1][0]
            if kind == "names":
                return {"reply": json.dumps({"value": sandbox_agent.encode({"gpt2_model": len})})}
            if kind == "stand_in":
                return {"reply": json.dumps({"value": None})}
            if kind == "call":  # her answer raises, with what it met in an earlier hidden test
                message = {"error": "ValueError", "builtin": True, "message": secret}
                return {"reply": json.dumps(message)}
            message = {"error": "CellTimeoutError", "builtin": False, "message": stop}
            return {"reply": json.dumps(message), "own": True}  # stand_down: it looped

    setup = ["from lmcourse.standins import standing_in"]
    session = trusted_tests.Session(Sandbox(), setup, ["gpt2_model"])
    session.tainted = True  # an earlier test's hidden line had called her code
    source = "with standing_in(gpt2_block=('d', {(768,): 7})):\n    gpt2_model(768)\n"
    outputs, clean = session.test(source)
    assert [r[0] for r in requests] == ["names", "stand_in", "call", "stand_down"]
    assert clean == {"stdout": 0, "error": False, "stopped": True}
    cell = new_code_cell(source, outputs=[nbformat.from_dict(o) for o in outputs])
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True}
    cell.metadata["nbgrader"].update(grade_id="l1_test_gpt2_model", points=2)
    cell.metadata[FEEDBACK_MARK] = clean
    nb = new_notebook(cells=[cell], metadata={"lm10": {"feedback": "marked"}})
    nb, _ = StripHiddenTests().preprocess(nb, {})
    (output,) = nb.cells[0].outputs
    assert (output.ename, output.evalue) == ("CellTimeoutError", stop)
    assert "gpt2_block(64)" not in json.dumps(output), output.traceback


def test_the_agent_never_calls_her_str_on_a_classs_module():
    """The seventy-second hub tester: a class's __module__ is whatever its maker gave
    (`collections.namedtuple('T', 'a', **{'module': Name()})`, all words), and the agent's
    `_handle`, as the names request (each test's first, no guard armed) encodes her value,
    called str() on it: her __str__ ran there. Only a str is read now."""
    import collections

    ran = []

    class Name:
        def __str__(self):
            ran.append(1)
            return "x"

    shown = collections.namedtuple("T", "a", **{"module": Name()})
    handle = sandbox_agent._handle(shown(1))
    assert (handle["module"], handle["qualname"], ran) == ("", "T", [])
    assert sandbox_agent._handle(trusted_tests)["module"] == "builtins"
