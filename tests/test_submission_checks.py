"""The flagger (grading/host/submission_checks.py) on one construct at a time, and on honest work.

A small lab stands in for a release: a locked setup cell that imports os, torch, F, nn and
transformers and defines check_type, reference and config; one answer cell; a test cell that
declares `lmcourse.count` and `reference` off limits. Each case puts one construct in the
answer cell and checks that a flag names it, in that cell; the honest cases (progress bars,
parameters and locals named like the setup's names, the setup's own imports again, getattr of
a plain attribute) must not be flagged. Then every solution notebook and every honest
submission of tests/lab_cases (correct, alternatives, mistakes, hard-coded, the synthetic class
and the honest students of the copying cases) is read: none is flagged. No sandbox, no grading.
"""

import copy
import importlib
from pathlib import Path

import nbformat
import pytest

from grading.host import submission_checks as sc

ROOT = Path(__file__).resolve().parents[1]
SETUP = """import os
import torch
import torch.nn.functional as F
from torch import nn
import transformers


def check_type(value, kind, name):
    assert type(value) is kind, name


def reference(x):
    return x


config = {"d": 64}
"""
STUB = "def answer(x):\n    raise NotImplementedError()"
TEST = """# Off limits while graded: lmcourse.count, reference
assert answer(2) == reference(2)
"""


def cell(kind, source, grade_id, **nbgrader):
    new = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    made = new(source)
    made.metadata["nbgrader"] = {"grade_id": grade_id, "schema_version": 3, **nbgrader}
    return made


def release():
    return nbformat.v4.new_notebook(
        cells=[
            cell("code", SETUP, "setup", locked=True, solution=False, grade=False),
            cell("code", STUB, "answer", solution=True),
            cell("code", TEST, "test", locked=True, solution=False, grade=True, points=1),
        ]
    )


def flags(source):
    released = release()
    nb = copy.deepcopy(released)
    nb.cells[1].source = source
    return sc.flags(nb, released)


# (source in the answer cell, words one flag must hold)
REBINDING = {
    "for": ("for check_type in [print]:\n    pass", "check_type (a for loop's target)"),
    "with": ("with lock as check_type:\n    pass", "check_type (with ... as)"),
    "walrus": ("if (check_type := print):\n    pass", "check_type (:=)"),
    "del": ("del reference", "reference (del)"),
    "except": (
        "try:\n    1 / 0\nexcept ZeroDivisionError as check_type:\n    pass",
        "check_type (except ... as)",
    ),
    "class-setup-name": ("class reference:\n    pass", "reference (class)"),
    "class-package": ("class lmcourse:\n    count = len", "lmcourse (class), a package's name"),
    "class-package-torch": ("class transformers:\n    pass", "transformers (class)"),
    "def": ("def check_type(*args):\n    pass", "check_type (def)"),
    "import-as": ("import numpy as torch", "torch (import numpy as torch)"),
    "from-import-as": ("from math import sqrt as reference", "reference (from math import sqrt"),
    "from-import-other-F": ("from numpy import linalg as F", "F (from numpy import linalg as F)"),
    "global": (
        "def f():\n    global check_type\n    check_type = print",
        "declares check_type global",
    ),
    "global-binds": ("def f():\n    global check_type\n    check_type = print", "(assignment)"),
    "global-in-class": ("class A:\n    global reference\n    reference = 1", "reference"),
    "nonlocal": (
        "def f():\n    config = 1\n    def g():\n        nonlocal config\n        config = 2",
        "declares config nonlocal",
    ),
    "match-capture": ("match 1:\n    case check_type:\n        pass", "check_type (a match"),
    "match-star": ("match [1, 2]:\n    case [1, *reference]:\n        pass", "reference (a match"),
    "match-rest": ("match {}:\n    case {**config}:\n        pass", "config (a match"),
    "match-as": ("match 1:\n    case int() as reference:\n        pass", "reference (a match"),
    "augmented": ("config |= {'d': 1}", "config (augmented assignment)"),
    "annotated": ("config: dict = {}", "config (annotated assignment)"),
    "unpacking": ("a, (b, *check_type) = 1, (2, 3)", "check_type (assignment)"),
    "nested-block": (
        "if True:\n    while True:\n        reference = print\n        break",
        "reference",
    ),
    "comprehension-walrus": ("[(reference := f) for f in [print]]", "reference (:=)"),
    "comprehension-walrus-nested": ("[[(reference := f) for f in g] for g in [[1]]]", "reference"),
    "star-import": ("from math import *", "from math import * (it can rebind any name"),
    "off-limits-root": ("lmcourse = None", "lmcourse (assignment)"),
    "attribute-for": ("for torch.allclose in [max]:\n    pass", "changes torch.allclose"),
    "attribute-comprehension": ("[0 for torch.allclose in [max]]", "changes torch.allclose"),
    "attribute-with": ("with lock as F.layer_norm:\n    pass", "changes F.layer_norm"),
    "attribute-del": ("del nn.LayerNorm", "changes nn.LayerNorm"),
    "subscript": ("config['d'] = 1", "changes config['d']"),
}
REACHES = {
    "torch.os": ("torch.os.kill(torch.os.getppid(), 9)", "module os through another module"),
    "torch.sys": ("torch.sys.modules", "module sys through another module"),
    "np.os": ("np.os.system('id')", "module os"),
    "subprocess": ("x = transformers.utils.subprocess", "module subprocess"),
    "builtins": ("torch.builtins.open", "module builtins"),
    "importlib": ("F.importlib.import_module('x')", "module importlib"),
    "ctypes": ("x = np.ctypes", "module ctypes"),
    "gc": ("torch.gc.get_objects()", "module gc"),
    "_thread": ("torch._thread.start_new_thread(f, ())", "module _thread"),
    "threading": ("torch.threading.Thread(target=f)", "module threading"),
    "setup-os": ("os.getppid()", "uses os (the setup cell's import of os)"),
    "getattr-code": ('getattr(answer, "__code__")', "uses __code__, by name through getattr()"),
    "getattr-globals": ('getattr(answer, "__globals__")', "__globals__"),
    "getattr-module": ('getattr(torch, "os")', "module os"),
    "getattr-computed": ('getattr(answer, "__" + "code__")', "getattr() with an attribute name"),
    "getattr-variable": ("getattr(answer, name)", "computed at run time"),
    "hasattr-computed": ("hasattr(answer, name)", "hasattr() with an attribute name"),
    "setattr": ('setattr(answer, "__code__", f)', "sets attributes by name"),
    "vars": ('vars(answer)["__code__"]', "names __code__ in a string"),
    "dict": ("answer.__dict__", "uses __dict__"),
    "attrgetter": ('operator.attrgetter("__globals__")(answer)', "through attrgetter()"),
    "getattribute": ('object.__getattribute__(answer, "__code__")', "__code__"),
    "getattribute-method": ("answer.__getattribute__(name)", "__getattribute__"),
    "code-replace": ('answer.__code__.replace(co_filename="x.py")', "uses __code__"),
    "co-filename": ("code.co_filename", "code objects (.co_filename)"),
    "getframe": ("torch.sys._getframe(1).f_globals", "(._getframe)"),
    "currentframe": ("frame = np.inspect.currentframe()", "(.currentframe)"),
    "f-back": ("frame.f_back.f_locals", "(.f_back)"),
    "traceback-frame": ("error.__traceback__.tb_frame", "(.tb_frame)"),
    "settrace": ("torch.sys.settrace(None)", "(.settrace)"),
    "locals": ("locals()['reference'] = print", "locals()"),
    "globals": ("globals()['reference'] = print", "globals()"),
    "import-main": ("import __main__", "imports __main__"),
    "sandbox-agent": ("import sandbox_agent", "imports sandbox_agent"),
    "grading": ("from grading.host import trusted_tests", "imports grading"),
    "grading-agent": (
        "import grading.in_sandbox.sandbox_agent",
        "imports grading.in_sandbox.sandbox_agent",
    ),
    "grader-string": ('sys_modules["sandbox_agent"]', "names sandbox_agent in a string"),
    "offlimits-import": ("import lmcourse.offlimits", "lmcourse.offlimits"),
    "offlimits-from": ("from lmcourse import offlimits", "lmcourse.offlimits"),
    "offlimits-attribute": ("lmcourse.offlimits.stop = None", "lmcourse.offlimits"),
    "slips": ("from lmcourse.slips import RULES", "lmcourse.slips"),
    "import-_thread": ("import _thread", "imports _thread"),
    "import-gc": ("import gc", "imports gc"),
    "import-ctypes": ("import ctypes", "imports ctypes"),
    # the thirty-seventh hub tester: a C thread of hers (libc's pthread_create through cffi)
    # ran her Python callback with no profile hook, the declared reference unseen
    "import-cffi": ("from cffi import FFI", "imports cffi"),
    "cffi-ffi": ("from argon2.low_level import ffi", "imports argon2.low_level.ffi"),
    "cffi-ffi-attribute": ("import argon2.low_level as a\nlibc = a.ffi.dlopen(None)", "(.ffi)"),
    "cffi-dlopen": ("libc = ffi_of_hers.dlopen(None)", "through cffi (.dlopen)"),
    # the thirty-eighth hub tester's: numpy arrays over any address of the kernel's process
    "numpy-array-interface-by-type": (
        "A = type('A', (), {'__array_' + 'interface__': {'data': (id(x), False)}})",
        "type()",
    ),
    "type-with-a-namespace-of-hers": ("A = type('A', (), space)", "type()"),
    "type-with-keys-of-hers": ("A = type('A', (), {**space})", "type()"),
    "numpy-array-interface-string": ("d = {'__array_interface__': 0}", "__array_interface__"),
    "numpy-array-interface-read": ("p = a.__array_interface__", "raw memory"),
    "numpy-array-interface-property": (
        "class A:\n    @property\n    def __array_interface__(self):\n        return {}",
        "raw memory",
    ),
    "numpy-as-strided": ("np.lib.stride_tricks.as_strided(a, (2,), (n,))", "raw memory"),
    "numpy-as-strided-import": ("from numpy.lib.stride_tricks import as_strided", "as_strided"),
    "numpy-stride-tricks-import": ("import numpy.lib.stride_tricks as st", "stride_tricks"),
    # the thirty-ninth hub tester's: the same as_strided, by the module numpy defines it in
    "numpy-stride-tricks-impl": (
        "np.lib._stride_tricks_impl.as_strided(a, (2,), (n,))",
        "_stride_tricks_impl",
    ),
    "numpy-stride-tricks-impl-import": (
        "from numpy.lib._stride_tricks_impl import as_strided",
        "_stride_tricks_impl",
    ),
    "numpy-stride-tricks-impl-module": (
        "import numpy.lib._stride_tricks_impl as st",
        "_stride_tricks_impl",
    ),
    # the thirty-ninth's too: np.fromfile("/proc/self/mem", offset=id(obj)) reads any address
    "numpy-fromfile": ("np.fromfile('/proc/self/mem', count=8, offset=n)", "fromfile"),
    "numpy-fromfile-import": ("from numpy import fromfile", "fromfile"),
    # the thirty-ninth's: multiprocessing under DataLoader's module's name for it, and the
    # program its util runs (a python computing the declared reference, exec'd: unseen)
    "dataloader-python-multiprocessing": (
        "import torch.utils.data.dataloader as dl\nu = dl.python_multiprocessing.util",
        "python_multiprocessing",
    ),
    "collect-env-run": ("from torch.utils.collect_env import run", "collect_env"),
    "collect-env-module": ("from torch.utils import collect_env", "collect_env"),
    "collect-env-attribute": ("import torch.utils\nr = torch.utils.collect_env.run", "collect_env"),
    "inductor-compile-cmd": (
        "from torch._inductor.cpp_builder import run_compile_cmd",
        "_inductor",
    ),
    "hf-run-interactive-subprocess": (
        "from huggingface_hub.utils import run_interactive_subprocess",
        "run_interactive_subprocess",
    ),
    "hf-run-subprocess": (
        "import huggingface_hub.utils as u\nr = u.run_subprocess",
        "run_subprocess",
    ),
    "transformers-run-command": (
        "from transformers.testing_utils import run_command",
        "testing_utils",
    ),
    "accelerate-run-command": ("import accelerate.test_utils", "accelerate.test_utils"),
    "spawnv-passfds": ("u.spawnv_passfds(b'/bin/sh', ['sh', '-c', 'true'], ())", "spawnv_passfds"),
    "import-inspect": ("import inspect", "imports inspect"),
    "torch.library": ("torch.library.Library('aten', 'IMPL')", "torch.library"),
    "torch._C": ("torch._C._nn.gelu", "torch._C"),
    "torch.ops": ("torch.ops.aten.native_layer_norm", "torch.ops"),
    "ops-alias": ("T = torch\nT.ops.aten.add", "torch's ops"),
    "F.torch.ops": ("F.torch.ops.aten.add", "torch.ops"),
    "torch.overrides": ("torch.overrides.TorchFunctionMode", "torch's overrides"),
    "torch.jit": ("cu = torch.jit.CompilationUnit(SCRIPT)", "torch.jit"),
    "jit-alias": ("T = torch\nT.jit.script(f)", "torch's jit"),
    "jit-import": ("from torch.jit import CompilationUnit", "torch.jit"),
    # the thirty-seventh hub tester: rms_norm traced ahead of the call into aten primitives
    "torch.export": (
        "g = torch.export.export(M(), (x,)).run_decompositions().graph_module",
        "torch's export",
    ),
    "export-alias": ("T = torch\nT.export.default_decompositions()", "torch's export"),
    "export-import": ("from torch.export import default_decompositions", "torch.export"),
    "make_fx": ("from torch.fx.experimental.proxy_tensor import make_fx", "proxy_tensor"),
    "make_fx-attribute": (
        "import torch.fx.experimental as e\ng = e.proxy_tensor.make_fx(f)",
        "proxy_tensor",
    ),
    # the fortieth hub tester: the declared reference traced ahead of the call into a graph
    # module, whose generated forward runs none of the reference's code
    "fx-trace": ("_gm = torch.fx.symbolic_trace(reference)", "torch's fx"),
    "fx-import": ("from torch.fx import symbolic_trace", "torch.fx"),
    "fx-alias": ("T = torch\n_gm = T.fx.Tracer().trace(reference)", "torch's fx"),
    "fx-name": ("from torch import fx\n_gm = fx.symbolic_trace(reference)", "symbolic_trace"),
    # the lead, after the fortieth: her function that calls the reference, compiled and run once
    # in her answer cell, runs a graph with the reference inlined (dynamo traced it, never
    # called it): her f's call fires nothing
    "compile": (
        "def inner(x):\n    return reference(x)\n_g = torch.compile(inner, backend='eager')",
        "torch.compile",
    ),
    "compile-decorator": (
        "@torch.compile\ndef inner(x):\n    return reference(x)",
        "torch.compile",
    ),
    "compile-import": ("from torch import compile as c\n_g = c(reference)", "torch.compile"),
    "compile-alias": ("T = torch\n_g = T.compile(reference)", "compiles with .compile()"),
    "compiler": ("torch.compiler.reset()", "torch.compiler"),
    "aot-function": ("from functorch.compile import aot_function", "functorch"),
    "module-compile": (
        "class M(nn.Module):\n    def forward(self, x):\n        return reference(x)\n"
        "m = M()\nm.compile(backend='eager')",
        "compiles with .compile()",
    ),
    "python-dispatch": (
        "from torch.utils._python_dispatch import TorchDispatchMode",
        "torch.utils._python_dispatch",
    ),
    "python-dispatch-import": ("import torch.utils._python_dispatch", "_python_dispatch"),
    "torch._refs": ("torch._refs.nn.functional.layer_norm", "torch._refs"),
    "torch._decomp": ("from torch._decomp import decompositions", "torch._decomp"),
    "torch-function": (
        "class T(torch.Tensor):\n    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n        return 0",
        "defines __torch_function__",
    ),
    "torch-dispatch": (
        "class T(torch.Tensor):\n    def __torch_dispatch__(cls, func, types, args, kwargs):\n"
        "        return 0",
        "defines __torch_dispatch__",
    ),
    "function-mode": ("class M(TorchFunctionMode):\n    pass", "uses TorchFunctionMode"),
    "thread": ("import threading\nthreading.Thread(target=f).start()", "imports threading"),
    "thread-start": ("worker = Thread(target=f)", "starts a thread or process (Thread)"),
    "executor": ("from concurrent.futures import ThreadPoolExecutor", "imports concurrent"),
    "executor-start": ("pool = ThreadPoolExecutor(2)", "(ThreadPoolExecutor)"),
    "process": ("torch.multiprocessing.Process(target=f)", "multiprocessing"),
    "multiprocessing": ("import multiprocessing", "imports multiprocessing"),
    "timer": ("t = threading_timer.Timer(1, f)", "(Timer)"),
    "spawn": ("torch.multiprocessing.spawn(f)", "(spawn)"),
    "getattr-as-value": ("functools.reduce(getattr, names, answer)", "getattr passed around"),
    "exec-as-value": ("[exec][0](source)", "exec passed around as a value"),
    "vars-as-value": ("namespace = list(map(vars, [answer]))", "vars passed around"),
    "cpp-extension": ("from torch.utils.cpp_extension import load_inline", "cpp_extension"),
    "ctypeslib": ("np.ctypeslib.load_library('x', '.')", "module ctypeslib"),
    "print-self": ("print.__self__.open", "uses __self__"),
    "builtins-name": ("b = __builtins__", "reads __builtins__"),
    # issue 38's security tester: each reached the sandbox's agent, or ran a string, unflagged
    "pkgutil": ('pkgutil.resolve_name("sandbox" + "_agent")', "finds a module by name"),
    # the forty-third tester: sys by a computed name reached the armed guard in sys.modules
    "pytest.importorskip": ("import pytest\ns = pytest.importorskip('sy' + 's')", "imports pytest"),
    "importorskip": ("from numpy.testing import importorskip", "importorskip"),
    "entry_point": (
        "import importlib_metadata as m\ns = m.EntryPoint('s', 'sy' + 's', 'g').load()",
        "imports importlib_metadata",
    ),
    "ImportString": ("import pydantic\nt = pydantic.ImportString", "imports pydantic"),
    "sphinx": ("import sphinx.util._importer as m\ns = m.import_object('sys')", "imports sphinx"),
    "import_object": ("from numpy.testing import import_object", "import_object"),
    # the forty-sixth tester's scan: installed functions that import the name a caller passes
    "logging.config": (
        "import logging.config\ns = logging.config.BaseConfigurator({}).resolve('sy' + 's')",
        "logging.config",
    ),
    "dictConfig": ("from logging import config\nconfig.dictConfig(c)", "logging.config"),
    "six": ("import six\ns = six._import_module('sy' + 's')", "imports six"),
    "load_backend_module": (
        "from matplotlib.backends.registry import backend_registry as r\n"
        "s = r.load_backend_module('module://sy' + 's')",
        "load_backend_module",
    ),
    "networkx": ("import networkx.lazy_imports as m\ns = m._lazy_import('sy' + 's')", "networkx"),
    "_ufunc_reconstruct": (
        "m = np.core._ufunc_reconstruct('sy' + 's', 'modules')",
        "_ufunc_reconstruct",
    ),
    "_makenamedict": ("from numpy.lib._utils_impl import _makenamedict", "_makenamedict"),
    "mistune": ("from mistune.plugins import import_plugin", "imports mistune"),
    "myst_parser": ("from myst_parser.config.main import check_heading_slug_func", "myst_parser"),
    "docutils": ("from docutils.languages import LanguageImporter", "imports docutils"),
    "setuptools": ("from setuptools.config.expand import _load_spec", "imports setuptools"),
    "pip": ("from pip._vendor.distlib.util import resolve", "imports pip"),
    "fontTools": ("from fontTools.ttLib.ttFont import getCustomTableClass", "fontTools"),
    "torch-lazy_deprecated_import": (
        "m = torch.nn.utils._deprecation_utils.lazy_deprecated_import([], 'o', 'sy' + 's')",
        "lazy_deprecated_import",
    ),
    "test.support": ("from test.support.import_helper import import_fresh_module", "imports test"),
    "jsonschema": ("from jsonschema.cli import _resolve_name_with_default", "jsonschema"),
    "xdist": ("from xdist.workermanage import unserialize_warning_message", "imports xdist"),
    "alembic": ("from alembic.script.write_hooks import module", "imports alembic"),
    "coverage": ("from coverage.execfile import PyRunner", "imports coverage"),
    "nbconvert": ("from nbconvert.exporters.templateexporter import TemplateExporter", "nbconvert"),
    "jupyter_lsp": ("from jupyter_lsp.trait_types import LoadableCallable", "jupyter_lsp"),
    "sqlalchemy": ("from sqlalchemy.util.preloaded import _ModuleRegistry", "sqlalchemy"),
    "fsspec": ("from fsspec.registry import _import_class", "imports fsspec"),
    "torch-try_import": ("from torch._utils import try_import", "a private module of torch"),
    "enum_object_hook": ("from torch.utils._pytree import enum_object_hook", "enum_object_hook"),
    "optparse-read_module": (
        "import optparse\nv = optparse.Values()\nv.read_module('sy' + 's', 'loose')",
        "read_module",
    ),
    "enum-_convert_": ("E = enum.Enum._convert_('E', 'sy' + 's', f)", "_convert_"),
    "import-pkgutil": ("import pkgutil", "imports pkgutil"),
    "timeit": ("import timeit", "imports timeit"),
    "timeit-string": ('t.timeit("import sandbox_agent", number=1)', "names sandbox_agent in a"),
    "cprofile": ("from cProfile import run", "imports cProfile"),
    "unittest-mock": ("from unittest import mock", "imports unittest"),
    "string-annotation": ("def f(x: \"__import__('os')\"):\n    pass", "annotation written as"),
    "string-annotation-call": ('def f() -> "g()":\n    pass', "annotation written as a string"),
    "get-type-hints": ("typing.get_type_hints(f)", "get_type_hints"),
    "get-type-hints-name": ("from typing import get_type_hints", "get_type_hints"),
    "import-in-string": ("code = 'x = __import__(name)'", "names __import__ in a string"),
    "written-module": ("import lm10_written_here", "no installed module"),
    "relative-import": ("from . import helper", "relative import"),
    "savetxt": ('np.savetxt("m.py", [], header=code)', "writes a file (savetxt)"),
    "torch-save": ('torch.save(x, "m.py")', "writes a file (save)"),
    "allow-pickle": ('np.load("x.npy", allow_pickle=True)', "loads a pickle"),
    "weights-only": ('torch.load("x.pt", weights_only=False)', "loads a pickle"),
    # the forty-seventh hub tester: the same switches by position, unpacked, by a true value
    # that is not True, or through the loader as a value: np.load(f, None, True) of her pickle
    # gave sys.modules, unflagged
    "allow-pickle-by-position": ("import numpy as np\nm = np.load(f, None, True)", "pickle"),
    "read-array-by-position": ("import numpy as np\nnp.lib.format.read_array(f, 1)", "pickle"),
    "allow-pickle-unpacked": ("import numpy as np\nnp.load(f, **{'allow_pickle': 1})", "pickle"),
    "allow-pickle-starred": ("import numpy as np\nnp.load(*[f, None, True])", "pickle"),
    "allow-pickle-truthy": ("import numpy as np\nnp.load(f, allow_pickle='y')", "pickle"),
    "weights-only-falsy": ("import torch\ntorch.load(f, weights_only='')", "pickle"),
    "torch-load-unpacked": ("import torch\ntorch.load(f, **options)", "pickle"),
    "np-load-as-value": ("import numpy as np\nL = np.load\nL(f, None, True)", "pickle"),
    "np-load-imported-as": ("from numpy import load as L", "loads a pickle (load as L)"),
    "torch-distributed": ("from torch.distributed.checkpoint import format_utils", "torch.dist"),
    "torch-datapipes": ("from torch.utils.data.datapipes.utils import decoder", "datapipes"),
    "torch-benchmark": ("import torch.utils.benchmark as b", "torch.utils.benchmark"),
    "torch-benchmark-attr": ("torch.utils.benchmark.Timer(stmt=code)", "torch.utils.benchmark"),
    "numpy-f2py": ("from numpy.f2py.crackfortran import myeval", "numpy.f2py"),
    "numpy-f2py-attr": ("import numpy as np\nnp.f2py.crackfortran.myeval(code)", "numpy.f2py"),
    "pil-imagemath": ("from PIL import ImageMath", "PIL.ImageMath"),
    "pil-imagemath-attr": ("import PIL\nPIL.ImageMath.unsafe_eval(code)", "PIL.ImageMath"),
    "code-as-attribute": ("w.code.InteractiveInterpreter().runsource(src)", "module code"),
    "doctest-as-attribute": ("pd.doctest.DocTestRunner().run(t)", "module doctest"),
    "timeit-as-attribute": ("m.timeit.timeit(src, number=1)", "module timeit"),
    "np-runstring": ("np.testing.runstring(src, {})", "runstring"),
    "np-runstring-imported": ("from numpy.testing import runstring", "runstring"),
    # the forty-ninth hub tester: mpmath keeps the builtin exec as `exec_`
    "mpmath-exec": ("import mpmath.libmp.backend as b\nb.exec_(src, {})", "imports mpmath"),
    "exec-trailing-underscore": ("m.libhyper.exec_(src, {})", "a copy of exec"),
    "rich-style-loads": ("import rich.style\nm = rich.style.loads(data)", "imports rich"),
    "loads-as-attribute": ("m = st.loads(data)", "loads a pickle?"),
    "mock-as-attribute": ('a.mock.patch("sandbox" + "_agent._guard", g).start()', "module mock"),
    "pytest-as-attribute": ('nbval.plugin.pytest.importorskip("sy" + "s")', "module pytest"),
    "six-as-attribute": ("rfc3339_validator.six", "module six"),
    "cdll-as-attribute": ("libc = pamela.CDLL(None)", "cffi (.CDLL)"),
    "wrapper-getattr": ('s = W.wrapper_getattr(torch, "s" + "ys")', "by name (wrapper_getattr)"),
    "wrapper-setattr": ("W.wrapper_setattr(m, name, v)", "by name (wrapper_setattr)"),
    "private-module-of-a-package": ("import websocket._wsdump as w", "a private module of a"),
    "private-module-from": ("from websocket._wsdump import main", "a private module of a"),
    "matplotlib-subprocess": (
        'c._check_and_log_subprocess(["python3", "-c", src], log)',
        "runs a program (._check_and_log_subprocess)",
    ),
    "numpy-distutils": ("from numpy.distutils.exec_command import exec_command", "distutils"),
    "numpy-distutils-attr": (
        "import numpy as np\nnp.distutils.misc_util.get_frame(0)",
        "numpy.distutils",
    ),
    "singledispatchmethod": ("@functools.singledispatchmethod\ndef g(x):\n    pass", "evaluates"),
    "string-annotation-reaching-sys": (
        'def _(self, x: "H[torch.sys]"):\n    pass',
        "a string read as code",
    ),
    "forward-reference-in-a-subscript": (
        'class C:\n    x: typing.List["H[torch.sys]"] = None\nattr.resolve_types(C)',
        "a string read as code",
    ),
    "forward-reference-aliased": ('T = typing.Optional["H[torch.sys]"]', "a string read as code"),
    "site-addpackage": ('jc.site.addpackage(".", "x.pth", set())', "runs a program (.addpackage)"),
    "logging-file-handler": ('h = logging.FileHandler("x.pth")', "writes a file (FileHandler)"),
    "attrs-alias": (
        'import attr\nC = attr.make_class("C", {"z": attr.ib(alias=code)})',
        "imports attr",
    ),
    "attrs-new-name": ("from attrs import define, field", "imports attrs"),
    "matplotlib-testing": ("from matplotlib.testing import subprocess_run_helper", "testing"),
    "logging-basic-config-file": (
        'logging.basicConfig(filename="lx.py", format="%(message)s")',
        "basicConfig's filename",
    ),
    "pygments-lexer-file": ('pl.load_lexer_from_file("lx.py")', "load_lexer_from_file"),
    "function-maker": ('g = d.FunctionMaker.create("g()", body, {})', "FunctionMaker"),
    "prometheus-decorator": (
        "import prometheus_client.decorator as d",
        "prometheus_client.decorator",
    ),
    "parso-getattr": ("from parso.pgen2.generator import _make_transition", "imports parso"),
    "package-main": ("from platformdirs.__main__ import _dir_or_error", "a package's __main__"),
    "timer-imported-as": ("from threading import Timer as T", "Timer as a name"),
    "np-load-name-as-value": ("from numpy import load\nL = load", "load passed around"),
    "torch-private": ("torch._transformer_encoder_layer_fwd(x)", "torch's private"),
    "torch-private-alias": ("F._canonical_mask(x)", "torch's private"),
    "dunder-attribute": (
        "R.__repr__ = functools.partial(out.extend, map(F.rms_norm, [x], [s]))",
        "sets __repr__",
    ),
    "dunder-class-body": ("class R:\n    __repr__ = print", "sets __repr__"),
    # the sixty-seventh hub tester: a class's __module__ set, all words, by namedtuple's or
    # make_dataclass's module=, an object of hers whose __str__ the agent calls unguarded
    "module-keyword": (
        "import collections\nT = collections.namedtuple('T', 'a', module=Name())",
        "sets a class's __module__",
    ),
    "module-keyword-dataclass": (
        "import dataclasses\nT = dataclasses.make_dataclass('T', ['a'], module=Name())",
        "sets a class's __module__",
    ),
    # the seventy-second: the same keyword passed by ** (the agent reads a str only, too)
    "module-keyword-unpacked": (
        "import collections\nT = collections.namedtuple('T', 'a', **{'module': Name()})",
        "sets a class's __module__",
    ),
    "zipfile": ("from zipfile import ZipFile", "imports zipfile"),
    "torch-hub": ('torch.hub.load(".", "m", source="local")', "torch.hub"),
    # the thirtieth hub tester: IPython's shell, whose run_cell runs any string, unflagged
    "exit-shell": ("exit._ip.run_cell(code)", "exit passed around as a value"),
    "quit-shell": ("shell = quit._ip", "quit passed around as a value"),
    "get-ipython-as-value": ("[get_ipython][0]().run_cell(code)", "get_ipython passed around"),
    # the thirty-first hub tester: attributes read by name, unflagged, reached IPython's shell
    # from a frame of traceback.walk_stack (`g("f_locals")(frame)["self"]`)
    "attrgetter-as-value": ('g = operator.attrgetter\nns = g("f_loc" + "als")(f)', "attrgetter"),
    "attrgetter-imported-as": ("from operator import attrgetter as g", "attrgetter as a value"),
    "methodcaller-mapped": ("list(map(operator.methodcaller, names))", "methodcaller as a"),
    "formatter-get-field": ('string.Formatter().get_field("0.f_locals", [f], {})', "Formatter"),
    "formatter-import": ("from string import Formatter", "string.Formatter"),
    "match-class-keyword": ("match f:\n    case object(f_locals=ns):\n        pass", "match pat"),
    "match-class-dunder": (
        "match display:\n    case object(__globals__=g):\n        pass",
        "match",
    ),
    "attrgetter-dotted": ('operator.attrgetter("f_back.f_locals")(frame)', "f_back"),
    "ipywidgets-get-ipython": (
        "import ipywidgets\nipywidgets.get_ipython().run_cell(code)",
        "ipywidgets",
    ),
    "shell-attribute": ("w.widgets.get_ipython().run_cell(code)", "reaches IPython's shell"),
    "shell-imported": (
        "from matplotlib_inline.backend_inline import get_ipython",
        "matplotlib_inline",
    ),
    "comm-kernel": ("import comm\nk = comm.create_comm().kernel", "imports comm"),
    "comm-attribute": ("k = w.Widget.comm.kernel", "module comm"),
    "private-alias-sys": ("m = collections._sys.modules", "module _sys"),
    "private-alias-os": ("random._os.environ", "module _os"),
    "alias-builtins": ("b = enum.bltns", "module bltns"),
    "private-alias-import": ("from collections import _sys", "imports collections._sys"),
    "torch-tarfile": ("torch.serialization.tarfile.open(path).extractall()", "module tarfile"),
    "torch-multiprocessing-alias": ("torch.cuda.tunable.mp.get_context()", "module mp"),
    "private-open": ('np.lib._datasource._open("m.py", "w").write(code)', "private copy of open"),
    "frozen-importlib": ("import _frozen_importlib as f", "a private module"),
    "gcd-import": ('m = f._gcd_import("o" + "s")', "finds a module by name"),
    "private-c-module": ("import _ctypes", "a private module"),
    "sympify": ('import sympy\nsympy.sympify("__imp" + "ort__(...)")', "imports sympy"),
    "jinja2": ("from jinja2 import Template", "imports jinja2"),
    "sympy-attribute": ("torch.fx.experimental.symbolic_shapes.sympy.sympify(s)", "module sympy"),
    "walk-stack": ("frame = next(traceback.walk_stack(None))[0]", "walk_stack"),
    "walk-stack-import": ("from traceback import walk_stack", "imports traceback.walk_stack"),
    # the fifty-second hub tester: a name bound only as a local of a function the cell never
    # calls is not hers at the top, where it is the builtin
    "exec-bound-in-a-dead-function": (
        "def never():\n    exec = 0\n    return exec\nrun = exec\nrun('x = 1')",
        "exec passed around as a value",
    ),
    "exec-a-parameter-elsewhere": (
        "def never(exec):\n    return exec\n[exec][0]('x = 1')",
        "exec passed around as a value",
    ),
    "open-a-comprehension-variable-elsewhere": (
        "names = [open for open in 'ab']\nf = open",
        "open passed around as a value",
    ),
    "exec-local-of-a-method-read-in-the-class": (
        "class A:\n    def m(self):\n        exec = 0\n        return exec\n    run = exec",
        "exec passed around as a value",
    ),
    "exec-declared-global-in-a-function": (
        "def g():\n    exec = 0\n    def h():\n        global exec\n        return exec\n"
        "    return h",
        "exec passed around as a value",
    ),
    "exec-in-a-class-body-that-binds-it-in-a-function-that-does": (
        "def f():\n    exec = 0\n    class A:\n        weight = exec\n        exec = 1\n"
        "    return A.weight",
        "exec passed around as a value",
    ),
    # a name her cell binds at the top is hers for every read at the top, bound or not yet
    "exec-bound-by-an-empty-loop": (
        "for exec in []:\n    pass\nrun = exec\nrun('x = 1')",
        "binds exec (a for loop's target), a builtin's name",
    ),
    "exec-bound-in-a-dead-branch": (
        "if False:\n    exec = 0\nrun = exec\nrun('x = 1')",
        "binds exec (assignment), a builtin's name",
    ),
    "exec-bound-by-except": (
        "try:\n    pass\nexcept Exception as exec:\n    pass\nrun = exec",
        "binds exec (except ... as), a builtin's name",
    ),
    "open-bound-after-its-read": ("f = open\nopen = 1", "binds open (assignment), a builtin's"),
    "vars-bound-global-in-a-function": (
        "def g():\n    global vars\n    vars = 1\nv = vars",
        "binds vars (assignment), a builtin's name",
    ),
    # the fifty-ninth tester: update_wrapper is a getattr and a setattr by names she gives it
    # and a write of her class's namespace into a module's (all words)
    "update_wrapper": (
        "import functools\nimport torch\ngot = []\nclass Box:\n"
        "    def __setattr__(self, name, value):\n        got.append(value)\n"
        "functools.update_wrapper(Box(), torch, assigned=('sy' + 's',), updated=())",
        "functools.update_wrapper",
    ),
    "update_wrapper-imported-as": (
        "from functools import update_wrapper as u\nclass H:\n    pass\nu(torch, H)",
        "functools.update_wrapper",
    ),
    "wraps-called-on-a-module": (
        "from functools import wraps\nclass H:\n    pass\nwraps(H)(torch)",
        "functools.update_wrapper",
    ),
    "wraps-decorator-with-names": (
        "import functools\n@functools.wraps(torch, assigned=('sy' + 's',))\ndef g():\n    pass",
        "functools.update_wrapper",
    ),
    # copy.copy writes a reduce value's state into what her function returns, by her names
    "reduce-state": (
        "import copy\nimport torch\ndef give():\n    return torch\nclass W:\n"
        "    def __reduce__(self):\n        return (give, (), (None, {'sy' + 's': 0}))\n"
        "copy.copy(W())",
        "defines __reduce__",
    ),
    "reduce-ex-state": (
        "import copy\nclass W:\n    def __reduce_ex__(self, protocol):\n"
        "        return (list, (), None, None, None)\ncopy.deepcopy(W())",
        "defines __reduce_ex__",
    ),
    # the same without __reduce__ (the sixty-first hub tester): object's own reduce asks her
    # class for __getnewargs__ and __getstate__, and copy calls cls.__new__(cls, *newargs),
    # which torch.inference_mode's answers with her __call__'s value (torch), then sets her
    # state's second dict on it by setattr
    "getstate-newargs": (
        "import copy\nimport torch\nclass W(torch.inference_mode):\n"
        "    def __call__(self, x):\n        return torch\n"
        "    def __getnewargs__(self):\n        return (print,)\n"
        "    def __getstate__(self):\n        return (None, {'sy' + 's': 0})\n"
        "copy.copy(W())",
        "defines __getstate__",
    ),
    "getnewargs-ex": (
        "import copy\nimport torch\nclass W(torch.inference_mode):\n"
        "    def __call__(self, x):\n        return torch\n"
        "    def __getnewargs_ex__(self):\n        return ((print,), {})\n"
        "copy.copy(W())",
        "defines __getnewargs_ex__",
    ),
    "getattr-bound-by-an-empty-loop": (
        "for getattr in []:\n    pass\nlook = getattr\nm = look(torch, 'sy' + 's').modules",
        "binds getattr (a for loop's target), a builtin's name",
    ),
}
HONEST = {
    "wraps-decorator": "import functools\nfrom functools import wraps as w\n\n\n"
    "def timed(fn):\n    @functools.wraps(fn)\n    def inner(*args, **kwargs):\n"
    "        return fn(*args, **kwargs)\n\n    @w(fn)\n    def again(*args):\n"
    "        return fn(*args)\n\n    return inner, again",
    "tqdm": "from tqdm import tqdm\nfor x in tqdm(range(3)):\n    pass\n",
    "torch-as-strided": "def windows(x):\n    return x.as_strided((2, 2), (1, 1))",
    "type-with-plain-names": "Kind = type('Kind', (Exception,), {'size': 1})",
    "type-of-a-value": "def kind(x):\n    return type(x).__name__",
    "tqdm-auto": "from tqdm.auto import tqdm\nbar = tqdm(total=3)\nbar.update(1)\nbar.close()",
    "trange": "from tqdm import trange\nfor i in trange(3):\n    pass",
    "parameters": "def answer(config, check_type=None, reference=0):\n    return config",
    "locals": "def answer(x):\n    reference = x\n    config = 2\n    return reference * config",
    "comprehension": "values = [reference for reference in range(3)]",
    "lambda": "f = lambda config: config",
    "class-body": "class Model(nn.Module):\n    config = 1\n    def forward(self, x):\n"
    "        return F.relu(x)",
    "setup-imports-again": "import torch\nimport torch.nn.functional as F\nfrom torch import nn",
    "setup-imports-other-spelling": "from torch.nn import functional as F\nimport torch.nn as nn",
    "getattr-plain": 'head = getattr(config, "head_dim", None)\nok = hasattr(config, "d")',
    "super-init": "class A(nn.Module):\n    def __init__(self):\n        super().__init__()",
    "type-name": "name = type(reference).__name__",
    "torch-api": "x = torch.stack([torch.ones(2)])\ny = F.layer_norm(x, (2,))\nx.float()",
    "loop": "total = 0\nfor i, d in enumerate([64, 128]):\n    total += d\n",
    "with": "with torch.no_grad():\n    y = torch.zeros(1)",
    "main-guard": "if __name__ == '__main__':\n    pass",
    "math": "import math\nx = math.sqrt(2)",
    "numpy": "import numpy as np\nx = np.zeros(3)",
    "nested-function": "def f():\n    def reference():\n        return 1\n    return reference()",
    "exception": "try:\n    1 / 0\nexcept ZeroDivisionError as error:\n    message = str(error)",
    "function-attribute": "def answer(x):\n    return x\nanswer.calls = 0",
    "builtin-names-as-locals": "def answer(vars, input=None):\n    f = lambda open: open\n"
    "    def inner():\n        return [vars for _ in range(2)], input\n"
    "    class Local:\n        seen = vars\n    return f, inner, {exec: 1 for exec in 'ab'}",
    "chain-and-a-cache": "import functools\nimport itertools\n@functools.lru_cache(maxsize=None)\n"
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
    "flat = list(itertools.chain.from_iterable([[1], [2]]))\nfib.cache_clear()\nfib.cache_info()",
    "timed-with-time": "import time\nstart = time.time()\nprint(f'{time.time() - start:.2f} s')",
    "device-by-cuda": "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'",
    "parameter-named-vars": "def answer(vars, compile=None):\n    return vars, compile",
    "annotations": 'def f(x: "torch.Tensor", n: "int | None") -> "list[int]":\n    pass',
    "typing": "from typing import Optional\ndef f(x: Optional[int] = None):\n    return x",
    "installed-modules": "import itertools\nimport tqdm\nfrom numpy import linalg",
    "string-keys-and-forward-references": "d = {'a': 1}\nv = d['a']\n"
    "def g(x: 'list[torch.Tensor]') -> typing.Optional['torch.Tensor']:\n    return d['b c']",
    "trailing-underscore-attributes": "class A:\n    def __init__(self):\n"
    "        self.input_ = self.open_ = self.type_ = None",
    "attrgetter-constant": 'import operator\nweights = operator.attrgetter("weight")(layer)',
    "string-letters": "import string\nletters = string.ascii_lowercase",
    "future-import": "from __future__ import annotations",
    "match-class-honest": "match point:\n    case Point(x=0, y=y):\n        pass",
    # honest answers flagged as outside once (the fifty-second, fifty-fourth and fifty-sixth
    # hub testers' tables): a named tuple's methods, a numpy Generator, heaps, bisection,
    # pprint, decimal, statistics, ChainMap, string.Template
    "namedtuple-methods": "from collections import namedtuple\nShape = namedtuple('Shape', 'd h')\n"
    "s = Shape(64, 4)._replace(h=8)\nrow = s._asdict()\nnames = Shape._fields\n"
    "t = Shape._make([1, 2])",
    "numpy-generator": "import numpy as np\nrng = np.random.default_rng(0)\n"
    "ids = rng.integers(0, 10, size=4)\nx = rng.normal(size=3)",
    "heaps-bisect-pprint": "import heapq\nimport bisect\nfrom pprint import pprint, pformat\n"
    "h = []\nheapq.heappush(h, 3)\nbig = heapq.nlargest(2, [1, 5, 3])\n"
    "i = bisect.bisect_left([1, 2, 4], 3)\npprint({'a': 1})\ntext = pformat([1])",
    "decimal-statistics-template": "from decimal import Decimal\nimport statistics\n"
    "from collections import ChainMap\nfrom string import Template\n"
    "r = Decimal('1.2345').quantize(Decimal('0.01'))\n"
    "slope = statistics.linear_regression([1, 2, 3], [2, 4, 6]).slope\n"
    "p = statistics.NormalDist(0, 1).cdf(1.0)\nc = ChainMap({}, {'a': 1}).new_child()\n"
    "s = Template('$n heads').substitute(n=4)",
}

# Honest code outside the labs' vocabulary (grading/host/vocabulary.py): a library the labs do
# not need (logging, PIL, matplotlib, regex), a loader of files, a private name of torch's, an
# attribute name that is no word (also one her own class sets: `n.attrs`): flagged as outside
# the vocabulary, for a person to read, and by nothing else.
OUTSIDE_VOCABULARY = {
    "attribute-named-attrs": "class N:\n    def __init__(self):\n        self.attrs = {}\n"
    "n = N()\nk = n.attrs\nt = node.attr",
    "np-testing": "import numpy as np\nnp.testing.assert_allclose(np.ones(2), np.ones(2))",
    "pil-image": "from PIL import Image\nimport numpy as np\nim = Image.fromarray(np.ones(4))",
    "torch-data": "from torch.utils.data import DataLoader, TensorDataset",
    "np-load": "import numpy as np\nm = np.load('x.npy')\nn = np.load('x.npy', 'r', False)",
    "torch-load": "import torch\nm = torch.load('x.pt', 'cpu', weights_only=True)",
    "tensor-private-name": "v = x._version",
    "attribute-names-with-attr": "n = layer.num_attrs\nh = config.get_attrs()",
    "matplotlib-cbook": "import matplotlib.cbook as cbook\nx = cbook.flatten([[1], [2]])",
    "logging-stream": "import logging\nlogging.basicConfig(level=logging.INFO)\n"
    "logging.getLogger('lab').addHandler(logging.StreamHandler())",
    "json-loads": "import json\nimport json as js\nc = json.loads('{}')\nd = js.loads('{}')",
    "honest-attribute-names": "from torch.profiler import profile\ny = torch.trace(x)\n"
    "r = self.resource\ns = self.sa\nself.requests = []\nc = self.http",
    "re-compile": "import re\nimport regex as rx\nW = re.compile(r'\\w+').match('a')\n"
    "B = rx.compile('b')",
}


@pytest.mark.parametrize("case", sorted(REBINDING))
def test_every_binding_form_of_a_protected_name_is_flagged(case):
    source, words = REBINDING[case]
    found = flags(source)
    assert any(words in f for f in found), found
    assert all(f.startswith("answer line ") for f in found), found


@pytest.mark.parametrize("case", sorted(REACHES))
def test_every_route_to_os_sys_code_and_the_grader_is_flagged(case):
    source, words = REACHES[case]
    found = flags(source)
    assert any(words in f for f in found), found
    assert all(f.startswith("answer line ") for f in found), found


# The routes the lists of submission_checks flag by the construct, not by a name of a module or
# function (so no vocabulary is needed for them): an attribute name computed at run time, a
# dunder defined or set, a class made by type() from a namespace of hers, torch.compile (its
# word `compile` is re.compile's too), a grader module's name in a string, a string annotation
# that calls her code; and cases whose snippet names a class it never imports (Thread,
# ThreadPoolExecutor, TorchFunctionMode: the import is what the vocabulary flags).
BY_CONSTRUCT = {
    "attrgetter-as-value",
    "attrgetter-imported-as",
    "compile",
    "compile-alias",
    "compile-decorator",
    "compile-import",
    "dunder-attribute",
    "dunder-class-body",
    "module-keyword",
    "module-keyword-dataclass",
    "module-keyword-unpacked",
    "executor-start",
    "function-mode",
    "getattr-as-value",
    "getattr-bound-by-an-empty-loop",
    "getattr-computed",
    "getattr-variable",
    "grader-string",
    "hasattr-computed",
    "import-in-string",
    "methodcaller-mapped",
    "module-compile",
    "numpy-array-interface-by-type",
    "numpy-array-interface-property",
    "numpy-array-interface-string",
    "string-annotation-call",
    "thread-start",
    "torch-dispatch",
    "torch-function",
    "type-with-a-namespace-of-hers",
    "type-with-keys-of-hers",
    "reduce-state",
    "reduce-ex-state",
    "getstate-newargs",
    "getnewargs-ex",
    # words all: functools' update_wrapper, a getattr and setattr by names she gives it
    "update_wrapper",
    "update_wrapper-imported-as",
    "wraps-called-on-a-module",
    "wraps-decorator-with-names",
}


@pytest.mark.parametrize("case", sorted(set(REACHES) - BY_CONSTRUCT))
def test_every_route_by_a_name_is_outside_the_vocabulary_too(case):
    """Each route the testers found through a module or function nobody had listed (every
    case but BY_CONSTRUCT's) is flagged by the vocabulary as well, without its list entry: the
    next one, in a module nobody lists, is flagged the same way."""
    found = flags(REACHES[case][0])
    assert any(sc.OUTSIDE in f for f in found), found


def test_the_routes_flagged_by_the_construct_are_still_routes():
    assert set(REACHES) >= BY_CONSTRUCT


@pytest.mark.parametrize("case", sorted(HONEST))
def test_honest_code_is_not_flagged(case):
    assert flags(HONEST[case]) == []


def test_an_attribute_name_she_sets_is_no_word_on_a_module():
    """`self.transformers = 0` in a class of hers does not make `.transformers` a word: the
    same name on the course's module is the module transformers."""
    source = (
        "import lmcourse.pretrained as p\nclass A:\n    def __init__(self):\n"
        "        self.transformers = 0\nt = p.transformers"
    )
    assert flags(source) == ["answer line 5: outside the labs' vocabulary: .transformers"]


@pytest.mark.parametrize("case", sorted(OUTSIDE_VOCABULARY))
def test_honest_code_outside_the_vocabulary_is_flagged_as_that_only(case):
    found = flags(OUTSIDE_VOCABULARY[case])
    assert found and sc.without_outside(found) == [], found
    assert all(sc.OUTSIDE in f for f in found), found


def test_a_flag_names_the_cell_and_line():
    assert flags("x = 1\ny = 2\nfor check_type in []:\n    pass") == [
        "answer line 3: redefines check_type (a for loop's target), defined by the setup cell"
    ]


def test_a_cell_the_student_added_is_read_too():
    released = release()
    nb = copy.deepcopy(released)
    nb.cells.append(nbformat.v4.new_code_cell("x = 1\nimport sandbox_agent"))
    assert sc.flags(nb, released) == [
        "cell 4 line 2: imports sandbox_agent; outside the labs' vocabulary: imports sandbox_agent"
    ]


def test_bound_names_reads_every_binding_form():
    tree = sc.parse(
        "import a.b\nfrom c import d as e\nfor f in g: pass\nwith h as i: pass\n"
        "if (j := 1): pass\ntry: pass\nexcept E as k: pass\nclass L: pass\ndef m(n): o = 1\n"
        "[p for p in q]\n[(r := s) for s in t]\nmatch u:\n    case [v, *w]: pass\n"
        "def x():\n    global y\n    y = 1\ndel z\n"
    )
    assert sc.bound_names(tree) == set("aefijkLmrvwxyz")


def honest_submissions():
    """(label, submission, release) for every solution notebook and every honest case."""
    found = []
    for module in sorted((ROOT / "tests" / "lab_cases").glob("l[0-9].py")):
        lab = f"LM10-L{module.stem[1:]}"
        path = ROOT / "labs" / lab / f"{lab}.ipynb"
        released = nbformat.read(path, as_version=4)
        solution = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
        found.append((f"{lab} solution", solution, released))
        cases = importlib.import_module(f"lab_cases.{module.stem}")
        for name in ("correct", "alternatives", "mistake", "mistakes", "hardcoded"):
            if hasattr(cases, name):
                nb = getattr(cases, name)(copy.deepcopy(released))
                found.append((f"{lab} {name}", nb, released))
    return found


def test_no_solution_or_honest_lab_case_is_flagged():
    submissions = honest_submissions()
    assert len(submissions) >= 30
    flagged = {label: f for label, nb, released in submissions if (f := sc.flags(nb, released))}
    assert flagged == {}


def test_the_lab_cases_that_patch_a_reference_are_flagged():
    for module in sorted((ROOT / "tests" / "lab_cases").glob("l[0-9].py")):
        lab = f"LM10-L{module.stem[1:]}"
        released = nbformat.read(ROOT / "labs" / lab / f"{lab}.ipynb", as_version=4)
        cases = importlib.import_module(f"lab_cases.{module.stem}")
        found = sc.flags(cases.refpatch(copy.deepcopy(released)), released)
        assert any("redefines" in f for f in found), (lab, found)


def test_the_synthetic_class_is_flagged_only_where_it_reaches_past_the_lab():
    from lab_cases import class_l2

    released = nbformat.read(ROOT / "labs" / class_l2.LAB / f"{class_l2.LAB}.ipynb", as_version=4)
    class_, design = class_l2.build(released)
    wrong = {
        student: found
        for student, (nb, _) in class_.items()
        if nb is not None
        and bool(found := sc.flags(nb, released)) != (design[student]["case"] == "flagged")
    }
    assert wrong == {}


def test_honest_students_of_the_copying_cases_are_not_flagged():
    from lab_cases import copying

    flagged = {}
    for lab in copying.LABS:
        released = nbformat.read(ROOT / "labs" / lab / f"{lab}.ipynb", as_version=4)
        for i in range(copying.HONEST):
            nb = copying.notebook(lab, copying.honest_answers(lab, i), copy.deepcopy(released))
            if found := sc.flags(nb, released):
                flagged[lab, i] = found
    assert flagged == {}


def test_a_cell_too_deep_for_the_checks_is_one_flag_not_a_stop():
    """`_z = 1+1+...+1` of 600 terms, which Python runs, made the checks raise RecursionError
    before any of her code ran: the batch's row read `error`, 0 of 13, and the class report and
    the grades export, which read the flags too, stopped on it (the seventy-fifth hub tester).
    It is one flag now, which sends the notebook to a person, and its cell is not read."""
    deep = "_z = " + "+".join(["1"] * 600) + "\n"
    assert flags(deep) == [sc.TOO_DEEP]
    assert flags("_z = " + "+".join(["1"] * 300) + "\n") == []
    assert flags(deep + "import os\n") == [sc.TOO_DEEP]  # read by the person, not the checks


def test_a_cell_the_kernel_reads_after_barry_as_flufl_is_checked():
    """IPython keeps a cell's `from __future__ import barry_as_FLUFL` for every later cell,
    which it then reads with `<>` for `!=`: a later cell holding one was a syntax error to the
    checks, unread, and ran `import sys` (the agent's guard switched off, flags []: the
    seventy-ninth hub tester). The cell is read as the kernel reads it, and the future flagged."""
    from IPython.core.compilerop import CachingCompiler

    later = "import sys\nif 1 <> 2:\n    ran = sys.platform\n"
    kernels = CachingCompiler()  # the kernel's compiler, which keeps a cell's futures
    kernels("from __future__ import barry_as_FLUFL\n", "<cell 1>", "exec")
    assert kernels.ast_parse(later)  # the kernel reads it (and runs it: the sandbox's test)
    released = release()
    nb = copy.deepcopy(released)
    nb.cells[1].source = "from __future__ import barry_as_FLUFL\n" + STUB
    nb.cells.insert(2, nbformat.v4.new_code_cell(later))
    found = sc.flags(nb, released)
    assert any("imports sys" in f for f in found), found
    assert any("barry_as_FLUFL" in f for f in found), found
    assert flags("from __future__ import annotations\n" + STUB) == []


def test_a_cell_the_checks_cannot_write_back_is_flagged_not_a_stop(monkeypatch):
    """`torch[0xff...] = 1` of 4,000 hex digits under `if False:` (Python reads and runs it)
    made the checks' `ast.unparse` raise ValueError (an int past 4,300 digits) before any of
    her code ran: her grading stopped, as the seventy-fifth's RecursionError did (the
    seventy-ninth hub tester). The flag names the root now; any other failure of the checks is
    one flag, never a stop."""
    source = "if False:\n    torch[0x" + "f" * 4000 + "] = 1\n"
    exec(compile(source, "cell", "exec"), {"torch": None})  # Python runs it
    assert flags(source) == ["answer line 2: changes torch[...], part of the setup cell's torch"]

    def broken(nb, release):
        raise ValueError("odd source")

    monkeypatch.setattr(sc, "_flags", broken)
    assert flags("x = 1\n") == [sc.UNREADABLE.format("ValueError")]
