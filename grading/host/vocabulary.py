"""The labs' vocabulary: the names an answer may use without defining them, and nothing else.

The flagger's other lists (submission_checks.py) name what reaches past a lab: a module, a
runner of strings, a frame. Each of those lists was found incomplete by a tester: a route to
`sys` under a name nobody had listed, in one of the thousands of installed modules. This list
is the other way round. It names what an honest answer of LM10's labs uses: torch's and
numpy's public functions, tensors' and modules' methods, the math of the standard library,
the builtins, the configurations' fields and the course's own helpers. A name in a student's
cell that is not in it, not defined by the student and not in the released lab is flagged for
a person to read (submission_checks.outside). Nothing is lost by a flag; a route in a module
nobody listed is no longer silent.

The words are written to vocabulary.txt, one a line, so that an upgrade of torch, numpy or
transformers shows as a diff a person reads: `python -m grading.host.vocabulary --write`
rewrites it, and tests/test_vocabulary.py fails while the file differs from what the installed
packages give. Build it in a fresh interpreter: a module imported before adds names to others
(transformers gives torch's modules `smart_apply`).

A word is a name, whatever it is read on: a public name of a module below that is not itself a
module (so `torch.utils`, `numpy.testing`, `functional.torch` are not words, except the few
modules a lab reaches by attribute, ATTRIBUTE_MODULES), a public attribute of a class below, a
field of a transformers configuration, an attribute a course family's modelling code sets, or
a public name of the course's package (not of lmcourse.offlimits, the guard). NOT_WORDS are the
public names of those that read or write files, compile code or reach raw memory: a student's
use of one is read by a person.
"""

import ast
import builtins
import contextlib
import importlib
import importlib.util
import inspect
import sys
import types
import warnings
from functools import cache
from pathlib import Path

FILE = Path(__file__).with_name("vocabulary.txt")  # package data: pyproject.toml


def _package_dir(name):
    """Where package `name` is installed, found without importing it."""
    return Path(importlib.util.find_spec(name).submodule_search_locations[0])


LMCOURSE = _package_dir("lmcourse")

# What a student's cell may import. The setup cell's own imports are the lab's (a student may
# import them again); anything else is read by a person.
IMPORTABLE = frozenset(
    {
        "__future__",
        "bisect",
        "cmath",
        "collections",
        "copy",
        "dataclasses",
        "decimal",
        "fractions",
        "functools",
        "heapq",
        "itertools",
        "json",
        "math",
        "numbers",
        "numpy",
        "numpy.linalg",
        "numpy.random",
        "operator",
        "pprint",
        "random",
        "re",
        "statistics",
        "string",
        "time",
        "torch",
        "torch.fft",
        "torch.linalg",
        "torch.nn",
        "torch.nn.functional",
        "torch.nn.init",
        "torch.special",
        "tqdm",
        "tqdm.auto",
        "typing",
    }
)

# Modules whose public names (other than modules) are words.
MODULES = tuple(sorted(IMPORTABLE - {"__future__"}))

# The course's package may be imported too (its words are read from its source, below), but
# not the guard, lmcourse.offlimits.
IMPORTABLE |= {
    ".".join(("lmcourse", *path.relative_to(LMCOURSE).with_suffix("").parts)).removesuffix(
        ".__init__"
    )
    for path in LMCOURSE.rglob("*.py")
    if path.name != "offlimits.py"
}

# Modules a lab reaches as another module's attribute: torch.nn, nn.functional, np.random ...
ATTRIBUTE_MODULES = ("fft", "functional", "init", "linalg", "nn", "random", "special")

# torch's names other than its operators, torch.functional's and its dtypes that an honest
# answer uses.
TORCH = (
    "Generator",
    "Size",
    "Tensor",
    "are_deterministic_algorithms_enabled",
    "autocast",
    "broadcast_shapes",
    "default_generator",
    "device",
    "dtype",
    "e",
    "enable_grad",
    "finfo",
    "get_default_device",
    "get_default_dtype",
    "get_num_threads",
    "get_rng_state",
    "iinfo",
    "inf",
    "inference_mode",
    "initial_seed",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "is_tensor",
    "manual_seed",
    "nan",
    "newaxis",
    "no_grad",
    "pi",
    "seed",
    "set_default_dtype",
    "set_grad_enabled",
    "set_num_threads",
    "set_printoptions",
    "set_rng_state",
    "typename",
    "use_deterministic_algorithms",
    "vmap",
)

# Functions of a module that is no word itself whose own name is a word: `device = "cuda" if
# torch.cuda.is_available() else "cpu"`, the first line of many an honest answer (flagged in
# every lab: the fifty-sixth hub tester). Their modules' other names stay no words.
FUNCTIONS = ("torch.cuda.is_available",)

# A transformers configuration's methods that give its fields as plain data (not
# from_pretrained, save_pretrained, to_json_file: files).
CONFIG_METHODS = frozenset({"to_dict", "to_diff_dict", "get_text_config"})

# Classes whose public attributes (methods, properties, fields) are words.
CLASSES = (
    "builtins.BaseException",
    "builtins.bool",
    "builtins.bytes",
    "builtins.complex",
    "builtins.dict",
    "builtins.float",
    "builtins.frozenset",
    "builtins.int",
    "builtins.list",
    "builtins.range",
    "builtins.set",
    "builtins.slice",
    "builtins.str",
    "builtins.tuple",
    "collections.ChainMap",
    "collections.Counter",
    "collections.OrderedDict",
    "collections.defaultdict",
    "collections.deque",
    "decimal.Decimal",
    "fractions.Fraction",
    "functools._lru_cache_wrapper",  # a cached function's cache_clear, cache_info
    "itertools.chain",  # chain.from_iterable
    "numpy.dtype",
    "numpy.finfo",
    "numpy.generic",
    "numpy.iinfo",
    "numpy.ndarray",
    "numpy.random.Generator",  # np.random.default_rng()'s integers, normal ...
    "re.Match",
    "re.Pattern",
    "statistics.LinearRegression",  # linear_regression(...).slope
    "statistics.NormalDist",
    "string.Template",
    "torch.Generator",
    "torch.Size",
    "torch.Tensor",
    "torch.device",
    "torch.dtype",
    "torch.finfo",
    "torch.iinfo",
    "torch.nn.Module",
    "torch.nn.Parameter",
    "tqdm.tqdm",
)

# The dunder names an honest answer reads: super().__init__(), type(x).__name__.
DUNDERS = ("__call__", "__doc__", "__init__", "__name__", "__qualname__")

# A named tuple's methods and fields, named with an underscore so as not to clash with its
# own fields (`Shape(...)._replace(heads=8)`, `row._asdict()`): the only private words.
NAMEDTUPLE = ("_asdict", "_field_defaults", "_fields", "_make", "_replace")

# Builtins a student's code may name without defining them.
BUILTINS = frozenset(
    {
        "abs",
        "all",
        "any",
        "bin",
        "bool",
        "bytes",
        "callable",
        "chr",
        "classmethod",
        "complex",
        "dict",
        "divmod",
        "enumerate",
        "filter",
        "float",
        "format",
        "frozenset",
        "getattr",
        "hasattr",
        "hash",
        "hex",
        "id",
        "int",
        "isinstance",
        "issubclass",
        "iter",
        "len",
        "list",
        "map",
        "max",
        "min",
        "next",
        "object",
        "oct",
        "ord",
        "pow",
        "print",
        "property",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "slice",
        "sorted",
        "staticmethod",
        "str",
        "sum",
        "super",
        "tuple",
        "type",
        "zip",
        "Ellipsis",
        "NotImplemented",
    }
    | {
        name
        for name, value in vars(builtins).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
)

# What the kernel's namespace holds besides the notebook's names: IPython's history and shell
# (IPython's `display` is honest notebook code, and reaches the shell only through dunders).
KERNEL_NAMES = frozenset({"In", "Out", "exit", "get_ipython", "quit"})


def unknown_name(name):
    """Whether a name a student's cell reads but no cell binds could reach something: a builtin
    other than BUILTINS, a dunder other than DUNDERS, a private name (`_ih`, `_1`) or what the
    kernel puts in the namespace. Any other unbound name is a NameError, and reaches nothing."""
    if name in BUILTINS or name in DUNDERS:
        return False
    return name in vars(builtins) or name.startswith("_") or name in KERNEL_NAMES


def builtin_reaching(name):
    """Whether `name` is a builtin's that a student's read of is flagged (not BUILTINS, not
    `input`, which reads a kernel's stdin and nothing else): her cells' binding of it at the
    top makes every read of it at the top hers, bound or not."""
    return name in vars(builtins) and name != "input" and unknown_name(name)


# Public names of the modules and classes above that read or write files, load pickles,
# evaluate annotations written as strings, or reach raw memory: an honest lab answer has no
# use for them.
NOT_WORDS = frozenset(
    {
        "Formatter",
        "ctypes",
        "data_ptr",
        "dump",
        "from_file",
        "fromfile",
        "fromregex",
        "genfromtxt",
        "get_include",
        "get_type_hints",
        "import_ir_module",
        "import_ir_module_from_buffer",
        "info",
        "load",
        "loads",
        "loadtxt",
        "memmap",
        "save",
        "savetxt",
        "savez",
        "savez_compressed",
        "set_default_tensor_type",
        "show_config",
        "show_runtime",
        "singledispatch",
        "singledispatchmethod",
        "spawn",  # a numpy Generator's children; torch.multiprocessing's start of processes
        "storage",
        "tofile",
        "untyped_storage",
    }
)

# The model families the course's lessons and labs build or read: the attributes their
# modelling code sets (model.model.layers[0].self_attn.q_proj) are words.
FAMILIES = (
    "deepseek_v2",
    "deepseek_v3",
    "gemma2",
    "gemma3",
    "gpt2",
    "llama",
    "llama4",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "qwen3_next",
)


def _public(obj):
    """The public names of `obj` whose values are not modules."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in dir(obj):
            if name.startswith("_"):
                continue
            try:
                value = getattr(obj, name)
            except Exception:  # a lazy attribute that fails to load is no word
                continue
            if not isinstance(value, types.ModuleType):
                yield name


def _resolve(dotted):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _set_by(tree, defs=True, module_level=False, receivers=("self", "cls")):
    """Public names `tree` sets on self (self.x = ...), takes as parameters, or defines: with
    `defs` its functions, methods and classes; its fields in a class body; with `module_level`
    names assigned at the top."""
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in receivers
        ):
            found.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef) and defs:
            found.add(node.name)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    scopes = (ast.ClassDef, ast.Module) if module_level else (ast.ClassDef,)
    for node in ast.walk(tree):  # class-level fields: dataclass fields, class constants
        if isinstance(node, scopes):
            for statement in node.body:
                targets = (
                    statement.targets
                    if isinstance(statement, ast.Assign)
                    else [statement.target]
                    if isinstance(statement, ast.AnnAssign)
                    else []
                )
                found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {name for name in found if not name.startswith("_")}


def _source_words():
    """Words read from source files, without importing them: transformers' configurations'
    fields, the course families' modelling attributes, the outputs' fields, the caches, and
    the course's package (lmcourse.offlimits, the guard, is not read)."""
    transformers = _package_dir("transformers")
    words = set()
    # the configurations' fields, not their methods (from_pretrained, to_json_file)
    configurations = sorted(transformers.glob("models/*/configuration_*.py"))
    for path in [*configurations, transformers / "configuration_utils.py"]:
        words |= _set_by(ast.parse(path.read_text(encoding="utf-8")), defs=False)
    # of a configuration's methods, those that give its fields as plain data (L6's honest
    # `config.to_dict()`, the fifty-fourth tester's), where transformers defines them
    utils = ast.parse((transformers / "configuration_utils.py").read_text(encoding="utf-8"))
    words |= CONFIG_METHODS & {
        n.name for n in ast.walk(utils) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    files = [transformers / "modeling_outputs.py", transformers / "cache_utils.py"]
    for family in FAMILIES:
        files += sorted((transformers / "models" / family).glob("modeling_*.py"))
    files += sorted((_package_dir("torch") / "nn" / "modules").glob("*.py"))
    for path in files:
        words |= _set_by(ast.parse(path.read_text(encoding="utf-8")))
    for path in sorted(p for p in LMCOURSE.rglob("*.py") if p.name != "offlimits.py"):
        words |= _set_by(ast.parse(path.read_text(encoding="utf-8")), module_level=True)
    return words


def _torch_words():
    """torch's own namespace also holds TorchScript's and the C extension's machinery
    (CompilationUnit, FileCheck, PyTorchFileReader, fork): its words are its operators, the
    Python functions of torch.functional, its dtypes and layouts, and TORCH."""
    import torch

    kinds = (torch.dtype, torch.layout, torch.memory_format, torch.qscheme)
    words = set(_public(torch._C._VariableFunctions)) | set(torch.functional.__all__)
    words |= {n for n in _public(torch) if isinstance(getattr(torch, n), kinds)}
    return words | set(TORCH)


def build():
    """Every word, from the installed packages and the course's source."""
    words = set(ATTRIBUTE_MODULES) | set(DUNDERS) | set(NAMEDTUPLE) | _torch_words()
    for name in MODULES:
        module = importlib.import_module(name)
        if name != "torch":
            words |= set(_public(module))
        for value in vars(module).values():  # every public class of torch.nn: nn.Linear ...
            if name == "torch.nn" and isinstance(value, type):
                words |= set(_public(value))
                with contextlib.suppress(TypeError, ValueError):
                    words |= set(inspect.signature(value.__init__).parameters) - {"self"}
    for dotted in CLASSES:
        words |= set(_public(_resolve(dotted)))
    words |= {dotted.rpartition(".")[2] for dotted in FUNCTIONS if callable(_resolve(dotted))}
    words |= _source_words()
    private = set(DUNDERS) | set(NAMEDTUPLE)
    words = {w for w in words if w.isidentifier() and (not w.startswith("_") or w in private)}
    kept = _kept_module_names(words) | set(ATTRIBUTE_MODULES)
    return sorted((words - NOT_WORDS - set(sys.stdlib_module_names)) | kept)


def _kept_module_names(words):
    """Names that are both a standard module's and a method's (Tensor.select, ndarray.copy,
    numpy.array, Tensor.trace) or an importable module's own function (time.time): a word,
    since the method is; the module by that name is read on through words only."""
    methods = set()
    for dotted in ("torch.Tensor", "numpy.ndarray", "builtins.dict", "builtins.list"):
        methods |= set(_public(_resolve(dotted)))
    methods |= set(_public(importlib.import_module("numpy")))
    methods |= set(_public(importlib.import_module("torch")))
    # a module she may import that holds a function of its own name (`time.time()`, timing an
    # answer, flagged in every lab: the fifty-fourth hub tester): the module by that name is
    # one she imports anyway
    methods |= {
        name
        for name in IMPORTABLE
        if "." not in name and name in set(_public(importlib.import_module(name)))
    }
    return (methods & set(sys.stdlib_module_names) & words) - NOT_WORDS


@cache
def words():
    """The words, as written in vocabulary.txt."""
    return frozenset(FILE.read_text(encoding="utf-8").split())


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = "".join(f"{word}\n" for word in build())
    if argv == ["--write"]:
        FILE.write_text(text, encoding="utf-8")
        print(f"wrote {len(text.splitlines())} words to {FILE}")
        return 0
    if argv == ["--check"]:
        written = FILE.read_text(encoding="utf-8")
        if written == text:
            return 0
        changed = sorted(set(written.split()) ^ set(text.split()))
        print(f"{FILE} differs from the installed packages ({' '.join(changed[:20])}):")
        print("run with --write in a fresh interpreter, and read the diff")
        return 1
    print("usage: python -m grading.host.vocabulary --write | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
