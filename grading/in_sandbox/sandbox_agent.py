"""The student's side of a test: runs in the sandboxed kernel, beside the student's code.

The lab's tests run in a trusted process outside the sandbox (trusted_tests.py). When a test
calls a student's function, the call travels here (`serve`, one cell a test):
`answer(request)` unpickles it (pickle goes one way only, from the grader into the sandbox),
looks up what it names in the notebook's namespace or in this module's table of objects handed
out earlier, makes the call, and replies with the result as plain data (`encode`): None,
booleans, integers, floats, strings, lists, tuples, dicts, and tensors as their dtype, shape
and bytes. Anything else (an object, a module, a function, a subclass of int that claims to
equal everything) stays here; the test receives a handle to it that names its type and can
only be called or have attributes read.

Nothing here is a defence: the student's code shares this process and can change this module
at will. All it can change is its own answers, which the trusted process checks as data.
"""

import _json
import base64
import binascii
import builtins
import contextlib
import ctypes
import dataclasses
import io
import pickle
import sys
import traceback

_objects = {}  # handle number -> object handed to the grader as a handle

# What decodes a call and encodes its reply, as this module found them when it was imported:
# the executor imports it into the kernel before any cell runs (sandbox_exec.fork_kernel). Her
# cells share the standard library's modules with this one, and rebinding one of their
# functions is plain Python (`json.dumps = hers`, `binascii.a2b_base64 = hers`, nothing
# flagged): her json.dumps ran after the off-limits guard, on the reply, and took out the
# names it had stopped (and put in a value the reference computed there); her a2b_base64 ran
# before it, on the call, and renamed the names the test declares (the thirty-third hub
# tester). json's C encoder and binascii's C decoder, taken here, are no module attribute of
# hers to rebind.
_a2b_base64 = binascii.a2b_base64
_BytesIO = io.BytesIO
_make_encoder = _json.make_encoder
_encode_string = _json.encode_basestring_ascii
# A configuration's copy is a dataclass, as transformers 5's configurations are, built from
# these as this module found them: none of her rebinding of dataclasses' names runs while the
# grader's arguments are unpickled.
_Field, _FIELD, _MISSING = dataclasses.Field, dataclasses._FIELD, dataclasses.MISSING


def _not_plain(value):
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _encoded(value, default, encode_string, allow_nan):
    """json.dumps(value, default=..., allow_nan=...) with no indent, keys unsorted, by json's
    C encoder alone; `encode_string` is its ensure_ascii (the C function for str values)."""
    encoder = _make_encoder({}, default, encode_string, None, ": ", ", ", False, False, allow_nan)
    return "".join(encoder(value, 0))


def dumps(value):
    """json.dumps(value) as its defaults write it, by json's C encoder alone."""
    return _encoded(value, _not_plain, _encode_string, True)


# The kernel's session packs and unpacks every message with json's module functions, which her
# cells can rebind too: her json.dumps rewrote the agent's reply in the input request the
# session packed (the call's token kept), her json.loads the call in the input reply it
# unpacked (the thirty-third hub tester). The executor has the kernel's session use these
# (`--Session.packer`), jupyter_client's json_packer and json_unpacker by json's C encoder and
# scanner alone.
_encode_text = _json.encode_basestring


class _Scanning:
    """What json's C scanner reads of its decoder, as json.loads has it."""

    strict, object_hook, object_pairs_hook = True, None, None
    parse_float, parse_int = float, int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}
    parse_constant = parse_constant.__getitem__


_scan = _json.make_scanner(_Scanning())
_BLANK = " \t\n\r"
try:
    from jupyter_client.jsonutil import json_clean as _json_clean
    from jupyter_client.jsonutil import json_default as _json_default
except ImportError:  # not in a kernel: session_pack is not used
    _json_clean = _json_default = _not_plain


def session_pack(value):
    """jupyter_client.session.json_packer(value), by json's C encoder alone."""
    try:
        text = _encoded(value, _json_default, _encode_text, False)
    except (TypeError, ValueError):  # as json_packer: the value made plain first
        text = _encoded(_json_clean(value), _json_default, _encode_text, False)
    return text.encode("utf8", errors="surrogateescape")


def session_unpack(text):
    """jupyter_client.session.json_unpacker(text), by json's C scanner alone."""
    if not isinstance(text, str):
        text = bytes(text).decode("utf8", "replace")
    start = len(text) - len(text.lstrip(_BLANK))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        raise ValueError("Expecting value") from None
    if text[end:].strip(_BLANK):
        raise ValueError("Extra data")
    return value


def _decoded(text):
    """The object pickled in the base64 `text` (the grader's: see _Unpickler)."""
    return _Unpickler(_BytesIO(_a2b_base64(text))).load()


def _namespace():
    return sys.modules["__main__"].__dict__


class _Unpickler(pickle.Unpickler):
    def __init__(self, file):
        super().__init__(file)
        self.copies = {}

    def persistent_load(self, pid):
        kind, *rest = pid
        if kind == "copy":  # one object of transformers, met first (made) or again (None)
            number, made = rest
            if made is not None:
                self.copies[number] = self.persistent_load(made)
            return self.copies[number]
        (key,) = rest
        if kind == "handle":
            return _objects[key]
        if kind == "global":  # a name of the lab's setup cells, as this kernel has it
            return _namespace()[key]
        if kind == "config":  # a transformers configuration, as its values (grading/host/room.py)
            return _values(*key)
        if kind == "weights":  # a transformers module, as its weights
            return weights_only(*key)
        raise pickle.UnpicklingError(f"unknown reference {kind!r}")


def _dtype_names(fields):
    """`fields` as transformers' to_dict writes them: a `dtype` as its name ("bfloat16"), in
    nested dicts too (PreTrainedConfig._dict_torch_dtype_to_str)."""
    written = {}
    for key, value in fields.items():
        if isinstance(value, dict):
            value = _dtype_names(value)
        elif key == "dtype" and value is not None and not isinstance(value, str):
            value = str(value).split(".")[1]
        written[key] = value
    return written


# What her code asked a copy of the room for that transformers' object answers and the copy
# does not hold ([kind, name]), since the last reply: each goes with the next reply, and the
# grader flags the submission for a person (trusted_tests.Session.answer), since an honest
# answer may have lost marks there that Validate, with transformers' own object, gave. Hers to
# change, as everything here: emptied, it hides a flag of her own; filled, it flags her.
_missed = []
MAX_MISSED = 32


def _note_missed(kind, name, names):
    """Record in `_missed` that her code used `name` of a copy of a `kind` that does not answer
    it as transformers' does, where transformers' `kind` answers it (`names`: what it answers,
    sent by the grader); whether it did."""
    if name.startswith("_") or name not in names:
        return False
    if [kind, name] not in _missed and len(_missed) < MAX_MISSED:
        _missed.append([kind, name])
    return True


def _lacking(kind, name, names):
    """The AttributeError of a copy of a `kind` that holds no `name`; recorded in `_missed`
    when transformers' `kind` answers it (see _note_missed)."""
    if not _note_missed(kind, name, names):
        return AttributeError(f"'{kind}' object has no attribute '{name}'")
    return AttributeError(
        f"'{kind}' object has no attribute '{name}' while your code is graded: transformers' "
        f"{kind} has it, the grader's copy of it does not, so this submission is flagged for "
        "your instructor to check by hand"
    )


# transformers 5's PreTrainedConfig properties, which the room held as the values they had when
# the grader pickled the configuration, stale once her code set a field they read (the
# seventieth and seventy-second hub testers). Those that read one field are aliases of it;
# `num_labels` counts `id2label`. Setting one does what transformers' setter does (Values.
# __setattr__), raises as there where it has no setter (`use_return_dict`), and where the copy
# cannot do what the setter does (`rope_scaling`'s standardize_rope_params, `output_attentions`'
# check of the attention, a property of a later transformers), sets the value and is flagged
# for a person (_note_missed). A property the copy does not know is read as its old value.
_PROPERTY_ALIASES = {
    "rope_scaling": "rope_parameters",
    "torch_dtype": "dtype",
    "use_return_dict": "return_dict",
    "name_or_path": "_name_or_path",
}


class Values:
    """A configuration of a library the room does not hold (transformers'), as its values:
    read them as attributes (`config.hidden_size`, `getattr(config, "head_dim", None)`, its
    aliases and properties: `config.dtype` a torch.dtype, `config.num_labels`), or with
    `to_dict()` and `to_diff_dict()` as transformers writes them; it iterates over the keys
    transformers' does (`"kv_lora_rank" in config`). `results`: what the helpers
    the grader answers gave for it; `more`: what trusted_tests._config_answers read off it."""

    def __init__(self, kind=None, values=None, results=None, more=None, **fields):
        if kind is None or fields:  # dataclasses.replace(config, ...)
            made = getattr(type(self), "_lm10_key", ("configuration",))[0]
            _lacking(made, "dataclasses.replace", ("dataclasses.replace",))
            raise TypeError(
                "while your code is graded, a configuration is not built again "
                "(dataclasses.replace): copy it with copy.deepcopy and set its fields"
            )
        more = more or {}
        attributes = more.get("attributes", {})
        # an alias reads and sets the field it names, as transformers' __getattribute__ and
        # __setattr__ map it (GPT-2's `hidden_size` is `n_embd`): held apart, it went stale
        aliases = attributes.get("attribute_map")
        aliases = {
            k: v
            for k, v in (aliases.items() if isinstance(aliases, dict) else ())
            if type(k) is str and type(v) is str and k != v
        }
        # and transformers' properties that read and set a field (`rope_scaling` is
        # `rope_parameters`, `torch_dtype` is `dtype`): held as values, they went stale too
        aliases.update(
            (k, v)
            for k, v in _PROPERTY_ALIASES.items()
            if k in attributes and v in (values or {}) and k not in aliases
        )
        # transformers' properties, each with whether it has a setter
        properties = more.get("properties")
        properties = {
            k: v
            for k, v in (properties.items() if isinstance(properties, dict) else ())
            if type(k) is str and type(v) is bool
        }
        computed = {"num_labels"} if "num_labels" in attributes and "id2label" in values else set()
        attributes = {k: v for k, v in attributes.items() if k not in aliases and k not in computed}
        self._lm10_properties = properties
        self._lm10_computed = frozenset(computed)
        self.__dict__.update(values)
        self.__dict__.update(attributes)
        self._lm10_aliases = aliases
        # to_dict() writes the library's version, whatever the attribute holds (None)
        self._lm10_version = values.get("transformers_version")
        self._lm10_kind = kind
        self._lm10_only_attributes = frozenset(attributes) - frozenset(values)
        self._lm10_diff = more.get("diff")
        self._lm10_text = more.get("text")
        self._lm10_keys = more.get("keys")
        self._lm10_given = (self.to_dict(), dict(results or {}))
        self._lm10_names = frozenset(more.get("names", ()))
        self._lm10_held = frozenset(vars(self))

    def __getattr__(self, name):
        """An alias, or a name it does not hold (see _lacking)."""
        held = vars(self)
        aliases = held.get("_lm10_aliases", {})
        if name in aliases:
            return getattr(self, aliases[name])
        if name in held.get("_lm10_computed", ()):  # num_labels, as transformers counts it
            return len(self.id2label) if self.id2label is not None else None
        raise _lacking(held.get("_lm10_kind", "configuration"), name, held.get("_lm10_names", ()))

    def __setattr__(self, name, value):
        """A field, or one of transformers' properties, set as transformers' setter does (see
        _PROPERTY_ALIASES)."""
        held = vars(self)
        setter = held.get("_lm10_properties", {}).get(name)
        kind = held.get("_lm10_kind", "configuration")
        if setter is False:
            raise AttributeError(f"property '{name}' of '{kind}' object has no setter")
        if name in held.get("_lm10_computed", ()):
            if self.id2label is None or self.num_labels != value:
                self.id2label = {i: f"LABEL_{i}" for i in range(value)}
                self.label2id = {label: i for i, label in self.id2label.items()}
            return
        if name == "name_or_path" and "name_or_path" in held.get("_lm10_aliases", {}):
            value = str(value)
        elif (
            setter
            and name not in ("torch_dtype", "name_or_path")
            and (name != "rope_scaling" or value is not None)
        ):
            _note_missed(kind, name, held.get("_lm10_names", ()))
        object.__setattr__(self, held.get("_lm10_aliases", {}).get(name, name), value)

    def update(self, config_dict):
        """As transformers' PreTrainedConfig.update: each key set as an attribute."""
        for key, value in config_dict.items():
            setattr(self, key, value)

    def to_json_string(self, use_diff=True):
        """As transformers' PreTrainedConfig.to_json_string (its _encode_special_floats too)."""
        import json
        import math

        def special(value):
            if isinstance(value, float):
                if math.isnan(value):
                    return {"__float__": "NaN"}
                if value in (math.inf, -math.inf):
                    return {"__float__": "Infinity" if value > 0 else "-Infinity"}
                return value
            if isinstance(value, dict):
                return {k: special(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [special(v) for v in value]
            return value

        fields = self.to_diff_dict() if use_diff is True else self.to_dict()
        return json.dumps(special(fields), indent=2, sort_keys=True) + "\n"

    def __iter__(self):
        """Its keys, as transformers' configuration iterates over them (`"sliding_window" in
        config`), with those set since and without those deleted."""
        if self._lm10_keys is None:
            raise TypeError(f"'{self._lm10_kind}' object is not iterable")
        now = vars(self)
        kept = [k for k in self._lm10_keys if k in now or k not in self._lm10_held]
        added = [
            k
            for k in now
            if k not in self._lm10_held and k not in self._lm10_keys and not k.startswith("_lm10_")
        ]
        return iter(kept + added)

    def to_dict(self):
        fields = {
            k: v
            for k, v in vars(self).items()
            if not k.startswith("_lm10_") and k not in self._lm10_only_attributes
        }
        if self._lm10_version is not None:
            fields["transformers_version"] = self._lm10_version
        return _dtype_names(fields)

    def to_diff_dict(self):
        """The fields transformers' to_diff_dict gave, and any changed since."""
        if self._lm10_diff is None:
            raise AttributeError(f"{self._lm10_kind} has no to_diff_dict")
        given, absent = self._lm10_given[0], object()
        return {
            k: v
            for k, v in self.to_dict().items()
            if k in self._lm10_diff or given.get(k, absent) != v
        }

    def get_text_config(self, decoder=None, encoder=None):
        if self._lm10_text is None:
            raise AttributeError(f"{self._lm10_kind} has no get_text_config")
        if not self._lm10_text:
            raise AttributeError(
                f"{self._lm10_kind} keeps its text configuration nested: while your code is "
                "graded, read its fields from the configuration the lab's tests give"
            )
        return self

    def __repr__(self):
        shown = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"{self._lm10_kind}(values only: {shown})"


_dataclass_types = {}


def _values(kind, values, results=None, more=None):
    """The room's copy of a configuration: a Values, and a dataclass of the fields transformers'
    is a dataclass of (`more["fields"]`), so that `dataclasses.asdict(config)` and
    `dataclasses.fields(config)` answer as they do on transformers' (the sixty-third hub tester:
    TypeError in the room only). `dataclasses.replace` builds no copy here, and says so."""
    fields = (more or {}).get("fields")
    if fields is None:
        return Values(kind, values, results, more)
    key = (kind, tuple(fields))
    if key not in _dataclass_types:
        table = {}
        for name in fields:
            field = _Field(_MISSING, _MISSING, True, True, None, True, None, False)
            field.name, field.type, field._field_type = name, object, _FIELD
            table[name] = field
        namespace = {
            "__dataclass_fields__": table,
            "_lm10_key": key,
            "__reduce__": _reduce,
            # as the dataclass's own: equal fields of the same kind, and unhashable
            "__eq__": _dataclass_eq,
            "__hash__": None,
        }
        made = type(kind.rsplit(".", 1)[-1], (Values,), namespace)
        made.__qualname__ = kind
        _dataclass_types[key] = made
    made = _dataclass_types[key].__new__(_dataclass_types[key])
    Values.__init__(made, kind, values, results, more)
    return made


def _dataclass_eq(self, other):
    """As a dataclass compares (transformers 5's configurations are): `config == other` was
    identity in the room, where transformers compares the fields."""
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = type(self).__dataclass_fields__
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _reduce(self):
    """A dataclass copy, pickled or copied as a Values is: its class by what made it."""
    return (_dataclass_copy, (type(self)._lm10_key,), dict(vars(self)))


def _dataclass_copy(key):
    kind, fields = key
    if key not in _dataclass_types:
        _values(kind, {}, more={"fields": list(fields)})
    return _dataclass_types[key].__new__(_dataclass_types[key])


_weight_types = {}


def weights_only(module, qualname, state):
    """A module of a library the room does not hold, rebuilt as a torch module that holds its
    weights, buffers, submodules and plain attributes, under its own name; its forward is not
    there (calling it raises NotImplementedError: it is what the lab asks you to write)."""
    import torch

    key = (module, qualname)
    if key not in _weight_types:

        def forward(self, *args, **kwargs):
            raise NotImplementedError(
                f"{qualname} (from {module}) is here as its weights only while your code is "
                "graded: its forward is what this lab asks you to write, from those weights"
            )

        def __getattr__(self, name):
            """torch's, then a name it does not hold (see _lacking)."""
            try:
                return torch.nn.Module.__getattr__(self, name)
            except AttributeError:
                pass
            names = vars(self).get("_lm10_names", ())
            raise _lacking(qualname, name, names) from None

        methods = {"forward": _ACTIVATIONS.get(key, forward), "__getattr__": __getattr__}
        # its classes' own data, as transformers' reads off the instance
        # (`base_model_prefix`, a decoder layer's `gradient_checkpointing`)
        methods.update(state.get("class_data", {}))
        if "getters" in state:  # a transformers model (trusted_tests._getters)
            methods.update(_model_getters())
        kind = type(qualname.rsplit(".", 1)[-1], (torch.nn.Module,), methods)
        kind.__qualname__ = qualname
        kind.__module__ = f"{module} (weights only)"
        _weight_types[key] = kind
    made = _weight_types[key].__new__(_weight_types[key])
    torch.nn.Module.__init__(made)
    for name, value in state["parameters"].items():
        made.register_parameter(name, value)
    transient = set(state.get("transient", ()))
    for name, value in state["buffers"].items():
        made.register_buffer(name, value, persistent=name not in transient)
    for name, value in state["modules"].items():
        made.add_module(name, value)
    for name, value in state["attributes"].items():
        setattr(made, name, value)
    made.train(state["training"])
    if "getters" in state:
        made._lm10_getters = dict(state["getters"])
    made._lm10_names = frozenset(state.get("names", ()))
    return made


def _silu(self, input):
    import torch

    return torch.nn.functional.silu(input)


def _new_gelu(self, input):
    import math

    import torch

    return (
        0.5
        * input
        * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))
    )


# transformers' activations of no weights, each a formula of torch's, as transformers'
# forward computes it: a Llama MLP's `act_fn` (SiLUActivation in transformers 5) raised
# NotImplementedError in the room, where an honest port's `mlp.act_fn(gate) * up` passed
# Validate (the sixty-first hub tester). Her call is judged by the guard as hers, as there.
_ACTIVATIONS = {
    ("transformers.activations", "SiLUActivation"): _silu,
    ("transformers.activations", "NewGELUActivation"): _new_gelu,
}


def _model_getters():
    """What a transformers model answers about its weights besides its attributes: its token
    table, output projection and decoder (by the paths the grader sent), its dtype and device
    (those of its first floating-point parameter, as transformers reads them), and its
    parameter count."""

    def getter(name):
        def get(self):
            path = self._lm10_getters.get(name, _ABSENT)
            if path is _ABSENT:
                raise AttributeError(f"{type(self).__qualname__} has no {name} while graded")
            return None if path is None else self.get_submodule(path)

        get.__name__ = get.__qualname__ = name
        return get

    def first(self):
        held = [*self.parameters(), *self.buffers()]
        return next((p for p in held if p.is_floating_point()), held[0] if held else None)

    def dtype(self):
        found = first(self)
        if found is None:
            raise AttributeError(f"{type(self).__qualname__} holds no weights")
        return found.dtype

    def device(self):
        found = first(self)
        if found is None:
            raise AttributeError(f"{type(self).__qualname__} holds no weights")
        return found.device

    def num_parameters(self, only_trainable=False, exclude_embeddings=False):
        """As transformers counts them (ModuleUtilsMixin.num_parameters)."""
        import torch

        embeddings = {
            f"{name}.weight"
            for name, module in self.named_modules()
            if isinstance(module, torch.nn.Embedding)
        }
        return sum(
            p.numel()
            for name, p in self.named_parameters()
            if not (exclude_embeddings and name in embeddings)
            and (p.requires_grad or not only_trainable)
        )

    def base_model(self):
        """As transformers' PreTrainedModel.base_model (its class's `base_model_prefix`)."""
        return getattr(self, getattr(type(self), "base_model_prefix", ""), self)

    def get_memory_footprint(self, return_buffers=True):
        """As transformers' PreTrainedModel.get_memory_footprint: the bytes of its tensors."""
        held = [*self.parameters(), *(self.buffers() if return_buffers else ())]
        return sum(t.nelement() * t.element_size() for t in held)

    def can_generate(self):
        found = self._lm10_getters.get("can_generate")
        if found is None:
            raise AttributeError(f"{type(self).__qualname__} has no can_generate while graded")
        return found

    def get_parameter_or_buffer(self, target):
        """As transformers' PreTrainedModel.get_parameter_or_buffer (no extra state here)."""
        for get in (self.get_parameter, self.get_buffer):
            try:
                return get(target)
            except AttributeError:
                pass
        raise AttributeError(f"`{target}` is neither a parameter, buffer, nor extra state.")

    return {
        "get_input_embeddings": getter("get_input_embeddings"),
        "get_output_embeddings": getter("get_output_embeddings"),
        "get_decoder": getter("get_decoder"),
        "dtype": property(dtype),
        "device": property(device),
        "num_parameters": num_parameters,
        "base_model": property(base_model),
        "get_memory_footprint": get_memory_footprint,
        "can_generate": can_generate,
        "get_parameter_or_buffer": get_parameter_or_buffer,
    }


_ABSENT = object()


def answered(name):
    """The room's stand-in for the setup helper `name`, which the grader answers (grading/
    room.py): it returns the result the trusted process computed for the configuration it
    is given, as the grader handed that configuration over."""

    def helper(config):
        given = getattr(config, "_lm10_given", None) if isinstance(config, Values) else None
        if given is None:
            raise TypeError(
                f"while your code is graded, {name} answers only for a configuration the "
                f"lab's tests give it; it got a {type(config).__name__}"
            )
        values, results = given
        current, absent = config.to_dict(), object()
        changed = sorted(
            k
            for k in values.keys() | current.keys()
            if current.get(k, absent) != values.get(k, absent)
        )
        if changed:
            raise ValueError(
                f"while your code is graded, {name} answers for the configurations the lab's "
                f"tests give, as given; this one was changed ({', '.join(changed[:5])}): "
                "call it before changing a field, or on an unchanged configuration"
            )
        if name not in results:
            raise RuntimeError(f"the grader sent no result of {name} for this configuration")
        kind, *rest = results[name]
        if kind == "value":
            return rest[0]
        error, builtin, message = rest
        kind = getattr(builtins, error, None) if builtin else None
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            kind = type(error, (Exception,), {})
        raise kind(message)

    helper.__name__ = helper.__qualname__ = name
    helper.__doc__ = f"{name}, answered by the grader while your code is graded."
    return helper


_in_room = False  # the lab declares a room (grading/host/room.py): its references are not here


def enter_room(text=None, helpers=()):
    """The lab's setup, as a room runs it, ends here: bind the plain copies of its setup
    values in the notebook's namespace (`text`: the base64 of a pickle of {name: value} from
    the trusted process, or None when the room holds no such value), and the stand-ins of
    the setup's helpers the grader answers (`helpers`: their names)."""
    global _in_room
    _in_room = True
    namespace = _namespace()
    if text is not None:
        values = _decoded(text)
        namespace.update(values)
    for name in helpers:
        namespace[name] = answered(name)


def _handle(value):
    number = len(_objects) + 1
    _objects[number] = value
    kind = type(value)
    # a class's __module__ is any object its maker gave (namedtuple's or make_dataclass's
    # module=, passed by ** too): str() of hers would run her __str__ here, in the names
    # request, with no guard armed; only a str is read (the seventy-second hub tester)
    module = getattr(kind, "__module__", "")
    return {
        "__handle__": number,
        "module": module if type(module) is str else "",
        "qualname": str(getattr(kind, "__qualname__", kind.__name__)),
        "callable": callable(value),
    }


def encode(value, depth=0):
    """`value` as JSON-ready plain data; what is not plain data becomes a handle."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return (
            value
            if value == value and value not in (float("inf"), float("-inf"))
            else {"__float__": repr(value)}
        )
    if depth > 32:
        return _handle(value)
    if kind is list:
        return [encode(v, depth + 1) for v in value]
    if kind is tuple:
        return {"__tuple__": [encode(v, depth + 1) for v in value]}
    if kind is dict:
        return {
            "__dict__": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]
        }
    torch = sys.modules.get("torch")
    if torch is not None and kind is torch.Size:  # a tuple of ints, as the tests compare it
        return {"__tuple__": [int(n) for n in value]}
    if torch is not None and kind in (torch.Tensor, torch.nn.Parameter):
        tensor = value.detach().cpu().contiguous()
        size = tensor.numel() * tensor.element_size()
        data = ctypes.string_at(tensor.data_ptr(), size) if size else b""
        return {
            "__tensor__": str(tensor.dtype).removeprefix("torch."),
            "shape": list(tensor.shape),
            "data": base64.b64encode(data).decode(),
        }
    return _handle(value)


_stood = {}  # name -> the student's own value, while a stand-in takes its place
_ABSENT = object()


def stand_in(functions):
    """While a later part's test runs, the student's earlier functions named in `functions`
    ({name: (parameters, [[arguments, value], ...])}, plain data from the trusted process) are
    stood in by lmcourse.standins.StandIn: the right values for the test's own calls, no
    formula. The student's own are kept, and put back by stand_down."""
    from lmcourse.standins import StandIn

    namespace = _namespace()
    made = {name: StandIn(name, listed, rows) for name, (listed, rows) in functions.items()}
    for name, standing in made.items():
        if name not in _stood:
            _stood[name] = namespace.get(name, _ABSENT)
        namespace[name] = standing


def stand_down(names):
    """The student's own functions `names` back; {name: calls its stand-in answered}."""
    namespace, calls = _namespace(), {}
    for name in names:
        if name not in _stood:
            continue
        standing, before = namespace.get(name), _stood.pop(name)
        calls[name] = getattr(standing, "calls", 0) if type(standing).__name__ == "StandIn" else 0
        if before is _ABSENT:
            namespace.pop(name, None)
        else:
            namespace[name] = before
    return {k: v if type(v) is int else 0 for k, v in calls.items()}


def _run(request):
    kind = request[0]
    if kind == "names":  # the current value (or a handle) of each name, absent ones left out
        namespace = _namespace()
        return {"__dict__": [[n, encode(namespace[n])] for n in request[1] if n in namespace]}
    if kind == "stand_in":
        return encode(stand_in(request[1]))
    if kind == "stand_down":
        return encode(stand_down(request[1]))
    target = _objects[request[1]]
    if kind == "call":
        return encode(target(*request[2], **request[3]))
    if kind == "getattr":
        return encode(getattr(target, request[2]))
    raise ValueError(f"unknown request {kind!r}")


def _error(error):
    try:
        kind = type(error)
        frames = [
            f
            for f in traceback.extract_tb(error.__traceback__)
            if not f.filename.endswith("sandbox_agent.py")
        ]
        return {
            "error": str(kind.__qualname__),
            "builtin": getattr(builtins, kind.__name__, None) is kind,
            "message": str(error)[:4000],
            "trace": "".join(traceback.format_list(frames[-6:]))[:4000],
        }
    except BaseException:  # noqa: BLE001 (an exception whose str() fails)
        return {"error": "Error", "builtin": False, "message": "(an error that cannot be shown)"}


class GuardUnavailable(Exception):
    """The lab declares a name off limits that this kernel cannot find: the grader's fault."""


# Whether the kernel is alone in a PID namespace of the grader's (sandbox_exec.own_namespaces,
# set by sandbox_exec.fork_kernel): then every other process of the sandbox but the kernel's
# ancestors is one of hers, and one alive during a call stops it (offlimits.PROGRAM).
ALONE = False


def _guard(names):
    try:
        from lmcourse.offlimits import Guard

        # In a room, a declared reference that is not here needs no guard: it cannot be called.
        guard = Guard(names, _namespace(), boundary=(__file__,), missing_ok=_in_room, alone=ALONE)
    except Exception as error:  # noqa: BLE001 (reported as the grader's failure, not the student's)
        raise GuardUnavailable(f"off-limits names {names}: {error}"[:500]) from None
    return guard if guard.guards_anything else contextlib.nullcontext()


def serve(token, text):
    """A test's calls, in the one cell the executor runs for the test (sandbox_exec.run_test):
    answer `text`, the first call, then send the reply as the prompt of an input request on
    the kernel's stdin channel, whose answer is the next call, until the end of input. Each
    call comes with a token of its own (random, from the executor), and its reply goes back
    with it: an input request without the call's token is not the agent's. The student's own
    input requests are refused for the whole cell (the kernel's StdinNotImplementedError, as
    in her cells, which run without stdin): one would have sent her text as the call's reply,
    without the names the guard stopped. The agent's own request does not pass the kernel's
    check (`ask`): with stdin allowed while it was sent, her code that runs inside it (her
    sys.stdout's flush, which the kernel calls first) sent her replies with the first call's
    token (read from the cell's source) and every later one's (the thirty-second hub tester)."""
    import linecache

    from IPython import get_ipython

    # the cell's source holds the first call's token: out of linecache, where tracebacks and
    # warnings of hers read it (traceback.extract_stack()[-n].line: the thirty-second tester)
    linecache.cache.pop(sys._getframe(1).f_code.co_filename, None)
    kernel = get_ipython().kernel
    # and out of the message that asked for it, which the kernel keeps in a context variable:
    # contextvars.copy_context() lists it, nothing flagged (the thirty-third hub tester). The
    # kernel read the code from it before the cell ran, and replies with its header alone.
    content = kernel.get_parent("shell").get("content")
    if isinstance(content, dict):
        content["code"] = ""
    while True:
        kernel._allow_stdin = False  # what ipykernel's input(), getpass() and raw_input() read
        reply = answer(text)
        kernel._allow_stdin = False  # and stays so while the agent's own request goes
        try:
            token, _, text = ask(kernel, f"{token} {reply}").partition(" ")
        except EOFError:  # the test is over
            return


def ask(kernel, prompt):
    """The kernel's raw_input(prompt), less its check that stdin is allowed."""
    if hasattr(kernel, "_shell_parent_ident"):  # ipykernel 7
        ident = kernel._get_shell_context_var(kernel._shell_parent_ident)
    else:  # ipykernel 6
        ident = kernel._parent_ident["shell"]
    return kernel._input_request(prompt, ident, kernel.get_parent("shell"), password=False)


def answer(text):
    """The reply, as JSON text, to one request (base64 of a pickle of the request and the
    names the running test declares off limits); the names that were called anyway go with
    it, whatever the student's code did with the error."""
    reply = _answer(text)
    try:
        return dumps(reply)
    except (TypeError, ValueError, RecursionError) as error:
        return dumps({"error": "EncodeError", "builtin": False, "message": str(error)})


def _answer(text):
    guard = contextlib.nullcontext()
    try:
        request, off_limits = _decoded(text)
        if off_limits and request[0] not in ("names", "stand_in", "stand_down"):  # no call
            guard = _guard(off_limits)
    except GuardUnavailable as error:
        reply = {"grader_error": str(error)}
    except BaseException as error:  # noqa: BLE001 (every failure of the student's code is an answer)
        reply = _error(error)
    else:
        try:
            with guard:
                try:
                    reply = {"value": _run(request)}
                except BaseException as error:  # noqa: BLE001 (as above)
                    # under the guard: her error's __str__ and the traceback module's functions
                    # (hers to rebind) run here too
                    reply = _error(error)
        except BaseException as error:  # noqa: BLE001 (as above)
            reply = _error(error)
        if getattr(guard, "lost", False) and not guard.fired and "value" in reply:
            # her code ran on without the guard (it recursed to Python's limit, which unset the
            # guard's hook: the thirty-third hub tester); an error of hers, an honest recursion's
            # among them, fails the test anyway, and says so
            # (a program her code started, torch.compile's compiler among them, says so)
            guard.fired.append(guard.lost_as)
        if getattr(guard, "fired", None):
            reply["off_limits"] = list(guard.fired)
    if _missed:  # since the last reply: in this call or in her cells before it
        reply["room_missed"] = _missed[:MAX_MISSED]
        _missed[:] = []
    return reply
