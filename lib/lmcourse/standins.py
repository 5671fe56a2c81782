"""While a later lab part is tested, the earlier part it calls stands in with the right values.

A lab part may call an earlier one (L1's `gpt2_model` calls `gpt2_block`). So that a slip in
the earlier part costs that part alone, and not every part built on it, the later part's test
runs it with the earlier function's name standing for a stand-in: a function that returns
the right values, which the test computed from its references, for exactly the arguments the
test expects it to be called with, and refuses any other call (saying why). The later part is
then judged on its own code, whether the student's earlier function is wrong, raises, or
returns a float:

    with standing_in(gpt2_block=("d", {(d,): block_want})):
        got = gpt2_model(d, layers, vocab, positions)

Each keyword names a function of the student's notebook; its value is (the prompt's parameter
list as written in the prompt, {arguments: right value}). A key holds the arguments in the
parameter list's order and may leave out those with defaults; a call is matched after binding
its arguments to that list (keywords and defaults as the prompt states them), each argument
of exactly its kind: an integer (a Python, numpy or torch integer) matches an integer only, so a
float where the prompt gives an integer is refused. The stand-in holds no formula, only these
values: nothing in it computes an answer for any other input.

Inside the `with`, the name means the stand-in everywhere the test's and the student's code
look it up by name; the test calls the student's own earlier function outside it. Code that
kept the earlier function under another name (a default argument, an alias) still reaches
the student's own: `with standing_in(...) as stood:` leaves in `stood.calls` how many calls
each stand-in answered, so a test knows when none did and judges what is the later part's own
there (L1's Part 2).

Where the swap is made:
- in a student's kernel (Validate) and wherever a lab runs in one process (tests/
  test_lab_inputs.py, grading/slips/table.py), the test shares the student's namespace: the
  name is swapped in the namespace of the code that opened the `with`, and put back after;
- in the grader's trusted process (grading/host/trusted_tests.py), whose namespace holds handles to
  the student's objects, the grader installs a route (`use_room`): the same swap is also made
  in the graded sandbox, among the student's code (grading/in_sandbox/sandbox_agent.py builds the
  stand-in there with `StandIn`, from the plain data this module sends: names, parameters, answers).
"""

import ast
import copy
import inspect
import operator
import sys

_route = None  # the grader's trusted process: where the swap is also made (the sandbox)
_ABSENT = object()
PLAIN = (type(None), bool, int, float, str)


def use_room(route):
    """Make every swap in the graded sandbox too: `route` has `stand_in({name: (parameters,
    answers)})` and `stand_down([name, ...]) -> {name: calls answered there}` (None: swaps
    here only). Returns the one before."""
    global _route
    before, _route = _route, route
    return before


def parameters(signature):
    """The parameter list `signature` ("layers, kv_heads, head_dim, bytes_per_number=2") as
    [[name, has a default, default], ...]; ValueError unless every parameter is a plain name
    with, at most, a literal default."""
    try:
        tree = ast.parse(f"def stood_in({signature}):\n    pass\n").body[0]
    except SyntaxError as error:
        raise ValueError(f"not a parameter list: {signature!r} ({error.msg})") from None
    args = tree.args
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg:
        raise ValueError(f"only plain parameters, with or without defaults: {signature!r}")
    names = [a.arg for a in args.args]
    defaults = [ast.literal_eval(d) for d in args.defaults]
    first = len(names) - len(defaults)
    return [
        [name, i >= first, defaults[i - first] if i >= first else None]
        for i, name in enumerate(names)
    ]


def _kind(value):
    """An argument as (its kind, its value): integers of every library alike, nothing else
    loosened."""
    if type(value) is bool:
        return ("bool", value)
    if isinstance(value, float):
        return ("float", float(value))
    if isinstance(value, str | type(None)):
        return (type(value).__name__, value)
    try:
        return ("int", operator.index(value))
    except TypeError:
        return None


class StandIn:
    """A function that returns `answers` for exactly their arguments, and refuses any other
    call: an earlier part, as the test of a later one gives it to the student's code."""

    def __init__(self, name, parameters, answers):
        self.__name__ = self.__qualname__ = str(name)
        self.__doc__ = f"{name}, stood in with the right values while a later part is tested."
        self._signature = inspect.Signature(
            [
                inspect.Parameter(
                    str(p),
                    inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    default=default if has_default else inspect.Parameter.empty,
                )
                for p, has_default, default in parameters
            ]
        )
        self._answers, self.calls = {}, 0
        for arguments, value in answers:
            key = self._key(tuple(arguments), {})
            if key is None:
                raise ValueError(f"{name}: an answer for arguments that are not plain data")
            self._answers[key] = value

    def _key(self, args, kwargs):
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        kinds = tuple(_kind(v) for v in bound.arguments.values())
        return None if None in kinds else kinds

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True
        name = self.__name__
        try:
            key = self._key(args, kwargs)
        except TypeError as error:
            raise TypeError(f"{name}{self._signature}: {error}") from None
        if key is None or key not in self._answers:
            shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
            raise ValueError(
                f"while this test runs, {name} stands in with the right values for the calls "
                f"the test expects, so that this part is judged on its own code; it answers "
                f"no call {name}({shown[:300]}) (arguments of the prompt's kinds, as the test "
                "gives them)"
            )
        self.calls += 1
        return copy.deepcopy(self._answers[key])

    def __repr__(self):
        return f"<stand-in for {self.__name__}{self._signature}>"


def plain(value, leaf=lambda v: type(v) in PLAIN, depth=0):
    """Whether `value` is data: a `leaf`, or lists, tuples and dicts of leaves (at most 8 deep).
    The grader's trusted process asks the same of what it hands a room, with leaves of its own."""
    if depth > 8:
        return False
    if leaf(value):
        return True
    if type(value) in (list, tuple):
        return all(plain(v, leaf, depth + 1) for v in value)
    if type(value) is dict:
        return all(
            plain(k, leaf, depth + 1) and plain(v, leaf, depth + 1) for k, v in value.items()
        )
    return False


class standing_in:  # noqa: N801 (used as a statement: `with standing_in(...)`)
    """`with standing_in(name=(parameter list, {arguments: value}), ...):` the student's
    functions `name` stand in with these values inside the block (the module's docstring)."""

    def __init__(self, **functions):
        if not functions:
            raise ValueError("standing_in needs a function to stand in")
        self.functions = {}
        for name, given in functions.items():
            if not (isinstance(given, tuple) and len(given) == 2 and isinstance(given[1], dict)):
                raise ValueError(
                    f"{name}: give (parameter list, {{arguments: value}}), got {type(given)}"
                )
            signature, answers = given
            listed = parameters(signature)
            rows = []
            for arguments, value in answers.items():
                arguments = tuple(arguments) if isinstance(arguments, tuple) else (arguments,)
                if not (plain(arguments) and plain(value)):
                    raise ValueError(f"{name}: answers and their arguments must be plain data")
                rows.append([arguments, value])
            StandIn(name, listed, rows)  # a key that does not fit the parameters fails here
            self.functions[name] = (listed, rows)
        # private: the caller's globals are no word of the labs' vocabulary (her code could
        # read `__builtins__` in them by a computed key, grading/host/vocabulary.py)
        self._namespace = sys._getframe(1).f_globals
        self.before, self.standing, self.calls = {}, {}, {}

    def __enter__(self):
        if _route is not None:  # first: if the sandbox cannot take it, nothing was swapped
            _route.stand_in(self.functions)
        for name, (listed, rows) in self.functions.items():
            self.before[name] = self._namespace.get(name, _ABSENT)
            self._namespace[name] = self.standing[name] = StandIn(name, listed, rows)
        return self

    def __exit__(self, *exc):
        for name, before in self.before.items():
            if before is _ABSENT:
                self._namespace.pop(name, None)
            else:
                self._namespace[name] = before
        there = _route.stand_down(list(self.functions)) if _route is not None else None
        # `calls`: how many calls each stand-in answered, here and in the sandbox: none means
        # the later part did not call the earlier one by its name
        for name, standing in self.standing.items():
            elsewhere = there.get(name, 0) if isinstance(there, dict) else 0
            self.calls[name] = standing.calls + (elsewhere if type(elsewhere) is int else 0)
        return False
