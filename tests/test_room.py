"""grading/host/room.py and the plain copies a room receives, without a sandbox: fast.

What a lab's setup declares the student's (`# Yours while graded: ...`), what of the setup a
room runs, and how the trusted process's objects arrive there: a transformers configuration as
its values, a transformers model as its weights (torch's own modules as they are), nothing of
transformers needed to read them (sandbox_agent's unpickler)."""

import base64
import copy as copy_module
import io
import pickle
import subprocess
import sys
import types
import warnings
from pathlib import Path

import nbformat
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from grading.host import room, submission_checks, trusted_tests
from grading.in_sandbox import sandbox_agent

ROOT = Path(__file__).resolve().parents[1]


def setup_sources(lab):
    nb = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    return [c.source for c in nb.cells if submission_checks.is_setup(c)]


LABS = sorted(p.name for p in (ROOT / "solutions").glob("LM10-L*"))
ROOMS = [lab for lab in LABS if room.declared(setup_sources(lab)) is not None]


def test_every_lab_has_a_room():
    assert ROOMS == LABS


def test_the_helpers_the_grader_answers():
    """L6's students call the setup's attention_parameters, which builds a transformers layer:
    the room holds a stand-in, and the trusted process sends its results with each
    configuration."""
    setup = setup_sources("LM10-L6")
    assert room.answered(setup) == ["attention_parameters"]
    sources, shipped = room.sandbox_setup(setup, room.declared(setup))
    assert (
        "attention_parameters" not in "\n".join(sources) and "attention_parameters" not in shipped
    )
    for lab in LABS:
        if lab != "LM10-L6":
            assert room.answered(setup_sources(lab)) == []
    lone = ["# Answered by the grader while graded: f\ndef f(config):\n    return 1\n"]
    with pytest.raises(room.RoomError, match="but no room"):
        room.answered(lone)
    with pytest.raises(room.RoomError, match="do not define as functions: g|g, which"):
        room.answered(
            ["# Yours while graded: x\n# Answered by the grader while graded: g\nx = 1\n"]
        )
    with pytest.raises(room.RoomError, match="both the student's and answered"):
        room.sandbox_setup(["# Yours while graded: f\n" + lone[0]], ["f"])


def test_an_answered_helper_in_the_room():
    """The stand-in returns what the trusted process computed for the configuration it was
    given, raises the helper's own error where the helper raised, and refuses a configuration
    the student changed or made: it never answers for what the grader did not see."""

    def width(config):
        if config.hidden_size > 1000:
            raise ValueError("too wide for this helper")
        return 3 * config.hidden_size

    def through(config):
        buffer = io.BytesIO()
        trusted_tests.Pickler(buffer, {}, room=True, answers={"width": width}).dump(config)
        return sandbox_agent._Unpickler(io.BytesIO(buffer.getvalue())).load()

    helper = sandbox_agent.answered("width")
    small = through(LlamaConfig(hidden_size=64, num_attention_heads=4))
    assert helper(small) == 192 and type(helper(small)) is int
    assert "_lm10_given" not in small.to_dict() and small.to_dict()["hidden_size"] == 64
    with pytest.raises(ValueError, match="too wide for this helper"):
        helper(through(LlamaConfig(hidden_size=2048)))
    small.hidden_size = 96
    with pytest.raises(ValueError, match=r"was changed \(hidden_size\)"):
        helper(small)
    with pytest.raises(TypeError, match="answers only for a configuration the lab's tests give"):
        helper(LlamaConfig(hidden_size=64))
    with pytest.raises(trusted_tests.GraderError, match="must return plain data"):
        trusted_tests.answer_for(lambda config: object(), small)


@pytest.mark.parametrize("lab", ROOMS)
def test_a_room_holds_no_reference_of_its_lab(lab):
    """Whatever a room runs imports nothing of transformers or the course library, defines
    only what it declares, and every declared name is there (imported, defined or shipped)."""
    setup = setup_sources(lab)
    names = room.declared(setup)
    sources, shipped = room.sandbox_setup(setup, names)
    code = "\n".join(sources)
    assert "transformers" not in code and "lmcourse" not in code, code
    bound = set().union(
        *(submission_checks.bound_names(submission_checks.parse(s)) for s in sources)
    )
    assert set(names) <= bound | set(shipped), set(names) - bound - set(shipped)
    assert bound <= set(names) | {"os", "warnings"}, bound - set(names)


def test_the_declaration_and_its_mistakes():
    setup = ["# Yours while graded: torch, model\nimport torch\nmodel = make()\nimport lmcourse\n"]
    assert room.declared(setup) == ["torch", "model"]
    assert room.declared(["import torch\n"]) is None
    assert room.sandbox_setup(setup, ["torch", "model"]) == (["import torch"], ["model"])
    with pytest.raises(room.RoomError, match="declares ghost, which the setup cells"):
        room.sandbox_setup(setup, ["torch", "ghost"])
    with pytest.raises(room.RoomError, match="does not parse"):
        room.sandbox_setup(["def (:\n"], ["x"])


def through_the_room(value, sent=None):
    """`value` as the trusted process pickles it for a room and the agent unpickles it
    (`sent`: filled with the names each copy was told transformers' object answers)."""
    buffer = io.BytesIO()
    trusted_tests.Pickler(buffer, {}, room=True, sent=sent).dump(value)
    text = base64.b64encode(buffer.getvalue()).decode()
    return sandbox_agent._Unpickler(io.BytesIO(base64.b64decode(text))).load()


def tiny_llama():
    config = LlamaConfig(
        vocab_size=31,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=4,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


def test_a_configuration_arrives_as_its_values():
    config = tiny_llama().config
    values = through_the_room(config)
    for field in (
        "hidden_size",
        "num_key_value_heads",
        "head_dim",
        "rms_norm_eps",
        "rope_parameters",
    ):
        assert getattr(values, field) == getattr(config, field), field
    assert getattr(values, "sliding_window", "absent") == getattr(
        config, "sliding_window", "absent"
    )
    assert "transformers" not in type(values).__module__
    assert values.to_dict()["vocab_size"] == 31 and "LlamaConfig(values only" in repr(values)


def test_a_model_arrives_as_its_weights_and_torch_modules_as_they_are():
    model = tiny_llama()
    copy = through_the_room(model)
    mine, theirs = dict(copy.named_parameters()), dict(model.named_parameters())
    assert mine.keys() == theirs.keys()
    assert all(torch.equal(mine[k], theirs[k]) for k in theirs)
    assert copy.config.num_attention_heads == 4 and copy.model.layers[1].self_attn.head_dim == 4
    assert type(copy.model.layers[0]).__qualname__ == "LlamaDecoderLayer"
    assert type(copy.model.layers[0].self_attn.q_proj) is torch.nn.Linear  # torch's own, callable
    x = torch.randn(1, 3, 16)
    assert torch.equal(
        copy.model.layers[0].self_attn.q_proj(x), model.model.layers[0].self_attn.q_proj(x)
    )
    with pytest.raises(NotImplementedError, match="weights only"):
        copy.model.layers[0](x)
    with pytest.raises(NotImplementedError, match="weights only"):
        copy(torch.tensor([[1, 2]]))


def test_a_model_in_the_room_answers_for_its_weights_as_transformers_does():
    """An honest port reads its token table with `model.get_input_embeddings()`, the head with
    `get_output_embeddings()`, and makes tensors with `model.dtype` and `model.device`: each
    passed Validate and raised AttributeError in the room, the part scoring 0 (the fifty-sixth
    hub tester). The layers hold none of them, in the room as in transformers."""
    model = tiny_llama()
    copy = through_the_room(model)
    ids = torch.tensor([[1, 2, 3]])
    assert torch.equal(copy.get_input_embeddings()(ids), model.get_input_embeddings()(ids))
    assert copy.get_input_embeddings() is copy.model.embed_tokens
    assert torch.equal(copy.get_output_embeddings().weight, model.lm_head.weight)
    assert copy.model.get_input_embeddings() is copy.model.embed_tokens
    assert (copy.dtype, copy.device) == (model.dtype, model.device)
    assert copy.model.dtype == model.model.dtype
    for name in ("dtype", "device", "get_input_embeddings"):
        assert not hasattr(model.model.layers[0], name)
        assert not hasattr(copy.model.layers[0], name)


def test_a_configuration_in_the_room_answers_as_transformers_does():
    """The room's copy held `to_dict()`'s values: `config.dtype` was the string "bfloat16"
    where transformers gives torch.bfloat16 (an honest `torch.zeros(n, dtype=config.dtype)`
    passed Validate and raised in the room), and the properties (`num_labels`,
    `name_or_path`, `use_return_dict`, `torch_dtype`, `rope_scaling`), `to_diff_dict()`,
    `get_text_config()` and the model's `num_parameters()` raised AttributeError (the
    fifty-sixth and sixty-first hub testers). Each answers as transformers does."""
    model = tiny_llama()
    config = LlamaConfig(**{**model.config.to_dict(), "dtype": torch.bfloat16})
    copy = through_the_room(config)
    assert copy.dtype is torch.bfloat16 and torch.zeros(2, dtype=copy.dtype).dtype == copy.dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("num_labels", "name_or_path", "use_return_dict", "torch_dtype"):
            assert getattr(copy, name) == getattr(config, name), name
        assert copy.rope_scaling == config.rope_scaling
    assert copy.to_dict() == config.to_dict() and copy.to_dict()["dtype"] == "bfloat16"
    assert copy.to_diff_dict() == config.to_diff_dict()
    assert copy.get_text_config() is copy
    copy.hidden_size = 32
    assert copy.to_diff_dict()["hidden_size"] == 32
    weights = through_the_room(model)
    for only_trainable in (False, True):
        for exclude_embeddings in (False, True):
            counts = [
                m.num_parameters(
                    only_trainable=only_trainable, exclude_embeddings=exclude_embeddings
                )
                for m in (weights, model)
            ]
            assert counts[0] == counts[1], (only_trainable, exclude_embeddings, counts)


def test_a_model_in_the_room_answers_its_decoder_as_transformers_does():
    """An honest port's `for layer in model.get_decoder().layers` (no flag: the release's words)
    passed Validate, where transformers' get_decoder() is `model.model`, and raised
    AttributeError in the room, the part scoring 0 (the sixty-third hub tester). The copy
    answers it by the path the grader sent; the decoder's own get_decoder() is itself."""
    model = tiny_llama()
    copy = through_the_room(model)
    assert copy.get_decoder() is copy.model
    assert copy.model.get_decoder() is copy.model
    assert len(copy.get_decoder().layers) == len(model.get_decoder().layers) == 2
    assert not hasattr(copy.model.layers[0], "get_decoder")


def test_a_configuration_in_the_room_iterates_as_transformers_does():
    """transformers' configurations iterate over their keys: an honest L6
    `if "kv_lora_rank" in config:` (no flag) passed Validate and raised TypeError in the room
    ("not iterable"), Parts 3 and 4 scoring 0 (the sixty-third hub tester)."""
    model = tiny_llama()
    config = model.config
    copy = through_the_room(config)
    assert list(copy) == list(config)
    assert "head_dim" in copy and "kv_lora_rank" not in copy
    config.extra, copy.extra = 1, 1
    del config.vocab_size, copy.vocab_size
    assert list(copy) == list(config)
    assert list(through_the_room(model).config) == list(model.config)


def test_a_configuration_in_the_room_is_a_dataclass_as_transformers_does():
    """transformers 5's configurations are dataclasses: an honest
    `dataclasses.asdict(config).get("kv_lora_rank")` (no flag) passed Validate and raised
    TypeError in the room (the sixty-third hub tester). asdict and fields answer as there; a
    copy still pickles and copies; `dataclasses.replace` builds no copy, and says so."""
    import dataclasses

    model = tiny_llama()
    config = model.config
    copy = through_the_room(config)
    assert dataclasses.is_dataclass(copy)
    assert dataclasses.asdict(copy) == dataclasses.asdict(config)
    names = [[f.name for f in dataclasses.fields(c)] for c in (copy, config)]
    assert names[0] == names[1]
    assert pickle.loads(pickle.dumps(copy)).to_dict() == copy.to_dict()
    assert dataclasses.asdict(copy_module.deepcopy(copy)) == dataclasses.asdict(config)
    with pytest.raises(TypeError, match="not built again"):
        dataclasses.replace(copy, hidden_size=8)


# A transformers configuration's class attributes that are plain data (transformers 5).
CLASS_DATA = (
    "attribute_map", "base_config_key", "base_model_ep_plan", "base_model_fsdp_plan",
    "base_model_pp_plan", "base_model_tp_plan", "default_rope_type", "default_theta",
    "model_type", "sub_configs_defaults",
)  # fmt: skip


def test_a_configuration_in_the_room_answers_its_class_attributes_as_transformers_does():
    """A configuration's class attributes (`attribute_map`, `default_theta`, `base_config_key`,
    `base_model_tp_plan`, ...: words, flags [] on the real L6 release) are read off the
    instance in transformers: an honest `config.attribute_map.get("hidden_size")` (GPT-2's
    `n_embd`) passed Validate and raised AttributeError in the room (the sixty-fifth hub
    tester). Each that is plain data answers as transformers' does, and none is a field of
    `to_dict()`."""
    from transformers import GPT2Config

    for config in (tiny_llama().config, GPT2Config(n_embd=16, n_layer=2, n_head=4)):
        copy = through_the_room(config)
        # a set (ignore_keys_at_rope_validation) is no data a room holds: still not there
        for name in CLASS_DATA:
            assert getattr(copy, name) == getattr(config, name), name
        assert copy.to_dict().keys() == config.to_dict().keys() and list(copy) == list(config)
    assert copy.attribute_map["hidden_size"] == "n_embd"


def test_a_model_in_the_room_has_the_state_dict_transformers_gives():
    """The rotary embedding's inv_freq is a buffer transformers keeps out of the state dict:
    the room's copy held it as persistent, so an honest port's strict
    `load_state_dict(model.state_dict())` raised "Unexpected key(s)" in the room only (the
    fifty-sixth hub tester)."""
    model = tiny_llama()
    copy = through_the_room(model)
    assert copy.state_dict().keys() == model.state_dict().keys()
    assert "model.rotary_emb.inv_freq" not in copy.state_dict()
    assert torch.equal(copy.model.rotary_emb.inv_freq, model.model.rotary_emb.inv_freq)


def test_a_model_in_the_room_applies_its_activation_as_transformers_does():
    """A Llama MLP's `act_fn` is transformers' SiLUActivation (transformers 5), a module of no
    weights: an honest port's `mlp.act_fn(gate) * up` passed Validate (the guard fired
    nothing: transformers.activations is no lab's reference) and raised NotImplementedError in
    the room, "weights only" (the sixty-first hub tester). GPT-2's NewGELUActivation too."""
    from transformers.activations import NewGELUActivation

    model = tiny_llama()
    copy = through_the_room(model)
    x = torch.randn(2, 3, 24)
    mlp, theirs = copy.model.layers[0].mlp, model.model.layers[0].mlp
    assert torch.equal(mlp.act_fn(x), theirs.act_fn(x))
    gelu = NewGELUActivation()
    assert torch.allclose(through_the_room(gelu)(x), gelu(x), atol=1e-6, rtol=0)
    with pytest.raises(NotImplementedError, match="weights only"):
        copy.model.layers[0].input_layernorm(x[..., :16])


def test_one_object_of_transformers_is_one_copy_in_the_room():
    """`model.config is model.model.config` in transformers: the room made a copy each time
    the pickler met the configuration, so a field an honest port set on `model.config` kept
    its old value in `model.model.config` and in every layer's, in the room only."""
    model = tiny_llama()
    copy = through_the_room(model)
    configs = [copy.config, copy.model.config, copy.model.layers[1].self_attn.config]
    assert all(c is configs[0] for c in configs)
    copy.config.rms_norm_eps = model.config.rms_norm_eps = 1e-3
    assert copy.model.layers[0].self_attn.config.rms_norm_eps == 1e-3
    assert model.model.layers[0].self_attn.config.rms_norm_eps == 1e-3
    pair = through_the_room((model.config, model.config))
    assert pair[0] is pair[1]
    assert through_the_room(model.config) is not through_the_room(model.config)


def test_a_configuration_in_the_room_maps_its_aliases_and_writes_itself_as_transformers_does():
    """GPT-2's `hidden_size` is its `n_embd` (attribute_map), read and set both ways in
    transformers: the room held the alias as a value of its own, so `config.hidden_size = 32`
    left `n_embd` (and to_dict) at 16, and reading `hidden_size` after setting `n_embd` gave
    the old width. `to_dict()` wrote `transformers_version` as None (the attribute) where
    transformers writes its version; `update()` and `to_json_string()` raised AttributeError."""
    from transformers import GPT2Config

    config = GPT2Config(n_embd=16, n_layer=2, n_head=4)
    copy = through_the_room(config)
    assert copy.to_dict() == config.to_dict() and copy.to_dict()["transformers_version"]
    assert copy.to_json_string() == config.to_json_string()
    assert copy.to_json_string(use_diff=False) == config.to_json_string(use_diff=False)
    for both in (config, copy):
        both.hidden_size = 32
        both.update({"num_attention_heads": 8, "n_layer": 3, "extra": [1.5, float("inf")]})
    for name in ("hidden_size", "n_embd", "n_head", "num_attention_heads", "num_hidden_layers"):
        assert getattr(copy, name) == getattr(config, name), name
    assert copy.n_embd == 32 and copy.num_hidden_layers == 3
    assert copy.to_dict() == config.to_dict() and "hidden_size" not in copy.to_dict()
    assert copy.to_json_string() == config.to_json_string()
    assert list(copy) == list(config)


def test_a_configuration_in_the_room_keeps_transformers_property_aliases_live():
    """transformers 5's `rope_scaling` and `torch_dtype` are properties that read and set
    `rope_parameters` and `dtype` (the seventieth hub tester): the room held each as a value of
    its own, taken when the grader pickled it, so `config.rope_parameters = ...` left
    `config.rope_scaling` at the old value, and `config.torch_dtype = torch.float16` left
    `dtype` and `to_dict()` unchanged, silently (no name lacking, nothing flagged)."""
    config = tiny_llama().config
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for set_field in (True, False):
            original, copy = copy_module.deepcopy(config), through_the_room(config)
            for both in (original, copy):
                theta = dict(both.rope_parameters, rope_theta=123.0)
                if set_field:
                    both.rope_parameters, both.dtype = theta, torch.float16
                else:
                    both.rope_scaling, both.torch_dtype = theta, torch.float16
            for name in ("rope_scaling", "rope_parameters", "torch_dtype", "dtype"):
                assert getattr(copy, name) == getattr(original, name), (set_field, name)
            assert copy.to_dict() == original.to_dict(), set_field
            assert copy.to_dict()["rope_parameters"]["rope_theta"] == 123.0
            assert "rope_scaling" not in vars(copy) and "torch_dtype" not in vars(copy)
    # a configuration transformers gives none of these (GPT-2: no rope) answers none of them
    from transformers import GPT2Config

    gpt2 = through_the_room(GPT2Config(n_embd=16, n_layer=2, n_head=4))
    assert hasattr(gpt2, "rope_scaling") == hasattr(GPT2Config(), "rope_scaling")


def test_a_configuration_in_the_room_computes_and_sets_transformers_properties_as_it_does(
    monkeypatch,
):
    """transformers 5's other properties were held as the values they had when the grader
    pickled the configuration (the seventieth and seventy-second hub testers' open rows):
    `config.id2label = ...` left `num_labels` at 2, `config.num_labels = 3` left `id2label`
    and `to_dict()` unchanged, `config.return_dict = False` left `use_return_dict` True,
    `config.name_or_path = path` wrote no `_name_or_path`, and `config.use_return_dict = x`,
    which transformers refuses (no setter), was kept; silently, nothing flagged. Now each reads
    and sets as transformers does. Where the copy cannot do what transformers' setter does
    (`rope_scaling`'s standardisation, `output_attentions`' check of the attention), the value
    is set and the submission flagged; `rope_scaling = None` needs none."""
    from pathlib import PurePosixPath

    monkeypatch.setattr(sandbox_agent, "_missed", [])
    config = tiny_llama().config
    copy = through_the_room(config)
    assert {"num_labels", "use_return_dict", "name_or_path", "rope_scaling"}.isdisjoint(vars(copy))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for both in (config, copy):
            both.id2label = {0: "no", 1: "yes", 2: "maybe"}
            both.return_dict = False
        for name in ("num_labels", "use_return_dict"):
            assert getattr(copy, name) == getattr(config, name), name
        assert copy.num_labels == 3 and copy.use_return_dict is False
        for both in (config, copy):
            both.num_labels = 5
            both.name_or_path = PurePosixPath("/models/tiny")
            with pytest.raises(AttributeError, match="property 'use_return_dict' of 'LlamaConfig"):
                both.use_return_dict = True
            both.rope_scaling = None
        for name in ("num_labels", "id2label", "label2id", "name_or_path", "rope_parameters"):
            assert getattr(copy, name) == getattr(config, name), name
        assert copy.name_or_path == "/models/tiny" and copy.to_dict() == config.to_dict()
        assert sandbox_agent._missed == []
        for both in (config, copy):
            both.rope_scaling = {"rope_type": "linear", "factor": 2.0}
            both.output_attentions = False
    # transformers standardises the parameters (adds `rope_theta`); the copy cannot, and says so
    assert "rope_theta" in config.rope_parameters and "rope_theta" not in copy.rope_parameters
    assert sandbox_agent._missed == [
        ["LlamaConfig", "rope_scaling"],
        ["LlamaConfig", "output_attentions"],
    ]


def test_a_configuration_in_the_room_compares_as_transformers_does():
    """transformers 5's configurations compare as dataclasses (their fields, same class) and
    are unhashable: `copy.deepcopy(config) == config` was False in the room (identity)."""
    config = tiny_llama().config
    twin = copy_module.deepcopy(config)
    ours, our_twin = through_the_room((config, twin))
    other = through_the_room(LlamaConfig(hidden_size=8, num_attention_heads=2))
    assert (ours == our_twin, ours == other, ours == 1) == (True, False, False)
    assert (config == twin, ours == copy_module.deepcopy(ours)) == (True, True)
    twin.vocab_size = our_twin.vocab_size = 7
    assert (config == twin, ours == our_twin) == (False, False)
    for unhashable in (config, ours):
        with pytest.raises(TypeError, match="unhashable"):
            hash(unhashable)


def test_a_model_in_the_room_answers_its_classes_data_and_more_methods_as_transformers_does():
    """A decoder layer's `gradient_checkpointing` and a model's `base_model_prefix` (class
    data in transformers), `base_model`, `get_memory_footprint()`, `can_generate()` and
    `get_parameter_or_buffer()` raised AttributeError in the room only (the sixty-third hub
    tester's table)."""
    model = tiny_llama()
    copy = through_the_room(model)
    for ours, theirs in ((copy, model), (copy.model, model.model)):
        for name in ("base_model_prefix", "main_input_name", "supports_gradient_checkpointing"):
            assert getattr(ours, name) == getattr(theirs, name), name
        assert type(ours.base_model).__qualname__ == type(theirs.base_model).__qualname__
        for buffers in (True, False):
            assert ours.get_memory_footprint(buffers) == theirs.get_memory_footprint(buffers)
        assert ours.can_generate() == theirs.can_generate()
    assert copy.base_model is copy.model and copy.model.base_model is copy.model
    assert copy.model.layers[0].gradient_checkpointing is False
    assert (
        copy.model.layers[0].gradient_checkpointing == model.model.layers[0].gradient_checkpointing
    )
    name = "model.layers.1.post_attention_layernorm.weight"
    assert torch.equal(copy.get_parameter_or_buffer(name), model.get_parameter_or_buffer(name))
    name = "model.rotary_emb.inv_freq"
    assert torch.equal(copy.get_parameter_or_buffer(name), model.get_parameter_or_buffer(name))
    for ours in (copy, model):
        with pytest.raises(AttributeError, match="neither a parameter, buffer"):
            ours.get_parameter_or_buffer("lm_head.bias")


def test_what_a_copy_lacks_of_transformers_is_flagged_for_a_person(monkeypatch):
    """What transformers' object answers and the room's copy does not (a method no lab
    needs, `model.generate`, `config.validate_rope`, `dataclasses.replace(config)`) fails
    in the room where Validate, with transformers' object, passed: an honest answer may lose
    marks. The copy names it in its error and records it; the grader keeps only the names a
    copy of its own was told (the report quotes no text of hers), and the instructor's report
    flags the submission (course_preprocessors). A name transformers' object lacks too is
    Python's plain AttributeError, recorded nowhere."""
    import dataclasses

    monkeypatch.setattr(sandbox_agent, "_missed", [])
    sent = {}
    model = tiny_llama()
    copy = through_the_room(model, sent)
    assert {"LlamaForCausalLM", "LlamaConfig", "LlamaDecoderLayer"} <= sent.keys()
    assert "generate" in sent["LlamaForCausalLM"] and "layers" in sent["LlamaModel"]
    with pytest.raises(AttributeError, match="transformers' LlamaForCausalLM has it, the grad"):
        _ = copy.generate
    assert not hasattr(copy.config, "validate_rope")
    for name in ("no_such_thing", "_private"):
        with pytest.raises(AttributeError, match=f"object has no attribute '{name}'$"):
            getattr(copy.model, name)
        assert not hasattr(model.model, name)
    assert getattr(copy.config, "no_such_field", None) is None
    with pytest.raises(TypeError, match="not built again"):
        dataclasses.replace(copy.config, hidden_size=8)
    assert sandbox_agent._missed == [
        ["LlamaForCausalLM", "generate"],
        ["LlamaConfig", "validate_rope"],
        ["LlamaConfig", "dataclasses.replace"],
    ]
    reply = sandbox_agent._answer(base64.b64encode(pickle.dumps((("names", []), []))).decode())
    assert (
        reply["room_missed"]
        == [
            ["LlamaForCausalLM", "generate"],
            ["LlamaConfig", "validate_rope"],
            ["LlamaConfig", "dataclasses.replace"],
        ]
        and sandbox_agent._missed == []
    )
    # the grader's side: names of its own copies only, each once, at most MAX_MISSED
    session = types.SimpleNamespace(sent=sent, missed=[])
    hers = [["LlamaConfig", "<b>hers</b>"], ["Hers", "generate"], ["LlamaForCausalLM", "generate"]]
    trusted_tests.Session.note_missed(session, reply["room_missed"] + hers)
    assert session.missed == [
        "LlamaForCausalLM.generate",
        "LlamaConfig.validate_rope",
        "LlamaConfig.dataclasses.replace",
    ]
    for bad in ("generate", [["a"]], [[1, "b"]], {"LlamaConfig": "update"}):
        with pytest.raises(trusted_tests.AnswerError):
            trusted_tests.Session.note_missed(session, bad)


def test_a_room_reads_its_copies_without_transformers(tmp_path):
    """The copies unpickle in an interpreter where transformers cannot be imported, as in
    a room, whose transformers is a stand-in that refuses the import."""
    buffer = io.BytesIO()
    model = tiny_llama()
    trusted_tests.Pickler(buffer, {}, room=True).dump({"model": model, "config": model.config})
    (tmp_path / "payload").write_bytes(buffer.getvalue())
    code = (
        "import io, sys\n"
        "sys.modules['transformers'] = None  # import transformers now fails\n"
        "from grading.in_sandbox import sandbox_agent\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "room = sandbox_agent._Unpickler(io.BytesIO(data)).load()\n"
        "print(sum(p.numel() for p in room['model'].parameters()), room['config'].hidden_size)\n"
        "print(sorted(m for m in sys.modules if m.startswith('transformers')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "payload")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    count, modules = done.stdout.strip().splitlines()
    assert count == f"{sum(p.numel() for p in model.parameters())} 16"
    assert modules == "['transformers']", modules  # the blocked entry alone


def test_what_cannot_be_a_plain_copy_is_refused():
    class Opaque:
        pass

    Opaque.__module__ = "transformers.made_up"
    with pytest.raises(pickle.PicklingError, match="cannot enter the sandbox"):
        through_the_room(Opaque())


def test_what_the_room_does_not_hold_is_named_so():
    """A student's code that reaches for a setup name the room does not hold, or for
    transformers or the course library, is told so, not left with a bare NameError."""
    setup, held = {"torch", "model", "describe", "transformers"}, ["torch"]
    said = room.absent("NameError", "name 'model' is not defined", setup, held)
    assert said.startswith("model is not in the room while graded: the room holds only your own")
    assert "of the setup, torch" in said and "(name 'model' is not defined)" in said
    assert room.absent("NameError", "name 'lmcourse' is not defined", setup, held)
    message = "module 'lmcourse' has no attribute 'describe'"
    assert room.absent("AttributeError", message, setup, held).startswith("lmcourse.describe is")
    message = "cannot import name 'describe' from 'lmcourse' (/x/lmcourse/__init__.py)"
    assert room.absent("ImportError", message, setup, held).startswith("lmcourse.describe is")
    for error, message in [
        ("NameError", "name 'torch' is not defined"),  # the room's own: a student's slip
        ("NameError", "name 'my_helper' is not defined"),
        ("AttributeError", "module 'torch' has no attribute 'rms'"),
        ("ValueError", "name 'model' is not defined"),
    ]:
        assert room.absent(error, message, setup, held) is None
