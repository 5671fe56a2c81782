"""The lab's tests, run where the student's code cannot reach them; only data comes back.

nbgrader scores a test cell from the outputs it left, and a test cell run in the student's
kernel leaves whatever that kernel writes: a student's code can replace the display hook, the
builtins, the shell, the tracer, or an assert's operands, and every test then passes. Here the
test cells never run in the student's kernel. For each submission a trusted process (a fork of
`serve`, outside the sandbox, running only the lab's code) runs the lab's setup cells, from
the released notebook, in an IPython shell of its own; at each test cell the sandbox reaches
(sandbox_exec.py), it runs the test's source from the gradebook there. Every name an answer
cell defines is bound, before each test, to the student's current value of it, fetched as
data, or to a `Remote` handle when it is not data (a function, a class, an object): calling a
handle, or reading one of its attributes, sends the arguments into the sandbox, where
sandbox_agent.py makes the call among the student's code and sends back the result as data.

So the verdict, the test's own code comparing values, runs here. Whatever the student's code
does to its own interpreter changes only the values it returns, and a value comes back as
plain data (`decode`): None, bool, int, float, str, lists, tuples, dicts and tensors, each of
exactly its type, checked here, or as a handle whose type name is the object's own, so an int
subclass that claims to equal everything arrives as a handle named `__main__.Anything` that
equals nothing. Arguments travel into the sandbox by pickle (grader to sandbox only); an
object the lab's setup made (the model, a helper function) travels by name, as the sandbox's
own copy made by the same setup cell. (A test that changes a setup object in place must pass
a copy.) Nothing the student's code prints while a test calls it reaches the notebook: it
would carry the hidden tests' inputs into the feedback.

A test cell may declare what it compares against ("# Off limits while graded: ...",
lmcourse/offlimits.py): each call it makes carries those names into the sandbox, where the
agent stops the student's code from calling them; a reply that reports one gives the test
cell an OffLimitsError as its result, whatever the test did with the error, so it scores 0.

Outputs of a test cell are made as a kernel would make them: its prints as a stdout stream
(stderr joined to it, never costing points), an exception as an error with IPython's
traceback (`Cell In[n], line m`, which StripHiddenTests reads), and no execute_result (nbgrader
reads one as a partial score).

    python trusted_tests.py --serve       (frames on stdin and stdout: see TrustedHost)
"""

import base64
import builtins
import contextlib
import dataclasses
import gc
import io
import json
import logging
import math
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
import warnings

from lmcourse import offlimits, standins

from grading.batch.results import MAX_MISSED  # names a room's copies lacked, kept
from grading.host import room as rooms
from grading.in_sandbox import sandbox_exec as frames

DTYPES = (
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
)
MAX_DIMS = 16
MAX_NAME = 200
# What one submission may make the trusted process hold: kinds of the student's objects it
# names (each a class here), and address space beyond what the host had when it forked the
# session (the lab's setup, SmolLM2 included, needs well under 1 GiB of it).
MAX_REMOTE_TYPES = 256
SESSION_MEMORY = 3 << 30


class GraderError(RuntimeError):
    """The grader's own machinery failed (never the student's answer)."""


class AnswerError(TypeError):
    """What the student's code sent back is not data the grader can read."""


class StudentError(Exception):
    """An exception of the student's code that is not one of Python's builtin ones."""


class GraderStop(Exception):
    """The sandbox's executor stopped the student's code (a call past the test's time, or
    after the kernel could no longer be used): its name and message are the grader's own."""


_remote_types, _error_types, _stop_types = {}, {}, {}


def _name(text, fallback):
    text = str(text)[:MAX_NAME] if isinstance(text, str) else fallback
    return "".join(ch for ch in text if ch.isprintable()) or fallback


class Remote:
    """A handle to an object that stays in the student's kernel: it can be called and have
    its attributes read (each a round trip into the sandbox), and nothing else. Its type
    carries the remote object's module and name, so `type(value).__qualname__` reads as the
    student's own class; it equals only itself and has no truth value."""

    __slots__ = ("_lm10_number", "_lm10_link", "_lm10_callable")

    def __init__(self, number, link, is_callable):
        self._lm10_number, self._lm10_link, self._lm10_callable = number, link, is_callable

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True
        if not self._lm10_callable:
            raise TypeError(f"'{type(self).__qualname__}' object is not callable")
        return self._lm10_link(("call", self._lm10_number, args, kwargs))

    def __getattr__(self, name):
        __tracebackhide__ = True
        if name.startswith("_"):  # IPython's and pickle's probes stay here
            raise AttributeError(name)
        return self._lm10_link(("getattr", self._lm10_number, name))

    def __bool__(self):
        raise TypeError(f"a {type(self).__qualname__} from the student's code has no truth value")

    def __repr__(self):
        kind = type(self)
        return f"<{kind.__module__}.{kind.__qualname__} object>"


def remote_type(module, qualname):
    key = (module, qualname)
    if key not in _remote_types:
        if len(_remote_types) >= MAX_REMOTE_TYPES:
            raise AnswerError(
                f"the answers hold objects of more than {MAX_REMOTE_TYPES} kinds (classes); "
                "return plain data: numbers, strings, lists, dicts, tensors"
            )
        kind = type(qualname.rsplit(".", 1)[-1], (Remote,), {"__slots__": ()})
        kind.__module__, kind.__qualname__ = module, qualname
        _remote_types[key] = kind
    return _remote_types[key]


def error_type(name):
    """The exception class to raise here for the student's exception called `name`."""
    if name not in _error_types:
        _error_types[name] = type(name.rsplit(".", 1)[-1], (StudentError,), {})
        _error_types[name].__qualname__ = name
        _error_types[name].__module__ = "builtins"  # shown without a module, as a kernel would
    return _error_types[name]


def decode(text, link):
    """The value in the sandbox's reply `text` (JSON), checked to be plain data; AnswerError
    when it is anything else. Handles are bound to `link`."""
    try:
        tree = json.loads(text, parse_constant=lambda c: _reject(f"constant {c}"))
    except (ValueError, RecursionError) as error:
        raise AnswerError(f"the answer could not be read: {error}"[:300]) from None
    return _value(tree, link, 0)


def _reject(why):
    raise AnswerError(f"the answer is not plain data ({why})")


def _value(node, link, depth):
    if depth > 40:
        _reject("nested too deeply")
    kind = type(node)
    if node is None or kind in (bool, int, float):
        return node
    if kind is str:
        return node.encode("utf-8", "replace").decode("utf-8")  # no lone surrogates
    if kind is list:
        return [_value(v, link, depth + 1) for v in node]
    if kind is not dict or len(node) == 0:
        _reject(f"a JSON {kind.__name__}")
    if set(node) == {"__tuple__"} and type(node["__tuple__"]) is list:
        return tuple(_value(v, link, depth + 1) for v in node["__tuple__"])
    if set(node) == {"__dict__"} and type(node["__dict__"]) is list:
        result = {}
        for pair in node["__dict__"]:
            if type(pair) is not list or len(pair) != 2:
                _reject("a dict entry that is not a pair")
            key = _value(pair[0], link, depth + 1)
            if not _hashable(key):
                _reject("a dict key that is not a number, string or tuple")
            result[key] = _value(pair[1], link, depth + 1)
        return result
    if set(node) == {"__float__"} and node["__float__"] in ("nan", "inf", "-inf"):
        return float(node["__float__"])
    if set(node) == {"__tensor__", "shape", "data"}:
        return _tensor(node)
    if set(node) == {"__handle__", "module", "qualname", "callable"}:
        number = node["__handle__"]
        if type(number) is not int or type(node["callable"]) is not bool:
            _reject("a malformed handle")
        kind = remote_type(_name(node["module"], "?"), _name(node["qualname"], "object"))
        return kind(number, link, node["callable"])
    _reject(f"an object with keys {sorted(node)[:5]}")


def _hashable(key):
    if key is None or type(key) in (bool, int, float, str):
        return True
    return type(key) is tuple and all(_hashable(k) for k in key)


def _tensor(node):
    import torch

    dtype, shape = node["__tensor__"], node["shape"]
    if dtype not in DTYPES:
        _reject(f"a tensor of dtype {str(dtype)[:40]}")
    if (
        type(shape) is not list
        or len(shape) > MAX_DIMS
        or any(type(n) is not int or n < 0 for n in shape)
    ):
        _reject("a tensor with a malformed shape")
    if type(node["data"]) is not str:
        _reject("a tensor without its bytes")
    try:
        data = base64.b64decode(node["data"], validate=True)
    except ValueError:
        _reject("a tensor whose bytes are not base64")
    kind = getattr(torch, dtype)
    size = math.prod(shape) * torch.empty((), dtype=kind).element_size()
    if len(data) != size:
        _reject(f"a tensor of shape {shape} with {len(data)} bytes, not {size}")
    if not data:
        return torch.empty(shape, dtype=kind)
    return torch.frombuffer(bytearray(data), dtype=kind).reshape(shape)


def raise_error(reply, own=False):
    """Raise, here, the exception the student's code raised there, or (`own`: the executor's
    reply, not the kernel's) the executor's stop, a GraderStop."""
    __tracebackhide__ = True
    name = _name(reply.get("error"), "Error")
    if own:
        if name not in _stop_types:
            _stop_types[name] = type(name, (GraderStop,), {"__module__": "builtins"})
        # alone: an error of hers in flight (the test's `except` or `with` made this call on its
        # way out) would be chained to it, and shown with it, message and all
        raise _stop_types[name](
            reply.get("message") if isinstance(reply.get("message"), str) else ""
        ) from None
    message = reply.get("message") if isinstance(reply.get("message"), str) else ""
    trace = reply.get("trace") if isinstance(reply.get("trace"), str) else ""
    builtin = getattr(builtins, name, None) if reply.get("builtin") is True else None
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        error = builtin(message)
    else:
        error = error_type(name)(message)
    with contextlib.suppress(AttributeError):
        error._lm10_trace = trace.rstrip()  # shown under the test's traceback
    raise error


# ---------------------------------------------------------------- the trusted process


class Pickler(pickle.Pickler):
    """Arguments for the sandbox: handles by number, the setup's objects by name, tensors as
    compact copies (a view would carry its whole storage). In a room (grading/host/room.py), which
    holds no transformers, a transformers configuration travels as its values and a
    transformers module as its weights (sandbox_agent.Values and weights_only); `answers`,
    the setup's helpers the grader answers for the room ({name: function}), go with every
    configuration as their results for it."""

    def __init__(self, file, shared, room=False, answers=None, sent=None):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared, self.room, self.answers = shared, room, answers or {}
        # {kind: the names transformers' answers}, of every copy made (the room reports
        # those of them her code asked for and the copy lacks: Session.answer)
        self.sent = {} if sent is None else sent
        self.copied = {}  # id -> number: one object met twice is one copy, as it is one object

    def persistent_id(self, obj):
        if isinstance(obj, Remote):
            return ("handle", obj._lm10_number)
        name = self.shared.get(id(obj))
        if name is not None:
            return ("global", name)
        if self.room and _from_transformers(obj):
            # `model.config is model.model.config` is true in transformers: a second copy
            # kept a field she set on the first at its old value
            number = self.copied.get(id(obj))
            if number is not None:
                return ("copy", number, None)
            made = plain_copy(obj, self.answers, self.sent)
            number = self.copied[id(obj)] = len(self.copied) + 1
            return ("copy", number, made)
        return None

    def reducer_override(self, obj):
        torch = sys.modules.get("torch")
        if torch is not None and type(obj) is torch.Tensor and not obj.is_meta:
            copy = obj.detach().clone()
            if copy.untyped_storage().nbytes() < obj.untyped_storage().nbytes():
                return copy.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
        return NotImplemented


PRIMITIVE = (type(None), bool, int, float, complex, str, bytes)


def _from_transformers(obj):
    return type(obj).__module__.split(".")[0] == "transformers"


def _primitive(value):
    if type(value) in PRIMITIVE:
        return True
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.dtype | torch.Size)


def _plain(value):
    """Whether `value` is data a room may hold as it is."""
    return standins.plain(value, leaf=_primitive)


def _answered_names(obj):
    """The public names transformers' `obj` answers (dir), as a room's copy is told them."""
    return sorted(name for name in dir(obj) if not name.startswith("_"))


def _class_data(obj):
    """The plain data of `obj`'s classes from transformers (`base_model_prefix`, a decoder
    layer's `gradient_checkpointing`), the nearest class's first, as an instance reads it."""
    found = {}
    for klass in type(obj).__mro__:
        if klass.__module__.split(".")[0] != "transformers":
            continue
        for name, value in vars(klass).items():
            if (
                not name.startswith("_")
                and name not in found
                and not callable(value)
                and not isinstance(value, classmethod | staticmethod | property)
                and _plain(value)
            ):
                found[name] = value
    return found


def plain_copy(obj, answers=None, sent=None):
    """The persistent id of a transformers object for a room: a configuration as its values
    (its fields and their aliases) and the results of the helpers `answers` on it, a module as
    its parameters, buffers, submodules and plain attributes (its `config` among them), and
    its classes' data; anything else is refused. Each copy is told the names transformers'
    object answers, and `sent` ({kind: names}) records them."""
    torch = sys.modules.get("torch")
    kind = (type(obj).__module__, type(obj).__qualname__)
    names = _answered_names(obj)
    if callable(getattr(obj, "to_dict", None)):  # a configuration
        values = {k: v for k, v in obj.to_dict().items() if _plain(v)}
        results = {name: answer_for(helper, obj) for name, helper in (answers or {}).items()}
        more = _config_answers(obj, values)
        if more["fields"] is not None:  # a dataclass: dataclasses.replace(config) is there
            names.append("dataclasses.replace")
        more["names"] = names
        _record(sent, kind[1], names)
        return ("config", (kind[1], values, results, more))
    if torch is not None and isinstance(obj, torch.nn.Module):
        _record(sent, kind[1], names)
        attributes = {
            k: v
            for k, v in vars(obj).items()
            if not k.startswith("_") and (_plain(v) or _from_transformers(v))
        }
        state = {
            "parameters": dict(obj._parameters),
            "buffers": dict(obj._buffers),
            # kept out of the state dict, as in transformers (a rotary embedding's inv_freq):
            # an honest port's strict load_state_dict(model.state_dict()) raised in the room
            "transient": sorted(obj._non_persistent_buffers_set & obj._buffers.keys()),
            "modules": dict(obj._modules),
            "attributes": attributes,
            "training": obj.training,
            "class_data": _class_data(obj),
            "names": names,
        }
        if _from_transformers(obj) and callable(getattr(obj, "get_input_embeddings", None)):
            state["getters"] = _getters(obj)
        return ("weights", (*kind, state))
    raise pickle.PicklingError(
        f"a {kind[0]}.{kind[1]} cannot enter the sandbox, which holds no transformers"
    )


def _record(sent, kind, names):
    if sent is not None:
        sent.setdefault(kind, set()).update(names)


def _config_answers(config, values):
    """What a configuration answers besides `to_dict()`, for the room's copy
    (sandbox_agent.Values): its fields, aliases (`attribute_map`) and properties as attributes,
    as they are (`config.dtype` is a torch.dtype, where to_dict writes "bfloat16"; `num_labels`,
    `name_or_path`, `use_return_dict`, `rope_scaling` are properties), the fields
    `to_diff_dict()` gives, whether `get_text_config()` is the configuration itself, and the
    keys it iterates over (`"sliding_window" in config`; None: it does not iterate). An
    honest `torch.zeros(n, dtype=config.dtype)` raised in the room where Validate passed."""
    names = [*values, *getattr(type(config), "attribute_map", {})]
    # its properties, and its class's own data (`attribute_map`, `default_theta`,
    # `base_model_tp_plan`), read off the instance in transformers: an AttributeError in the
    # room only (the sixty-fifth hub tester); attributes, never fields of to_dict()
    names += [
        name
        for klass in type(config).__mro__
        for name, value in vars(klass).items()
        if not name.startswith("_")
        and (
            isinstance(value, property)
            or not (callable(value) or isinstance(value, classmethod | staticmethod))
        )
    ]
    # which of those are properties, and whether each has a setter (the copy computes and sets
    # those it knows as transformers does, and flags setting the others: Values.__setattr__)
    properties = {}
    for klass in reversed(type(config).__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, property) and not name.startswith("_"):
                properties[name] = value.fset is not None
            elif name in properties:  # a subclass's plain attribute over its base's property
                del properties[name]
    attributes = {}
    library = logging.getLogger("transformers")  # deprecated aliases warn once as they are read
    level = library.level
    library.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in dict.fromkeys(names):
                try:
                    value = getattr(config, name)
                except Exception:  # noqa: BLE001 (a property that does not apply: none here either)
                    continue
                if _plain(value):
                    attributes[name] = value
            # a GenerationConfig has to_diff_dict, no get_text_config (None: the copy neither)
            diff = text = None
            if callable(getattr(config, "to_diff_dict", None)):
                diff = sorted(k for k in config.to_diff_dict() if k in values)
            if callable(getattr(config, "get_text_config", None)):
                text = config.get_text_config() is config
            # transformers' configurations iterate over their keys: an honest
            # `"kv_lora_rank" in config` raised TypeError in the room (the sixty-third hub tester)
            keys = None
            if callable(getattr(type(config), "__iter__", None)):
                keys = [key for key in config if type(key) is str]
            # transformers 5's configurations are dataclasses: `dataclasses.asdict(config)`
            fields = None
            if dataclasses.is_dataclass(config):
                fields = [field.name for field in dataclasses.fields(config)]
                fields = [name for name in fields if name in attributes or name in values]
    finally:
        library.setLevel(level)
    return {
        "attributes": attributes,
        "diff": diff,
        "text": text,
        "keys": keys,
        "fields": fields,
        "properties": properties,
    }


def _getters(model):
    """A transformers model's ways to its weights that are not attributes, as the room's copy
    answers them (sandbox_agent.weights_only): `get_input_embeddings()` and
    `get_output_embeddings()` as the paths of the submodules they return (None: the model has
    none), `get_decoder()` too ("": the model itself), besides `dtype` and `device`, which the
    copy reads off its own parameters. An honest port reads its token table so (the fifty-sixth
    hub tester: an AttributeError in the room, where Validate passed), and its layers as
    `model.get_decoder().layers` (the sixty-third)."""
    paths = {id(module): name for name, module in model.named_modules(remove_duplicate=False)}
    getters = {}
    for name in ("get_input_embeddings", "get_output_embeddings", "get_decoder"):
        try:
            found = getattr(model, name)()
        except Exception:  # noqa: BLE001 (a model without one: the copy has none either)
            continue
        if found is None or id(found) in paths:
            getters[name] = None if found is None else paths[id(found)]
    with contextlib.suppress(Exception):  # a classmethod, on the class alone
        generates = type(model).can_generate()
        if type(generates) is bool:
            getters["can_generate"] = generates
    return getters


def answer_for(helper, config):
    """A helper's result for `config`, as the room's stand-in returns it: ("value", plain
    data) or ("error", exception name, whether a builtin, message)."""
    try:
        value = helper(config)
    except Exception as error:  # noqa: BLE001 (the stand-in raises it where the student called)
        kind = type(error)
        builtin = getattr(builtins, kind.__name__, None) is kind
        return ("error", kind.__name__, builtin, str(error)[:2000])
    if not _plain(value):
        raise GraderError(
            f"{getattr(helper, '__name__', helper)} gave a {type(value).__name__}: a helper the "
            "grader answers for a room must return plain data"
        )
    return ("value", value)


def make_shell():
    """The IPython shell the tests run in (one per process: the host makes it before it forks
    a session, so each session starts from an empty one without paying for it)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    if InteractiveShell.initialized():
        return InteractiveShell.instance()
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    shell.ast_node_interactivity = "none"  # no execute_result: nbgrader reads it as a score
    with contextlib.suppress(Exception):
        shell.colors = "nocolor"
    return shell


class Session:
    """One submission's tests, in a fork of the trusted host."""

    def __init__(self, channel, setup, students, room=None):
        self.shell = make_shell()
        self.shell._showtraceback = self.record_error
        self.channel, self.students, self.error = channel, list(students), None
        self.off_limits, self.called = [], []  # the running test's declaration; what it met
        # Feedback: once a call made from a hidden line has reached the student's code, what
        # that code computes can carry the hidden inputs. `tainted` says it has happened;
        # `clean` is what of the running test's outputs came before it.
        self.hidden, self.tainted, self.out = set(), False, io.StringIO()
        self.clean, self.stopped = None, False
        for source in setup:
            outputs = self.run(source)
            failed = [o for o in outputs if o["output_type"] == "error"]
            if failed:
                raise GraderError(
                    "the lab's setup failed in the grader: "
                    f"{failed[0]['ename']}: {failed[0]['evalue']}"[:500]
                )
        namespace = self.shell.user_ns
        names = set().union(*(_bound(s) for s in setup)) if setup else set()
        self.originals = {n: namespace[n] for n in names if n in namespace}  # kept alive
        self.shared = {id(v): n for n, v in self.originals.items() if not isinstance(v, PRIMITIVE)}
        self.room, self.answers = room, {}
        # the copies' kinds and the names transformers' answers (Pickler.sent); what of them
        # her code asked a copy for that the copy lacks ("Kind.name", from the room's replies)
        self.sent, self.missed = {}, []
        if room is not None:  # only the room's names exist in the sandbox: the rest by value
            self.shared = {i: n for i, n in self.shared.items() if n in room}
            self.answers = {n: namespace[n] for n in rooms.answered(setup)}
        standins.use_room(self)  # a test's stand-ins are made in the sandbox too

    def plain(self, names):
        """The room's copies of the setup's values `names`: base64 of a pickle of a dict."""
        buffer = io.BytesIO()
        Pickler(buffer, {}, room=True, answers=self.answers, sent=self.sent).dump(
            {n: self.shell.user_ns[n] for n in names}
        )
        return base64.b64encode(buffer.getvalue()).decode()

    def record_error(self, etype, evalue, stb):
        """IPython's error output, without the frames of this module (the call's way into
        the sandbox): the test's own lines are what the student needs to see."""
        kind, value, tb = sys.exc_info()
        if value is evalue and tb is not None:
            node, previous = tb, None
            while node is not None and node.tb_frame.f_code.co_filename != __file__:
                previous, node = node, node.tb_next
            if node is not None and previous is not None:
                previous.tb_next = None
                with contextlib.suppress(Exception):
                    stb = self.shell.InteractiveTB.structured_traceback(kind, value, tb, 1)
        trace = getattr(evalue, "_lm10_trace", "")
        self.stopped = isinstance(evalue, GraderStop)
        self.error = {
            "output_type": "error",
            "ename": getattr(etype, "__name__", "Error"),
            "evalue": str(evalue),
            "traceback": list(stb) + ([f"Raised in your code:\n{trace}"] if trace else []),
        }

    def link(self, request):
        __tracebackhide__ = True
        if not self.tainted and request[0] != "names" and self.from_hidden_line():
            self.tainted = True
            self.clean = {"stdout": len(self.out.getvalue()), "error": False}
        buffer = io.BytesIO()
        Pickler(
            buffer, self.shared, room=self.room is not None, answers=self.answers, sent=self.sent
        ).dump((request, self.off_limits))
        self.channel.send({"call": base64.b64encode(buffer.getvalue()).decode()})
        message = self.channel.receive()
        if "reply" not in message:
            raise GraderError(f"expected the sandbox's reply, got {sorted(message)[:3]}")
        if message.get("own") is True:  # the executor's stop: never the student's words
            try:
                reply = json.loads(message["reply"])
            except (TypeError, ValueError):
                raise GraderError("the sandbox's executor sent back an unreadable stop") from None
            raise_error(reply if isinstance(reply, dict) else {}, own=True)
        return self.answer(message["reply"])

    def answer(self, text):
        __tracebackhide__ = True
        try:
            reply = json.loads(text, parse_constant=lambda c: _reject(f"constant {c}"))
        except (ValueError, RecursionError):
            raise AnswerError("the student's kernel sent back no readable answer") from None
        if not isinstance(reply, dict):
            raise AnswerError("the student's kernel sent back no readable answer")
        if "grader_error" in reply:
            why = str(reply["grader_error"])[:500]
            raise GraderError(f"the sandbox could not guard this test: {why}")
        self.note_missed(reply.pop("room_missed", None))
        called = reply.pop("off_limits", None)
        if called is not None:
            if type(called) is not list or not all(type(n) is str for n in called):
                raise AnswerError("the student's kernel sent back no readable answer")
            # Only a declared name counts: the report never quotes the student's own text.
            known = set(self.off_limits) | set(offlimits.STOPS)
            self.called.extend(n for n in called if n in known and n not in self.called)
            if self.called:
                raise offlimits.OffLimitsError(offlimits.message(self.called[0]))
        if "error" in reply:
            raise_error(self.told(reply))
        if set(reply) != {"value"}:
            raise AnswerError("the student's kernel sent back no readable answer")
        return _value(reply["value"], self.link, 0)

    def note_missed(self, missed):
        """Keep what the room says her code asked a copy for and the copy lacks ([[kind,
        name], ...], see sandbox_agent._lacking): only names of transformers' that a copy of
        this session was told (`sent`), so the report quotes the grader's words, never hers."""
        if missed is None:
            return
        if type(missed) is not list or not all(
            type(p) is list and len(p) == 2 and all(type(x) is str for x in p) for p in missed
        ):
            raise AnswerError("the student's kernel sent back no readable answer")
        for kind, name in missed[:MAX_MISSED]:
            label = f"{kind}.{name}"
            if name in self.sent.get(kind, ()) and label not in self.missed:
                self.missed.append(label)
        del self.missed[MAX_MISSED:]

    def told(self, reply):
        """The student's error `reply`, its message saying so where the student's code reached for
        what the room does not hold (grading/host/room.py: absent)."""
        if self.room is None or not isinstance(reply.get("message"), str):
            return reply
        better = rooms.absent(
            _name(reply.get("error"), "Error"), reply["message"], self.originals, self.room
        )
        return reply if better is None else dict(reply, message=better)

    def stand_in(self, functions):
        """lmcourse.standins' route: the student's earlier functions stood in, in the sandbox."""
        self.link(("stand_in", functions))

    def stand_down(self, names):
        return self.link(("stand_down", list(names)))

    def from_hidden_line(self):
        """Whether the running test cell makes this call from one of its hidden lines: the
        line of the test cell's own frame (module level, in the shell's namespace), wherever
        the test's helpers nest it. A call whose line cannot be found counts as hidden."""
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == "<module>" and frame.f_globals is self.shell.user_ns:
                return frame.f_lineno in self.hidden
            frame = frame.f_back
        return True

    def bind_students(self):
        values = self.link(("names", self.students))
        if type(values) is not dict:
            raise AnswerError("the student's kernel did not list its names")
        for name in self.students:
            if name in values:
                self.shell.user_ns[name] = values[name]
            else:
                self.shell.user_ns.pop(name, None)

    def run(self, source):
        """The outputs of one cell run in this shell, as a kernel would give them."""
        self.error, self.stopped = None, False
        self.out = out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            self.shell.run_cell(source, store_history=True)
        outputs = []
        if out.getvalue():
            outputs.append({"output_type": "stream", "name": "stdout", "text": out.getvalue()})
        if self.error:
            outputs.append(self.error)
        return outputs

    def test(self, source, hidden=()):
        """(outputs, clean) of the test cell `source` whose lines `hidden` (1-based) are
        hidden tests. `clean` says what of the outputs the student may read in feedback:
        {"stdout": characters of the printed text, "error": whether its error} made before a
        hidden input reached the student's code, and "stopped": whether its error is the
        executor's stop (GraderStop: the grader's words, shown whatever came before, where an
        error of the student's code of the same name is not); None when all of them were."""
        self.off_limits, self.called = offlimits.declared(source), []
        self.hidden = set(hidden)
        self.clean = {"stdout": 0, "error": False} if self.tainted else None
        try:
            self.bind_students()
        except Exception as error:  # noqa: BLE001 (the student's kernel did not answer)
            return [frames.error_output(type(error).__name__, str(error))], self.clean
        outputs = self.run(source)
        if self.called:  # the part scores 0, whatever the test did with the error
            stopped = frames.error_output("OffLimitsError", offlimits.message(self.called[0]))
            outputs = [o for o in outputs if o["output_type"] == "stream"] + [stopped]
        elif self.stopped and self.clean is not None:
            self.clean = dict(self.clean, stopped=True)
        return outputs, self.clean


def limit_memory(extra):
    """Cap this process's address space at what it has now plus `extra` bytes: a session
    that a submission's answers make grow past it fails with MemoryError, alone."""
    import resource

    try:
        with open("/proc/self/statm") as handle:
            size = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux (grading in a sandbox needs Linux anyway): no cap
        return
    resource.setrlimit(resource.RLIMIT_AS, (size + extra, size + extra))


def _bound(source):
    from grading.host import submission_checks

    tree = submission_checks.parse(source)
    return submission_checks.bound_names(tree) if tree else set()


def serve():
    """The trusted host: import the lab's modules once (the first frame), then for each
    {"start": {"setup", "students"}} fork a session that answers {"test": source} with
    {"done": outputs} (sending {"call"} frames meanwhile) until {"end"}; {"ended"} follows."""
    reader = os.fdopen(os.dup(0), "rb", buffering=0)
    writer = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # a stray print goes to the log, never into the frames
    channel = frames.Channel(reader, writer)
    imports = channel.receive().get("imports", "")
    with contextlib.suppress(Exception):
        exec(compile(imports, "<lab imports>", "exec"), {"__name__": "lm10_trusted"})
    make_shell()
    # every session reads its setup's names with it
    from grading.host import submission_checks  # noqa: F401

    with contextlib.suppress(ImportError):  # what IPython's tracebacks of failed tests read with
        import stack_data  # noqa: F401

    try:  # the slip rules: lmcourse.slips.hint in the labs' tests names slips on hidden inputs
        from grading import slips
    except ModuleNotFoundError as error:  # not in the course's wheel: grading/slips/__init__.py
        if error.name != "grading.slips":
            raise
    else:
        slips.install()

    channel.send({"ready": True})
    learned = False  # the modules the setup imports itself, imported here once
    while True:
        try:
            message = channel.receive()
        except EOFError:
            return
        start = message.get("start")
        if start is None:
            return
        report_r, report_w = (None, None) if learned else os.pipe()
        before = set(sys.modules)
        # What the host holds (torch, transformers, the lab's modules: some 350,000 objects) is
        # left out of each session's garbage collections: a full one walked them all in every
        # fork (LM10-L3's session: 2.6-2.7 s of CPU against 2.8-3.0 s, measured, warm).
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                limit_memory(SESSION_MEMORY)
                session = Session(channel, start["setup"], start["students"], start.get("room"))
                if report_w is not None:  # before anything of the submission has come in
                    os.close(report_r)
                    with os.fdopen(report_w, "w") as report:
                        report.write("\n".join(sorted(set(sys.modules) - before)))
                channel.send({"started": True})
                while True:
                    message = channel.receive()
                    if "plain" in message:
                        channel.send({"plain": session.plain(message["plain"])})
                    elif "test" in message:
                        outputs, clean = session.test(message["test"], message.get("hidden", ()))
                        channel.send({"done": outputs, "clean": clean, "missed": session.missed})
                    else:
                        break
            except GraderError as error:
                channel.send({"failed": str(error)})
            except BaseException:  # noqa: BLE001
                import traceback

                traceback.print_exc()
                status = 1
            finally:
                os._exit(status)
        if report_r is not None:
            os.close(report_w)
            with os.fdopen(report_r) as report:
                learn(report.read().split())
            learned = True
        _, status = os.waitpid(pid, 0)
        channel.send({"ended": os.waitstatus_to_exitcode(status)})


def learn(modules):
    """Import here the modules that the first session's setup imported itself (a model class
    that transformers imports the first time it is named, as SmolLM2's loader in LM10-L3's
    setup does: 1.7 s of each session, measured with py-spy), so that every later session,
    forked from here, finds them imported. Only the lab's setup has run in that session when
    it names them, nothing of the submission. A module that cannot be imported by its name
    is left to each session, as before."""
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in modules:  # sorted: a package before its modules
            if all(part.isidentifier() for part in name.split(".")):
                with contextlib.suppress(Exception):
                    importlib.import_module(name)


# ---------------------------------------------------------------- the grader's side


class TrustedHost:
    """The grader's handle on one trusted host process (`serve`), warm across submissions."""

    def __init__(self, imports=""):
        self.imports, self.process = imports, None

    def start(self):
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (its traceback, if it fails)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grading.host.trusted_tests", "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            bufsize=0,  # frames go out whole, at once
            start_new_session=True,
        )
        self.channel = frames.Channel(self.process.stdout, self.process.stdin)
        self.channel.send({"imports": self.imports})
        if self.channel.receive() != {"ready": True}:
            raise GraderError("the trusted test process did not start")

    def tail(self):
        """The last lines the host wrote to stderr (a traceback when it failed)."""
        if self.process is None:
            return ""
        self.log.seek(0, os.SEEK_END)
        self.log.seek(max(0, self.log.tell() - 1500))
        lines = self.log.read().decode("utf-8", "replace").strip().splitlines()
        return " | ".join(lines[-3:])

    def close(self):
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.log):
            with contextlib.suppress(OSError):
                stream.close()
        self.process = None

    def open(self, setup, students, deadline=None, room=None):
        """A session for one submission; GraderError when the lab's setup fails here.
        `room`: the setup's names the sandbox holds (grading/host/room.py), or None."""
        if self.process is None or self.process.poll() is not None:
            self.close()
            self.start()
        start = {"setup": list(setup), "students": sorted(students), "room": room}
        self.channel.send({"start": start})
        message = self.channel.receive(deadline)
        if "failed" in message or "ended" in message:
            self.finish(message, deadline)
            raise GraderError(message.get("failed") or "the trusted test process failed")
        return HostSession(self)

    def finish(self, message=None, deadline=None):
        """Wait for the session's end ({"ended"}), whatever came before it."""
        while message is None or "ended" not in message:
            message = self.channel.receive(deadline)


class HostSession:
    def __init__(self, host):
        self.host, self.closed = host, False
        # what her code asked the room's copies for that transformers' objects answer and
        # the copies lack, as of the last test ("Kind.name": Session.note_missed)
        self.missed = []

    def plain(self, names, deadline=None):
        """The room's copies of the setup's values `names` (Session.plain)."""
        self.host.channel.send({"plain": list(names)})
        message = self.host.channel.receive(deadline)
        if not isinstance(message.get("plain"), str):
            self.closed = True
            self.host.finish(message, deadline)
            raise GraderError(f"the trusted test process could not copy the setup's {names}")
        return message["plain"]

    def run(self, source, call, deadline, hidden=()):
        """(outputs, clean) of the test cell `source` (see Session.test; `hidden`: the
        numbers of its hidden lines); `call(payload) -> (reply, own)` reaches the sandbox
        (`own`: the reply is the executor's stop, not the kernel's answer).
        A call that fails on the grader's side (the sandbox stopped) is answered as an error,
        so the test ends in step, and raised here once it has."""
        channel, failure = self.host.channel, None
        channel.send({"test": source, "hidden": sorted(hidden)})
        while True:
            message = channel.receive(deadline)
            if "call" in message:
                try:
                    reply, own = call(message["call"]) if failure is None else (None, True)
                except Exception as error:  # noqa: BLE001 (raised once the test has ended)
                    failure = error
                if failure is not None:
                    reply, own = (
                        json.dumps(
                            {"error": "GraderStopped", "builtin": False, "message": str(failure)}
                        ),
                        True,
                    )
                channel.send({"reply": reply, "own": own is True})
            elif "done" in message:
                missed = message.get("missed")
                if type(missed) is list and all(type(m) is str for m in missed):
                    self.missed = missed[:MAX_MISSED]
                if failure is not None:
                    raise failure
                return message["done"], message.get("clean")
            else:
                self.closed = True
                self.host.finish(message, deadline)
                raise GraderError(
                    f"the trusted test process stopped ({message.get('failed') or message})"
                )

    def close(self, deadline=None):
        if not self.closed:
            self.closed = True
            self.host.channel.send({"end": True})
            self.host.finish(None, deadline)


_warm = None


def warm(imports):
    """Keep one trusted host, with the lab's imports done, for every later session."""
    global _warm
    _warm = TrustedHost(imports)
    return _warm


def cool():
    global _warm
    if _warm is not None:
        _warm.close()
    _warm = None


@contextlib.contextmanager
def session(setup, students, deadline=None, room=None):
    """A session for one submission: in the warm host if there is one, else in a new host
    that ends with it. A session that fails midway takes its host down (a warm one starts
    again for the next submission), so no later submission meets its leftovers."""
    host = _warm or TrustedHost()
    started = time.monotonic()
    clean = False
    try:
        opened = host.open(setup, students, deadline, room)
        yield opened
        with contextlib.suppress(TimeoutError):  # past the deadline: the host is closed below
            opened.close(deadline)
            clean = True
    except (EOFError, OSError, ValueError, TimeoutError) as error:
        raise GraderError(
            f"the trusted test process failed after {time.monotonic() - started:.0f} s: "
            f"{type(error).__name__}: {error} ({host.tail() or 'it wrote nothing'})"
        ) from None
    finally:
        if host is not _warm or not clean:
            host.close()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
