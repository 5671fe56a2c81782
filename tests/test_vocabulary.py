"""The labs' vocabulary (grading/host/vocabulary.py): the file is what the installed packages
give, it holds the words honest answers use, and none of the names the testers' routes went
through. The flagger's use of it is in tests/test_submission_checks.py."""

import subprocess
import sys
import tomllib
from pathlib import Path

from grading.host import vocabulary

ROOT = Path(__file__).resolve().parents[1]


def test_the_file_is_what_the_installed_packages_give():
    """An upgrade of torch, numpy or transformers shows as a diff of vocabulary.txt, which a
    person reads (`python -m grading.host.vocabulary --write`). Built in a fresh interpreter:
    what else a process has imported adds names (transformers adds `smart_apply` to
    torch's modules)."""
    done = subprocess.run(
        [sys.executable, "-m", "grading.host.vocabulary", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_words_of_honest_answers_are_words():
    honest = {
        # tensors and torch's functions
        "rsqrt", "mean", "pow", "var", "sqrt", "matmul", "softmax", "einsum", "numel",
        "unsqueeze", "repeat_interleave", "layer_norm", "silu", "float32", "no_grad",
        # modules, parameters and the lab's models
        "parameters", "named_parameters", "weight", "bias", "in_features", "normalized_shape",
        "eps", "self_attn", "q_proj", "embed_tokens", "lm_head", "layers",
        # configurations
        "hidden_size", "num_key_value_heads", "intermediate_size", "rope_theta",
        "n_routed_experts", "kv_lora_rank", "tie_word_embeddings", "rms_norm_eps",
        # the standard library, numpy, the builtin types, tqdm
        "prod", "product", "reduce", "Counter", "zeros", "items", "append",
        "format", "trange", "update", "time", "is_available",
        # a transformers configuration's fields as plain data (L6)
        "to_dict", "to_diff_dict",
        # a named tuple's methods, a numpy Generator's, heapq's, decimal's, statistics'
        "_replace", "_asdict", "_fields", "integers", "heappush", "quantize", "slope",
        # dunders honest code reads, and modules read as attributes
        "__init__", "__name__", "nn", "functional", "linalg",
    }  # fmt: skip
    assert honest - vocabulary.words() == set()


def test_no_route_the_testers_went_through_is_a_word():
    routes = {
        # modules, and what reaches them
        "sys", "os", "utils", "testing", "lib", "core", "ctypes", "ctypeslib", "importlib",
        "builtins", "gc", "inspect", "f2py",
        # runners, loaders and resolvers under their own or other names
        "exec_", "runsource", "runstring", "resolve", "import_module", "importorskip",
        "load", "loads", "wrapper_getattr", "load_lexer_from_file", "addpackage",
        "read_module", "load_backend_module", "enum_object_hook", "FunctionMaker",
        "get_type_hints", "singledispatchmethod", "Formatter",
        # torch's machinery: TorchScript, the C extension's files and threads, raw memory
        "fork", "wait", "CompilationUnit", "FileCheck", "PyTorchFileReader", "from_file",
        "import_ir_module", "DisableTorchFunction", "untyped_storage", "data_ptr", "memmap",
        "fromfile", "tofile", "to_json_file", "save_pretrained",
        # the course's own: standing_in's caller's globals (her `__builtins__` by a computed
        # key), configs' getattr by a dotted name
        "namespace", "read_field",
        # the guard's own names, frames
        "Guard", "cell_prefixes", "for_agent", "f_back", "f_globals", "gi_frame", "tb_frame",
        "__globals__", "__dict__", "__class__", "__subclasses__", "__builtins__",
    }  # fmt: skip
    assert routes & vocabulary.words() == set()


def test_no_word_is_private_or_a_module_but_those_read_as_attributes():
    words = vocabulary.words()
    private = set(vocabulary.DUNDERS) | set(vocabulary.NAMEDTUPLE)
    assert {w for w in words if w.startswith("_")} == private
    modules = words & set(sys.stdlib_module_names)
    kept = {"array", "bisect", "chunk", "copy", "pprint", "random", "select", "time", "trace"}
    assert modules <= kept, modules


def test_what_a_student_may_import():
    assert {"torch", "torch.nn.functional", "math", "lmcourse.configs"} <= vocabulary.IMPORTABLE
    # not enum: `Enum("E", names, module=...)` then `global_enum(E)` writes the members into
    # the namespace of any module she names (`sys.modules[module].__dict__.update`)
    assert not {"lmcourse.offlimits", "sys", "os", "logging", "torch.utils", "enum"} & (
        vocabulary.IMPORTABLE
    )


def test_an_unbound_name_reaches_something_only_if_the_kernel_or_builtins_hold_it():
    assert [vocabulary.unknown_name(n) for n in ("open", "_ih", "In", "__loader__")] == [True] * 4
    assert [vocabulary.unknown_name(n) for n in ("len", "__name__", "heads_1")] == [False] * 3


def test_check_says_when_the_file_differs(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "vocabulary.txt"
    stale.write_text("sys\n", encoding="utf-8")
    monkeypatch.setattr(vocabulary, "FILE", stale)
    assert vocabulary.main(["--check"]) == 1
    assert "differs from the installed packages" in capsys.readouterr().out


def test_the_file_goes_with_the_package():
    """The course image installs grading as a wheel (grading/k8s/Dockerfile): the words must be
    in it, or every submission's flags fail to read them."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        data = tomllib.load(f)["tool"]["setuptools"]["package-data"]
    assert "vocabulary.txt" in data["grading.host"]
    assert vocabulary.FILE.parent == ROOT / "grading" / "host"
