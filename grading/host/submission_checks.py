"""Read a prepared submission before it runs: flags for the instructor, and the lab's cells.

The tests run outside the student's process (trusted_tests.py), so nothing here defends a
grade: the flags are information, for a person to read what a submission reaches for.
`flags(nb)` lists what in the student's cells (answer cells and cells they added) reaches past
the lab: IPython's hooks (`get_ipython`, input and AST transformers, magics and shell escapes),
code that runs strings (`exec`, `eval`, `compile`, `__import__`), files, processes and the
interpreter (`open`, `os`, `subprocess`, `sqlite3`, `ctypes`, `sys`, ...), the kernel's input
history (`In`, `_ih`), comparison methods that can claim equality with anything (`__eq__`), and
any rebinding of a name that a locked setup cell defines (the references the tests compare
against) or of an attribute of one (`torch.allclose = ...`). The parent reads the source, so
no code in the kernel can hide a flag from it; obfuscation itself needs one of the flagged
constructs. A flag costs no points: the report marks the submission for a person to read.
A cell counts as the lab's only when it is locked and the released notebook has a locked cell
of its grade_id: a student who marks a cell of their own as locked is still read.

Those lists name what is known to reach past a lab, and each tester found a route in a module
no list named. So every name a student's cell uses is also read against the labs' vocabulary
(vocabulary.py: what honest answers use), and a name that is neither in it, nor the student's
own, nor the released lab's is flagged as outside it (`outside`, `Known`).
"""

import __future__

import ast
import functools
import re

from grading.host import vocabulary

SUSPICIOUS_MODULES = {
    "os",
    "sys",
    "subprocess",
    "sqlite3",
    "socket",
    "ctypes",
    "cffi",
    "importlib",
    "builtins",
    "inspect",
    "gc",
    "signal",
    "shutil",
    "pathlib",
    "glob",
    "io",
    "base64",
    "codecs",
    "pickle",
    "marshal",
    "threading",
    "multiprocessing",
    "concurrent",
    "IPython",
    "ipykernel",
    "traitlets",
    "zmq",
    "jupyter_client",
    "nbformat",
    "nbclient",
    "nbgrader",
    "urllib",
    "http",
    "requests",
    "asyncio",
    "pty",
    "fcntl",
    "resource",
    "mmap",
    "tempfile",
    "runpy",
    "code",
    "dis",
    "types",
    "atexit",
    "sysconfig",
    "_thread",
    "__main__",
    "posix",
    "_posixsubprocess",
    "_io",
    "faulthandler",
    "linecache",
    "copyreg",
    "site",
    "pydoc",
    "webbrowser",
    # the kernel's own packages, which hold IPython's shell or the kernel by other names
    # (`ipywidgets.get_ipython()`, `comm.create_comm().kernel`)
    "comm",
    "ipywidgets",
    "matplotlib_inline",
    "debugpy",
    # installed packages that run strings as code (sympy.sympify, a jinja2 or tornado or mako
    # template, yaml's unsafe loader), start processes, or read frames (the thirty-first hub
    # tester)
    "sympy",
    # sympy's dependency: mpmath keeps the builtin exec as `exec_` (libmp.backend,
    # libmp.libhyper, ctx_mp_python), which ran her computed string: every guard off, nothing
    # flagged (the forty-ninth hub tester)
    "mpmath",
    # rich.style keeps pickle.loads as `loads`: her pickle gave sys.modules (the forty-ninth)
    "rich",
    # attrs writes a class's methods as source text, a field's `alias` in it unescaped:
    # `attr.ib(alias="a=EXPR")` ran her EXPR (the forty-ninth hub tester)
    "attr",
    "attrs",
    # the `decorator` package (vendored by prometheus_client): FunctionMaker.create(signature,
    # body, evaldict) execs a function's source written from her strings (the forty-ninth)
    "decorator",
    # parso (jedi's parser): pgen2.generator's `_make_transition(torch, {}, "s" + "ys")` is
    # getattr(torch, "sys") (the forty-ninth hub tester)
    "parso",
    "jinja2",
    "tornado",
    "mako",
    "yaml",
    "pexpect",
    "ptyprocess",
    "anyio",
    "psutil",
    "stack_data",
    "pure_eval",
    "executing",
    "jedi",
    "jupyter_core",
    "jupyter_server",
    # modules that run code from strings or data, or find modules by a computed name
    # (`pkgutil.resolve_name("sandbox" + "_agent")`, `timeit.timeit("import ...")`), and
    # installed packages that do the second (`pytest.importorskip("sy" + "s")`,
    # importlib_metadata's `EntryPoint(value=...).load()`, pydantic's `ImportString`, sphinx's
    # `import_object`): sys by a computed name, unflagged, reached the armed guard in
    # sys.modules (the forty-third tester)
    "pkgutil",
    "pytest",
    "importlib_metadata",
    "pydantic",
    "lazy_importer",
    "sphinx",
    # and more, found by a scan of the standard library and .venv for functions that import a
    # name their caller passes (the forty-sixth tester): each gave sys, sys.modules or a
    # function of sys from "sy" + "s" (`six._import_module`, networkx.lazy_imports'
    # `_lazy_import`, `mistune.plugins.import_plugin("sy" + "s.modules")`, myst_parser's
    # `check_heading_slug_func` (sys._getframe), docutils'
    # `LanguageImporter().import_from_packages`, setuptools' `config.expand._load_spec` and
    # `_imp.get_module`, pip's vendored distlib `util.resolve`, fontTools'
    # `registerCustomTableClass` then `getCustomTableClass`,
    # `test.support.import_helper.import_fresh_module`, jsonschema's
    # `cli._resolve_name_with_default`)
    "six",
    "networkx",
    "mistune",
    "myst_parser",
    "docutils",
    "setuptools",
    "pip",
    "fontTools",
    "test",
    "jsonschema",
    # a pytest plugin: `xdist.workermanage.unserialize_warning_message` calls any function of
    # any module by name (`sys._getframe`); alembic's write hooks run `python -m` any module
    "xdist",
    "alembic",
    # coverage's `execfile.PyRunner([name, *args], as_module=True).run()` runs any module as
    # __main__, runpy's reach (`["timeit", "-n1", code]` ran a string)
    "coverage",
    # traitlets' import_item under other names: nbconvert's
    # `TemplateExporter()._register_filter(env, name, "sys._getframe")` and jupyter_lsp's
    # `trait_types.LoadableCallable().validate(None, "sys._getframe")` return any callable of
    # any module
    "nbconvert",
    "jupyter_lsp",
    # sqlalchemy's `util.preloaded._ModuleRegistry(prefix="y")`, `preload_module("sy" + "s")`,
    # `import_prefix("")`: the module as the registry's attribute `s`; fsspec's
    # `registry._import_class("lmcourse.off" + "limits:Guard")`: any class of any loaded module
    "sqlalchemy",
    "fsspec",
    "timeit",
    "cProfile",
    "profile",
    "pdb",
    "bdb",
    "doctest",
    "trace",
    "unittest",
    "codeop",
    "imp",
    "_imp",
    "zipimport",
    "modulefinder",
    "shelve",
    "dbm",
    "_testcapi",
    "_testinternalcapi",
    # archives extract any tree of files, of any depth (a tree past the sandbox's clean-up)
    "zipfile",
    "tarfile",
    # the grader's own modules, which a kernel could import where they are on its path
    "grading",
    "sandbox_agent",
    "sandbox_exec",
    "trusted_tests",
}
# Modules reached as another module's attribute (`torch.os`, `np.sys`, `F.torch.multiprocessing`):
# the names no honest answer reads as an attribute.
MODULE_ATTRIBUTES = {
    "os", "sys", "subprocess", "builtins", "importlib", "ctypes", "gc", "_thread", "threading",
    "multiprocessing", "concurrent", "inspect", "socket", "shutil", "pickle", "marshal",
    "sqlite3", "posix", "_posixsubprocess", "pty", "fcntl", "mmap", "runpy", "atexit",
    "sysconfig", "asyncio", "tempfile", "pathlib", "urllib", "signal", "faulthandler",
    "linecache", "IPython", "ipykernel", "zmq", "traitlets", "nbgrader", "nbformat", "nbclient",
    "jupyter_client", "__main__", "grading", "sandbox_agent", "sandbox_exec", "trusted_tests",
    "offlimits", "slips", "ctypeslib", "cpp_extension", "comm", "ipywidgets", "types", "copyreg",
    "io", "codecs", "glob", "bltns", "dis", "tarfile", "zipfile", "pkgutil", "unittest", "base64",
    "mp", "reduction", "reducer", "sympy", "jinja2", "tornado", "mako", "yaml", "psutil",
    # torch.utils.data.dataloader's name for multiprocessing, whose util.spawnv_passfds ran a
    # python that computed the declared reference for her f (the thirty-ninth hub tester)
    "python_multiprocessing", "collect_env",
    # the standard library's runners of strings and finders of modules as other modules'
    # attributes: websocket-client's _wsdump holds `code` (`w.code.InteractiveInterpreter()
    # .runsource(src)`), matplotlib's sphinxext.plot_directive `doctest` (DocTestRunner): each
    # ran her computed string, which switched the guard off, nothing flagged (the forty-seventh)
    "code", "codeop", "doctest", "timeit", "cProfile", "pdb", "bdb", "pydoc", "zipimport",
    "modulefinder", "shelve", "dbm", "imp", "webbrowser",
    # unittest's mock (`patch("sandbox" + "_agent._guard", ...)` resolves a dotted name by
    # importing it) as jupyterhub.apihandlers.auth's `mock`, and multiprocessing and nbformat
    # under other packages' short names (the forty-ninth hub tester)
    "mock", "mproc", "nbf", "copy_reg",
}  # fmt: skip
# and every module flagged as an import, as another module's attribute (nbval.plugin.pytest,
# rfc3339_validator.six, jupyterhub.orm.alembic, backend_ps.fontTools: the forty-ninth hub
# tester), but for the names honest code gives its own attributes (`torch.trace`, a profiler's
# `profile`, `site`, `test`, `resource`, a scheduler's `requests`, a client's `http`)
MODULE_ATTRIBUTES |= SUSPICIOUS_MODULES - {
    "test", "trace", "profile", "site", "resource", "requests", "http", "attr", "attrs",
    "decorator",
}  # fmt: skip
# What torch and the course keep past the off-limits guard: operator registries, the C layer,
# torch's interception points and Python references of its operators, the guard itself and
# the slips' rules. Imported, or reached as attributes (through any alias of torch).
INTERNALS = {
    "torch.ops", "torch._C", "torch._VF", "torch._ops", "torch.library", "torch.overrides",
    "torch.utils._python_dispatch", "torch._dispatch", "torch._subclasses", "torch._refs",
    "torch._prims", "torch._decomp", "torch._dynamo", "torch._functorch", "torch.multiprocessing",
    "torch.utils.cpp_extension", "torch.hub", "torch.package",
    # programs run for her: collect_env's run (a shell, its output returned), _inductor's
    # compile commands; a python computing the declared reference (the thirty-ninth hub tester)
    "torch.utils.collect_env", "torch._inductor",
    "huggingface_hub.utils._subprocess", "transformers.testing_utils", "accelerate.test_utils",
    "lmcourse.offlimits", "lmcourse.slips",
    # TorchScript: a compiled function calls a norm that neither mode sees (rms_norm decomposes
    # first), and run by torch from beneath a call the modes passed on (a hook backward runs)
    # no Python code of it is seen either (the thirty-fourth hub tester)
    "torch.jit",
    # graphs of torch's own decompositions, traced ahead of the call: an exported program's
    # graph after `run_decompositions()`, or make_fx with `torch.export.default_decompositions()`,
    # computes rms_norm from pow, mean, rsqrt and mul in code of no route and no cell, which
    # neither mode nor the hook stops (the thirty-seventh hub tester)
    "torch.export", "torch.fx.experimental.proxy_tensor",
    # torch.fx's tracing: the declared reference traced in her answer cell
    # (`torch.fx.symbolic_trace(rotate_half)`); the graph module's generated forward computes
    # it with none of its code, nothing fired, nothing flagged (the fortieth hub tester)
    "torch.fx",
    # torch.compile's tracing: a function of hers that calls the declared reference, compiled
    # and called once in her answer cell, runs a graph with the reference inlined (dynamo
    # traced its code, never called it), so her f's call fires nothing and computes it (the
    # lead, after the fortieth hub tester: `torch.compile(inner, backend="eager")`, played
    # with the guard alone); functorch.compile's aot_function traces the same way
    "torch.compile", "torch.compiler", "functorch",
    # not torch's, but the same reach: logging.config resolves any dotted name to its object
    # (`logging.config.BaseConfigurator({}).resolve("sy" + "s")` gave sys; the lead, then the
    # forty-sixth tester), imported or reached as `logging.config`
    "logging.config",
    # torch's own loaders of pickles and runners of strings, each given hers: a pickle that
    # set the agent's _guard to contextlib.nullcontext, loaded by
    # torch.distributed.checkpoint.format_utils' `torch_save_to_dcp(file, ...)` (torch.load
    # with weights_only=False) or datapipes' `decoder.basichandlers("pickle", data)`, and
    # benchmark's Timer (imported as T) running a computed stmt: every guard off, nothing
    # flagged (the forty-seventh hub tester)
    "torch.distributed", "torch.utils.data.datapipes", "torch.utils.benchmark",
    "torch.utils.show_pickle", "torch.utils.model_dump",
    # evaluators of strings in other packages: numpy.f2py.crackfortran's `myeval(e)` is eval(e)
    # in its module's globals (sys among them), PIL's `ImageMath.unsafe_eval(expression,
    # **names)` evals any expression whose names she passes as keys (`t.sys`, t=torch): each
    # gave sys, and the agent's _guard rebound there, nothing flagged (the forty-seventh)
    "numpy.f2py", "PIL.ImageMath",
    # numpy's distutils: exec_command runs any shell command, misc_util's get_frame returns a
    # caller's frame (the forty-ninth hub tester)
    "numpy.distutils",
    # matplotlib's test helpers run programs (subprocess_run_helper, subprocess_run_for_testing)
    "matplotlib.testing",
    "prometheus_client.decorator",
}  # fmt: skip
# Private parts of torch, under any name that reaches them.
PRIVATE_TORCH = {p.split(".")[-1] for p in INTERNALS if p.split(".")[-1].startswith("_")}
# torch's interception points: a mode or a tensor subclass sees every call of torch.
TORCH_HOOKS = {
    "__torch_function__", "__torch_dispatch__", "TorchFunctionMode", "TorchDispatchMode",
    "DisableTorchFunction", "DisableTorchFunctionSubclass", "_disable_torch_function",
}  # fmt: skip
# Frames, tracebacks, code objects and the tracer: another function's namespace, or a code
# object given another file name.
FRAMES = {
    "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next",
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "_getframe",
    "currentframe", "getouterframes", "getinnerframes", "settrace", "setprofile", "gettrace",
    "getprofile", "_current_frames", "cell_contents", "co_code", "co_filename", "co_name",
    "co_qualname", "co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars",
    "co_firstlineno", "co_lnotab", "co_linetable", "co_flags", "co_argcount", "co_positions",
    "co_lines", "co_exceptiontable", "co_stacksize", "co_nlocals", "walk_stack", "walk_tb",
}  # fmt: skip
# What reads an attribute by a name it is given, other than getattr: attrgetter and
# methodcaller anywhere but called at once with a constant name (`g = operator.attrgetter`,
# `from operator import attrgetter as g`), string.Formatter (get_field, and a subclass's
# format_field, get an object's attribute from a format string), and a match statement's class
# pattern (`case object(f_locals=ns)`). Each reached IPython's shell unflagged through a frame
# of traceback.walk_stack (the thirty-first hub tester).
BY_NAME = {"attrgetter", "methodcaller"}
# and any other function named for getattr or setattr (`wrapper_getattr`, `safe_getattr`)
BY_NAME_WORDS = re.compile(r"(get|set|del)_?attr(ibute)?(?![a-z])", re.I)
# IPython's shell and the kernel, as other modules' attributes or imported from them
# (`ipywidgets.get_ipython()`, `from matplotlib_inline.backend_inline import get_ipython`,
# `lmcourse.widgets.widgets.get_ipython()`): each reached the shell unflagged (the thirty-first
# hub tester)
SHELL = {
    "get_ipython", "InteractiveShell", "TerminalInteractiveShell", "IPKernelApp",
    "create_comm", "get_comm_manager", "comm_manager",
}  # fmt: skip
FORMATTER = ("string.Formatter", "get_field")
# cffi's FFI, as ctypes: any C function of the process (`ffi.dlopen(None)`: libc, the C API), raw
# memory, and her Python function called from a C thread of hers (`pthread_create` with an
# `ffi.callback`), whose thread state the off-limits guard never hooked: a declared reference
# computed there went unseen, nothing flagged (the thirty-seventh hub tester). Reached by
# `import cffi` and as an attribute: argon2.low_level.ffi, cryptography's _openssl.ffi.
C_CALLS = {"cffi", "ffi", "FFI", "dlopen", "CDLL", "PyDLL", "cdll", "pydll", "pythonapi"}
# numpy's arrays over any address of the process, read and written (ctypes' reach): an object
# whose __array_interface__ names the address (a class made by type() with the name among its
# namespace's keys, no dunder set by name), as_strided's strides past its array's end (the
# thirty-eighth hub tester); the same as_strided by the module numpy defines it in,
# numpy.lib._stride_tricks_impl, and np.fromfile, which reads /proc/self/mem at any offset,
# id(obj) among them (the thirty-ninth).
RAW_MEMORY = {
    "__array_interface__", "__array_struct__", "__cuda_array_interface__", "stride_tricks",
    "_stride_tricks_impl", "fromfile",
}  # fmt: skip
# Installed libraries' functions that run a program (subprocess under their own names): a
# python run by one, started in her answer cell and fed her f's inputs on its stdin, computed
# the declared reference, unseen (huggingface_hub's run_interactive_subprocess; the
# thirty-ninth hub tester). As attributes, imported names, and the modules by their paths.
PROGRAMS = {
    "run_subprocess", "run_interactive_subprocess", "execute_subprocess_async", "run_command",
    "run_compile_cmd", "spawnv_passfds", "testing_utils", "test_utils", "_subprocess",
    # numpy.testing's `runstring(src, {})` is exec(src, {}): her computed string switched the
    # guard off, nothing flagged (the forty-seventh hub tester); `rundocs` runs a file's
    # doctests, `extbuild` compiles and imports C, `run_threaded` starts threads
    "runstring", "rundocs", "extbuild", "build_and_import_extension", "run_threaded",
    # matplotlib's `cbook._check_and_log_subprocess(["python3", "-c", src], logger)` ran a
    # python in her answer cell in a real sandbox, its output returned, nothing flagged (the
    # forty-ninth hub tester); texmanager's and testing's, and numpy.distutils' exec_command
    "_check_and_log_subprocess", "_run_checked_subprocess", "subprocess_run_for_testing",
    "exec_command", "_exec_command", "_execvp_node",
    # site's runners of .pth lines (exec of a line that starts with `import`), reached as
    # jupyterlab.commands' `site`: a .pth file a logging.FileHandler wrote switched every
    # guard off, nothing flagged (the forty-ninth hub tester)
    "addpackage", "addsitedir", "execsitecustomize", "execusercustomize",
    # pygments' loaders of plugins from a file: exec of the file's text (the forty-ninth)
    "load_lexer_from_file", "load_formatter_from_file",
    # decorator's FunctionMaker, by any module that holds it
    "FunctionMaker",
}  # fmt: skip
# Calls that start a thread or a process, under whatever module reached them.
STARTS = {
    "Thread", "Timer", "ThreadPoolExecutor", "ProcessPoolExecutor", "Process", "Pool",
    "start_new_thread", "start_new", "fork", "forkpty", "spawn", "Popen", "system",
    "posix_spawn", "spawnv", "execv", "spawnv_passfds",
}  # fmt: skip
# Calls that write a file of any content (`np.savetxt("m.py", [], header=code)`): the kernel
# imports from its working folder.
WRITERS = {
    "savetxt", "tofile", "savez", "savez_compressed", "write_text", "write_bytes",
    # logging's file handlers: `FileHandler("x.pth").stream.write(line)` (the forty-ninth)
    "FileHandler", "RotatingFileHandler", "TimedRotatingFileHandler", "WatchedFileHandler",
}  # fmt: skip
# Names no submission binds at the notebook's top level, besides the setup cell's: the course's
# packages and the grader's modules (a class or a loop variable named `torch` or `lmcourse`
# stands in for the package where a test resolves a declared name).
PACKAGES = {
    "torch", "transformers", "lmcourse", "numpy", "safetensors", "accelerate", "math",
    "functools", "operator", "builtins", "sys", "os", "grading", "sandbox_agent", "nbgrader",
    "IPython",
}  # fmt: skip
# The grader's modules, named in a string (`sys.modules["sandbox_agent"]`, import_module(...)).
GRADER_MODULES = {
    "sandbox_agent", "sandbox_exec", "trusted_tests", "offlimits", "lmcourse.offlimits",
    "lmcourse.slips", "grading.in_sandbox.sandbox_agent", "grading.host.trusted_tests",
    "grading.in_sandbox.sandbox_exec",
}  # fmt: skip
# Inside any string: what only code that is run from a string would name.
IN_STRINGS = (*GRADER_MODULES, "__import__", "__builtins__", "__globals__", "__code__")
# What evaluates an annotation written as a string (`def f(x: "__import__('os')")`), or loads
# a pickle, which can run any code: `np.load(..., allow_pickle=True)`.
EVALUATORS = {
    "get_type_hints", "ForwardRef", "_eval_type", "get_annotations", "singledispatch",
    "singledispatchmethod", "resolve_types",
}  # fmt: skip
# What finds a module by a name computed at run time, whichever module offers it.
RESOLVERS = {
    "resolve_name", "import_module", "find_spec", "get_loader", "exec_module", "_gcd_import",
    "_find_and_load", "_call_with_frames_removed", "importorskip", "ImportString",
    "import_object",
    # the forty-sixth tester: logging.config's configurators resolve any dotted name
    # (`BaseConfigurator({}).resolve("sy" + "s")`, dictConfig's "()" factories); matplotlib's
    # `backend_registry.load_backend_module("module://" + name)`; numpy's
    # `np.core._ufunc_reconstruct(name, "modules")` (sys.modules) and
    # `numpy.lib._utils_impl._makenamedict(name)` (sys.__dict__); torch's
    # `nn.utils._deprecation_utils.lazy_deprecated_import` (sys.modules) and
    # `utils._pytree.enum_object_hook({"__enum__": 1, "fqn": "sys:modules", "name": "sys"})`
    # (sys); the standard library's `optparse.Values().read_module(name, "loose")` (sys's
    # namespace) and `enum.Enum._convert_(cls, name, filter)` (sys's functions as members)
    "BaseConfigurator", "DictConfigurator", "dictConfig", "fileConfig", "load_backend_module",
    "_ufunc_reconstruct", "_makenamedict", "lazy_deprecated_import", "enum_object_hook",
    "read_module", "_convert_", "_old_convert_", "try_import", "_import_dotted_name",
}  # fmt: skip
# functools' update_wrapper is a getattr and a setattr by the names it is given (`assigned`)
# and a write of one object's namespace into another's (`updated`, by default `__dict__`):
# `update_wrapper(box, torch, assigned=("sy" + "s",), updated=())` set torch's sys on an
# object of hers whose __setattr__ kept it, and `update_wrapper(agent, Holder, (), ("__di" +
# "ct__",))` wrote her class's namespace, a _guard of hers, into the agent's module: every
# guard off, nothing flagged, all of it words (the fifty-ninth hub tester). `wraps` calls it:
# only `@wraps(f)` on a def of hers, which sets her new function's attributes, is not flagged.
WRAPPERS = {"update_wrapper", "wraps"}
PICKLE_KEYWORDS = {("allow_pickle", True), ("weights_only", False), ("pickle_module", None)}
# The same switches by any value but the safe constant (`allow_pickle="y"` is true), by
# position (`np.load(file, None, True)`, `numpy.lib.format.read_array(fp, True)`,
# `torch.load(f, None, pickle_module)`), or unpacked (`np.load(f, **{"allow_pickle": True})`):
# a pickle of hers, read through a class of hers with read, readline and seek, loaded
# `sys.modules` by its global name, and the agent's _guard rebound there switched every guard
# off, nothing flagged (the forty-seventh hub tester). numpy's and torch's loaders as values
# (`L = np.load`) are flagged, as their calls by another name are not read.
SAFE_PICKLE_KEYWORDS = {"allow_pickle": (False, None), "weights_only": (True, None)}
PICKLE_POSITIONS = {"load": 2, "read_array": 1, "NpzFile": 2}
DECLARATION = re.compile(r"^[ \t]*#[ \t]*Off limits while graded:[ \t]*(.+?)[ \t]*$", re.M)
SUSPICIOUS_CALLS = {
    "get_ipython": "uses get_ipython (IPython's hooks)",
    "exec": "runs code from a string (exec)",
    "eval": "runs code from a string (eval)",
    "compile": "compiles code from a string",
    "__import__": "imports by name (__import__)",
    "open": "opens a file",
    "globals": "reaches the notebook's globals()",
    "locals": "reaches a namespace with locals()",
    "vars": "reaches a namespace with vars()",
    "setattr": "sets attributes by name (setattr)",
    "delattr": "deletes attributes by name",
    "breakpoint": "calls breakpoint()",
    "input": "reads input()",
    "exit": "calls exit()",
    "quit": "calls quit()",
}
# Runners of strings and readers of namespaces that libraries keep under a trailing underscore
# (mpmath.libmp.backend.exec_ is the builtin exec: the forty-ninth hub tester); not `input_` or
# `open_`, which honest code names its own attributes.
RUNNERS = {
    "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "getattr", "setattr",
}  # fmt: skip
# What SUSPICIOUS_CALLS names do as values too (`[getattr][0](f, name)`, `reduce(getattr, ...)`),
# unless the cell binds the name itself (a parameter called `vars`). get_ipython, exit and quit
# too: each reaches IPython's shell unflagged (`[get_ipython][0]()`, `exit._ip`), whose
# `run_cell` runs any string, every flagged construct in it unread (the thirtieth hub tester).
AS_VALUE = {
    **{k: v for k, v in SUSPICIOUS_CALLS.items() if k not in ("input", "exit", "quit")},
    "exit": "reaches IPython's shell (exit._ip)",
    "quit": "reaches IPython's shell (quit._ip)",
    "getattr": "reads attributes by name (getattr)",
    "hasattr": "reads attributes by name (hasattr)",
}
HISTORY = re.compile(
    r"^(In|Out|_ih|_oh|_dh|_i\d*|_ii+|__builtins__|__builtin__|__loader__|"
    r"__spec__)$"
)
DUNDER_DEFS = {
    "__eq__",
    "__ne__",
    "__hash__",
    "__bool__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__instancecheck__",
    "__subclasscheck__",
    "__class__",
    "__getattr__",
    "__getattribute__",
    "__float__",
    "__int__",
    "__index__",
    "__abs__",
    "__sub__",
    "__rsub__",
    "__format__",
    "__len__",
    "__iter__",
    "__contains__",
    "__del__",
}
# What copy.copy and copy.deepcopy ask a class of hers for: the state of a reduce value is
# written into the object her function returns, a dict into its namespace and a second dict by
# setattr, by names she computes: `copy.copy(W())`, whose `__reduce__` returned `(give, (),
# (None, {"sy" + "s": 0}))`, set `torch.sys` (the fifty-ninth hub tester), all words.
# Without __reduce__ (the sixty-first hub tester), object's own reduce asks her class for
# __getnewargs__ (or _ex) and __getstate__: copy calls cls.__new__(cls, *newargs), which
# torch.inference_mode's answers with her __call__'s value (`cls()(arg)`: torch), and sets her
# state's second dict on it by setattr: torch.sys set to 0, flags [] (all words).
REDUCERS = {"__reduce__", "__reduce_ex__", "__getstate__", "__getnewargs__", "__getnewargs_ex__"}
# Dunders that reach past a value: namespaces, code objects, classes' innards, pickling hooks.
DUNDERS = DUNDER_DEFS | {
    "__dict__", "__globals__", "__code__", "__builtins__", "__subclasses__", "__closure__",
    "__mro__", "__bases__", "__base__", "__func__", "__self__", "__wrapped__", "__loader__",
    "__spec__", "__import__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__",
    "__setattr__", "__delattr__", "__defaults__", "__kwdefaults__", "__init_subclass__",
    "__set_name__", "__get__", "__set__", "__module__", "__qualname__", "__traceback__",
    "__class_getitem__", "__torch_function__", "__torch_dispatch__",
}  # fmt: skip


def meta(cell):
    """A cell's nbgrader metadata, {} where it is missing or not a mapping: a submission can
    hold anything there (a string, a list), and nothing that reads it may crash on that."""
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    found = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return found if isinstance(found, dict) else {}


# nbgrader's own predicates (nbgrader.utils), asked only of cells whose metadata is a mapping:
# on a submission's string or list there they would raise. Imported when first asked: the
# package's import (its server extensions: 0.6 s) is not paid by the trusted test process,
# which reads only the setup's names here, each time a hostile submission restarts it.
def _nbgrader():
    from nbgrader import utils

    return utils


def is_solution(cell):
    """An answer cell (code or written), as nbgrader decides it."""
    return bool(meta(cell)) and bool(_nbgrader().is_solution(cell))


def is_grade(cell):
    """A graded cell (a test, or a written answer with points), as nbgrader decides it."""
    return bool(meta(cell)) and bool(_nbgrader().is_grade(cell))


def is_locked(cell):
    return bool(meta(cell)) and bool(_nbgrader().is_locked(cell))


def is_setup(cell):
    """A locked code cell that is neither an answer nor a test: the lab's own code."""
    return (
        cell.cell_type == "code"
        and is_locked(cell)
        and not is_grade(cell)
        and not is_solution(cell)
    )


def is_student(cell, locked_ids=None):
    """A code cell the student writes: an answer cell, or any cell they added (one marked
    locked too, unless `locked_ids`, the grade_ids of the lab's locked cells, holds it)."""
    if cell.cell_type != "code":
        return False
    m = meta(cell)
    if locked_ids is None:
        return not m.get("locked")
    return not (m.get("locked") and m.get("grade_id") in locked_ids)


def is_test(cell):
    """An autograded test cell: code that is graded and not an answer."""
    return cell.cell_type == "code" and is_grade(cell) and not is_solution(cell)


def python_source(source):
    """The cell as IPython runs it (magics and shell escapes become get_ipython calls)."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 (IPython raises many kinds on broken input)
        return source


# IPython keeps the flags of a cell's `from __future__ import ...` for every later cell, and one
# future changes how Python reads: after `from __future__ import barry_as_FLUFL` the kernel reads
# `<>` as `!=`, so a later cell holding one ran where the checks, reading each cell alone, saw a
# syntax error and nothing else: `import sys` and the agent's guard switched off there, flags []
# (the seventy-ninth hub tester).
BARRY = __future__.barry_as_FLUFL.compiler_flag


def parse(source):
    """The cell's tree as the kernel reads it, or None where it is no Python (a syntax error is
    no flag); a cell Python reads only after barry_as_FLUFL (`<>`) is read so too."""
    code = python_source(source)
    for flags in (0, BARRY):
        try:
            return compile(code, "<cell>", "exec", ast.PyCF_ONLY_AST | flags, dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
    return None


def _declared_global(body):
    """Names a function or class body declares `global` (not looking into nested scopes)."""
    names, todo = set(), list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Global):
            names |= set(node.names)
        elif not isinstance(node, SCOPES):
            todo.extend(ast.iter_child_nodes(node))
    return frozenset(names)


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


class Bindings(ast.NodeVisitor):
    """Every binding of a name in the notebook's namespace that a parsed cell makes, as
    `found`: (line, name, how, path), `path` the module (or module.name) an import binds, None
    for other forms. Every form Python has: assignment (plain, annotated, augmented, to a
    target list), `for` and comprehension targets (comprehension targets only through `:=`,
    the rest stays in the comprehension), `with ... as`, `:=`, `del`, `except ... as`, `import`
    and `from ... import` (`as` or not, `*`), `def` and `class`, match-statement captures; at
    the top level of the cell or in any block there, or in a function or class body that
    declares the name `global`."""

    def __init__(self):
        self.found = []
        self.scopes = [("module", frozenset())]
        self.how = {}

    def run(self, tree):
        for node in ast.walk(tree):
            label = None
            if isinstance(node, ast.For | ast.AsyncFor):
                targets, label = [node.target], "a for loop's target"
            elif isinstance(node, ast.With | ast.AsyncWith):
                targets, label = [i.optional_vars for i in node.items], "with ... as"
            elif isinstance(node, ast.Assign):
                targets, label = node.targets, "assignment"
            elif isinstance(node, ast.AugAssign):
                targets, label = [node.target], "augmented assignment"
            elif isinstance(node, ast.AnnAssign):
                targets, label = [node.target], "annotated assignment"
            elif isinstance(node, ast.Delete):
                targets, label = node.targets, "del"
            if label:
                for target in targets:
                    for part in ast.walk(target) if target is not None else ():
                        self.how.setdefault(id(part), label)
        self.visit(tree)
        return self.found

    def bind(self, node, name, how, path=None, walrus=False):
        scopes = self.scopes
        if walrus:  # := binds in the scope around any comprehension it sits in
            scopes = scopes[: max(i for i, s in enumerate(scopes) if s[0] != "comp") + 1]
        kind, declared = scopes[-1]
        if kind == "module" or name in declared:
            self.found.append((getattr(node, "lineno", 0), name, how, path))

    def _scope(self, kind, body, node=None):
        self.scopes.append((kind, _declared_global(body) if kind != "comp" else frozenset()))
        for part in body:
            self.visit(part)
        self.scopes.pop()

    def visit_FunctionDef(self, node):
        self.bind(node, node.name, "def")
        for part in [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]:
            self.visit(part)
        self._scope("function", node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self.visit(node.args)
        self._scope("function", [node.body])

    def visit_ClassDef(self, node):
        self.bind(node, node.name, "class")
        for part in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(part)
        self._scope("class", node.body)

    def _comprehension(self, node, results):
        self.visit(node.generators[0].iter)  # evaluated outside the comprehension
        parts = []
        for i, generator in enumerate(node.generators):
            parts += [generator.target, *([generator.iter] if i else []), *generator.ifs]
        self._scope("comp", parts + results)

    def visit_ListComp(self, node):
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comprehension(node, [node.key, node.value])

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self.bind(node.target, node.target.id, ":=", walrus=True)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.bind(node, node.id, self.how.get(id(node), "assignment"))

    def visit_ExceptHandler(self, node):
        if node.type:
            self.visit(node.type)
        if node.name:
            self.bind(node, node.name, "except ... as")
        for part in node.body:
            self.visit(part)

    def visit_Import(self, node):
        for alias in node.names:
            root = alias.name.split(".")[0]
            name, path = (alias.asname, alias.name) if alias.asname else (root, root)
            how = f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
            self.bind(node, name, how, path)

    def visit_ImportFrom(self, node):
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            name = alias.asname or alias.name
            how = f"from {module} import {alias.name}" + (
                f" as {alias.asname}" if alias.asname else ""
            )
            self.bind(node, name, how, f"{module}.{alias.name}" if alias.name != "*" else module)

    def visit_MatchAs(self, node):
        if node.pattern:
            self.visit(node.pattern)
        if node.name:
            self.bind(node, node.name, "a match pattern's capture")

    def visit_MatchStar(self, node):
        if node.name:
            self.bind(node, node.name, "a match pattern's capture")

    def visit_MatchMapping(self, node):
        for part in [*node.keys, *node.patterns]:
            self.visit(part)
        if node.rest:
            self.bind(node, node.rest, "a match pattern's capture")


@functools.cache
def installed(name):
    """Whether `name` is a module of Python or of the environment, not one a submission
    wrote beside itself (the kernel imports from its working folder)."""
    import importlib.util
    import os
    import sys

    if name in sys.builtin_module_names or name in sys.stdlib_module_names:
        return True
    try:
        spec = importlib.util.find_spec(name)  # a top-level name: nothing is run
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    origin = spec.origin or ""  # the grader's own folder is no installation
    folder = os.path.dirname(os.path.dirname(origin) if spec.submodule_search_locations else origin)
    return folder != os.getcwd()


def bindings(tree):
    """(line, name, how, path) for every name `tree` binds in the notebook's namespace
    (Bindings)."""
    return Bindings().run(tree)


def bound_names(tree):
    """Names a cell binds in the notebook's namespace, in any form (Bindings)."""
    return {name for _, name, _, _ in bindings(tree) if name != "*"}


def imported(tree):
    """name -> the module (or module.name) the cell's imports bind it to, in the notebook's
    namespace."""
    return {name: path for _, name, _, path in bindings(tree) if path and name != "*"}


def free_names(source):
    """Names a cell reads but never binds anywhere (nor imports, defines or is given as a
    builtin): the names it expects from earlier cells."""
    import builtins

    tree = parse(source)
    if tree is None:
        return set()
    read, bound = set(), set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound


def setup_names(nb):
    names = set()
    for cell in nb.cells:
        if is_setup(cell) and (tree := parse(cell.source)):
            names |= bound_names(tree)
    return names


def setup_imports(nb):
    """name -> module path, for every name the setup cells bind by an import."""
    found = {}
    for cell in nb.cells:
        if is_setup(cell) and (tree := parse(cell.source)):
            found.update(imported(tree))
    return found


def declared_off_limits(nb):
    """The first names of what the test cells declare off limits ("# Off limits while graded:
    a.b, c", grading/README.md): a binding of one stands in for the reference."""
    roots = set()
    for cell in nb.cells:
        if cell.cell_type == "code" and is_grade(cell) and not is_solution(cell):
            for match in DECLARATION.finditer(cell.source):
                for name in match.group(1).split(","):
                    root = name.strip().split(".")[0]
                    if root.isidentifier():
                        roots.add(root)
    return roots


def root_name(node):
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def dotted(node, aliases):
    """`torch.ops.aten` for an attribute chain (through the names imports bound: `F.x` with
    `import torch.nn.functional as F` is torch.nn.functional.x), or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([aliases.get(node.id, node.id), *reversed(parts)])


def _dunder(name):
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _under(path, prefixes):
    """The prefix of `prefixes` that dotted `path` is or is inside, or None."""
    for prefix in prefixes:
        if path == prefix or path.startswith(prefix + "."):
            return prefix
    return None


def _attribute_name(call):
    """The attribute name a getattr-like call reads, as an AST node, or None if `call` is not
    one: getattr/setattr/delattr/hasattr(obj, NAME), inspect.getattr_static(obj, NAME),
    operator.attrgetter(NAME), methodcaller(NAME), obj.__getattribute__(NAME),
    object.__getattribute__(obj, NAME)."""
    func, args = call.func, call.args
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if name in ("getattr", "setattr", "delattr", "hasattr", "getattr_static"):
        return args[1] if len(args) > 1 else None
    if name in ("attrgetter", "methodcaller"):
        return args[0] if args else None
    if name in ("__getattribute__", "__getattr__", "__setattr__", "__delattr__"):
        on_class = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
        if on_class and func.value.id in ("object", "type") and len(args) > 1:
            return args[1]
        return args[0] if args else None
    return None


def _attribute_reason(attr, aliases, base=None):
    """Why reaching attribute `attr` (of `base`, dotted, if known) is flagged, or None."""
    if attr in DUNDERS:
        return f"uses {attr}"
    # and under a module's private alias: collections._sys, random._os, pprint._types (the
    # thirty-first hub tester)
    if attr in MODULE_ATTRIBUTES or attr.lstrip("_") in MODULE_ATTRIBUTES:
        return f"reaches the module {attr} through another module's attribute (.{attr})"
    if attr in FRAMES:
        return f"reaches frames or code objects (.{attr})"
    if attr in C_CALLS:
        return f"reaches C functions and raw memory through cffi (.{attr})"
    if attr in RAW_MEMORY:
        return f"reaches the process's raw memory through numpy (.{attr})"
    if attr in PROGRAMS:
        return f"runs a program (.{attr})"
    if attr in SHELL:
        return f"reaches IPython's shell or the kernel (.{attr})"
    if attr.startswith("_") and attr.lstrip("_") in SUSPICIOUS_CALLS:  # numpy's _datasource._open
        return f"reaches a private copy of {attr.lstrip('_')} (.{attr})"
    if attr.rstrip("_") in RUNNERS and attr != attr.rstrip("_"):  # mpmath's exec_ (the builtin)
        return f"reaches a copy of {attr.rstrip('_')} (.{attr})"
    if not _dunder(attr) and BY_NAME_WORDS.search(attr) and attr not in AS_VALUE:
        # getattr under another name: tqdm.utils' `ObjectWrapper.wrapper_getattr(torch, "s" +
        # "ys")` gave sys (the forty-ninth hub tester); getattr itself is read where it is called
        return f"reads or sets attributes by name ({attr})"
    if attr in TORCH_HOOKS:
        return f"uses {attr} (torch's interception points)"
    if attr in PRIVATE_TORCH or attr in (
        "ops",
        "library",
        "overrides",
        "jit",
        "export",
        "proxy_tensor",
        "make_fx",
        "fx",
        "symbolic_trace",
    ):
        return f"reaches torch's {attr} (past the off-limits guard)"
    if attr in EVALUATORS:
        return f"uses {attr} (it evaluates annotations written as strings)"
    if attr in RESOLVERS:
        return f"finds a module by name ({attr})"
    torch_base = base is not None and (base == "torch" or base.startswith("torch."))
    if torch_base and attr.startswith("_") and not attr.startswith("__"):
        return f"reaches torch's private {attr} (past the off-limits guard)"
    if base is not None:
        parts = f"{base}.{attr}".split(".")
        for i in [0] + [i for i, part in enumerate(parts) if part in ("torch", "lmcourse")]:
            if prefix := _under(".".join(parts[i:]), INTERNALS):
                return f"reaches {prefix} (past the off-limits guard)"
    return None


def read_as_code(node):
    """The strings of `node` that an evaluator of annotations reads as code (an annotation
    written as a string, or a forward reference in a subscript: `typing.Optional["H[x]"]`),
    parsed as expressions; a string that is no expression is left out."""
    if isinstance(node, ast.Subscript):
        part = node.slice
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        part = node.returns
    elif isinstance(node, ast.arg | ast.AnnAssign):
        part = node.annotation
    else:
        return []
    parsed = []
    for text in ast.walk(part) if part is not None else ():
        if isinstance(text, ast.Constant) and isinstance(text.value, str):
            try:
                parsed.append(ast.parse(text.value.strip() or "None", mode="eval"))
            except (SyntaxError, ValueError):
                continue
    return parsed


def _not_a_string(node):
    return not (isinstance(node, ast.Constant) and isinstance(node.value, str | None))


def _sets_module(call):
    """Whether a call passes a `module=` keyword that is not a string, written out or in a
    `**{...}` of its own (the seventy-second hub tester: `**{'module': Name()}`; the agent reads
    a class's __module__ only where it is a str, whatever form set it)."""
    for keyword in call.keywords:
        if keyword.arg == "module" and _not_a_string(keyword.value):
            return True
        if keyword.arg is None and isinstance(keyword.value, ast.Dict):
            for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "module" and _not_a_string(value):
                    return True
    return False


def cell_flags(tree, protected, aliases=None, expected=None):
    """(line, reason) for every suspicious construct in one parsed cell. `protected`: names the
    student's cells must not bind (the setup cell's, the roots of what tests declare off
    limits, the course's packages); `aliases`: name -> module path of every import of the
    notebook; `expected`: name -> the module path the setup cell imports under that name (an
    import that binds the same module again is no rebinding)."""
    aliases, expected = aliases or {}, expected or {}
    calls = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    # a name the cell binds is hers where a read resolves to that binding: at the top, or in
    # a function that binds it (not the builtin `exec` at the top of a cell whose dead
    # function binds a local `exec`: the fifty-second hub tester)
    top, local = bound_names(tree), local_reads(tree)

    def own(name):
        return not isinstance(name.ctx, ast.Load) or name.id in top or id(name) in local

    decorating = {
        id(d.func)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for d in node.decorator_list
        if isinstance(d, ast.Call)
        and len(d.args) == 1
        and not d.keywords
        and not isinstance(d.args[0], ast.Starred)
    }

    def wrapper(node):
        """Whether `node` names functools' update_wrapper, or wraps but as `@wraps(f)`."""
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            module, _, name = aliases.get(node.id, "").rpartition(".")
            if module != "functools":  # `from functools import wraps as w` binds w to it
                return False
        else:
            return False
        return name == "update_wrapper" or (name == "wraps" and id(node) not in decorating)

    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if wrapper(node):
            found.append(
                (
                    line,
                    "sets and reads attributes by the names it is given (functools.update_wrapper)",
                )
            )
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.Import):
                modules = [(a.name, a.name) for a in node.names]
            else:  # from M import x: M is imported, and M.x may be a module
                module = node.module or ""
                modules = [(module, f"{module}.{a.name}") for a in node.names]
            for module, path in modules:
                if module.split(".")[0] in SUSPICIOUS_MODULES:
                    found.append((line, f"imports {module}"))
                elif "__main__" in module.split(".")[1:]:
                    # a package's command-line module: platformdirs.__main__'s
                    # `_dir_or_error(torch, "s" + "ys")` is getattr (the forty-ninth)
                    found.append((line, f"imports {module} (a package's __main__)"))
                elif (
                    module.startswith("_") and module != "__future__"
                ):  # _frozen_importlib, _ctypes
                    found.append((line, f"imports {module} (a private module)"))
                elif prefix := _under(path, INTERNALS):
                    found.append((line, f"imports {path} ({prefix}: past the off-limits guard)"))
                elif module.split(".")[0] == "torch" and any(
                    part.startswith("_") and not _dunder(part) for part in path.split(".")[1:]
                ):  # `from torch._utils import try_import` gave sys (the forty-sixth tester)
                    found.append((line, f"imports {path} (a private module of torch)"))
                elif (
                    _under(path, FORMATTER[:1])
                    or path.rsplit(".", 1)[-1] in FRAMES | SHELL
                    or RAW_MEMORY.intersection(path.split("."))
                    or (path != module and _attribute_reason(path.rsplit(".", 1)[-1], aliases))
                ):
                    found.append(
                        (
                            line,
                            f"imports {path} (frames, the shell, a module, or attributes by name)",
                        )
                    )
                elif path.rsplit(".", 1)[-1] in EVALUATORS | RESOLVERS:
                    found.append((line, f"imports {path} (it runs or finds code by name)"))
                elif any(
                    part.startswith("_") and not _dunder(part) for part in module.split(".")[1:]
                ):  # any other package's: websocket._wsdump held `code` (the forty-seventh
                    # tester's, left open; flagged by the forty-ninth)
                    found.append((line, f"imports {module} (a private module of a package)"))
                elif isinstance(node, ast.ImportFrom) and node.level:
                    found.append((line, "a relative import (of a file the submission wrote?)"))
                elif module and not installed(module.split(".")[0]):
                    found.append(
                        (line, f"imports {module}, no installed module (a file it wrote?)")
                    )
            for alias in node.names:
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.module == "__future__"
                    and alias.name == "barry_as_FLUFL"
                ):
                    found.append((line, "imports barry_as_FLUFL (later cells read otherwise)"))
                if (
                    isinstance(node, ast.ImportFrom)
                    and alias.name in PICKLE_POSITIONS
                    and alias.asname not in (None, alias.name)
                ):
                    found.append((line, f"loads a pickle ({alias.name} as {alias.asname})"))
                if alias.name in STARTS and alias.asname not in (None, alias.name):
                    found.append((line, f"starts a thread or process ({alias.name} as a name)"))
                if alias.name in BY_NAME and alias.asname not in (None, alias.name):
                    found.append((line, f"reads attributes by name ({alias.name} as a value)"))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else None
            if name in SUSPICIOUS_CALLS:
                found.append((line, SUSPICIOUS_CALLS[name]))
            called = name or (func.attr if isinstance(func, ast.Attribute) else "a call")
            if called in STARTS:
                found.append((line, f"starts a thread or process ({called})"))
            if called == "compile" and isinstance(func, ast.Attribute):
                # torch.compile under a name of hers (`T = torch`), or nn.Module.compile (the
                # module compiled in place): only a module she imported, other than torch,
                # is known not to trace (re.compile)
                root = func.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                module = aliases.get(root.id, "") if isinstance(root, ast.Name) else ""
                if not module or module.split(".")[0] == "torch":
                    found.append((line, "compiles with .compile(), its code traced unseen"))
            if called == "type" and len(node.args) + len(node.keywords) > 1:
                space = node.args[2] if len(node.args) > 2 else None
                if not isinstance(space, ast.Dict) or not all(
                    isinstance(key, ast.Constant) and isinstance(key.value, str)
                    for key in space.keys
                ):  # type("Kind", (), {}) names all it sets
                    found.append((line, "makes a class with type(), its namespace's names unseen"))
            if called == "basicConfig" and any(
                k.arg in ("filename", None) for k in node.keywords
            ):  # logging's file of any content, format="%(message)s" (the forty-ninth)
                found.append((line, "writes a file (basicConfig's filename)"))
            if called in WRITERS or dotted(func, aliases) in ("torch.save", "numpy.save"):
                found.append((line, f"writes a file ({called}), which the kernel could import"))
            for keyword in node.keywords:
                value = keyword.value.value if isinstance(keyword.value, ast.Constant) else None
                if (
                    (keyword.arg, value) in PICKLE_KEYWORDS
                    or keyword.arg == "pickle_module"
                    or (
                        keyword.arg in SAFE_PICKLE_KEYWORDS
                        and not (
                            isinstance(keyword.value, ast.Constant)
                            and value in SAFE_PICKLE_KEYWORDS[keyword.arg]
                        )
                    )
                ):
                    found.append((line, f"loads a pickle ({keyword.arg}=...), which runs code"))
            if called in PICKLE_POSITIONS:
                at = PICKLE_POSITIONS[called]
                if (
                    any(isinstance(a, ast.Starred) for a in node.args)
                    or any(k.arg is None for k in node.keywords)
                    or (
                        len(node.args) > at
                        and not (
                            isinstance(node.args[at], ast.Constant)
                            and node.args[at].value in (False, None)
                        )
                    )
                ):
                    found.append((line, f"loads a pickle ({called}: its switch by position)"))
            target = _attribute_name(node)
            if target is not None:
                if isinstance(target, ast.Constant) and isinstance(target.value, str):
                    # each part of a dotted name: attrgetter("gi_frame.f_back.f_locals")
                    parts = target.value.split(".")
                    reason = next(
                        filter(None, (_attribute_reason(a, aliases) for a in parts)), None
                    )
                    if reason:
                        found.append((line, f"{reason}, by name through {called}()"))
                else:
                    found.append((line, f"{called}() with an attribute name computed at run time"))
        elif isinstance(node, ast.Name):
            if (
                node.id in PICKLE_POSITIONS
                and id(node) not in calls
                and aliases.get(node.id, "").split(".")[0] in ("numpy", "torch")
            ):
                found.append((line, f"loads a pickle ({node.id} passed around as a value)"))
            if HISTORY.match(node.id):
                found.append((line, f"reads {node.id} (the kernel's history or internals)"))
            elif node.id in TORCH_HOOKS:
                found.append((line, f"uses {node.id} (torch's interception points)"))
            elif node.id in EVALUATORS:
                found.append(
                    (line, f"uses {node.id} (it evaluates annotations written as strings)")
                )
            elif node.id in BY_NAME and id(node) not in calls and not own(node):
                found.append((line, f"reads attributes by name ({node.id} as a value)"))
            elif node.id in AS_VALUE and id(node) not in calls and not own(node):
                found.append((line, f"{AS_VALUE[node.id]}: {node.id} passed around as a value"))
            elif isinstance(node.ctx, ast.Load) and (
                expected.get(node.id, "").split(".")[0] in SUSPICIOUS_MODULES
            ):
                path = expected[node.id]
                found.append((line, f"uses {node.id} (the setup cell's import of {path})"))
        elif isinstance(node, ast.Attribute):
            base = dotted(node.value, aliases)
            if (
                node.attr in PICKLE_POSITIONS
                and id(node) not in calls
                and (base or "").split(".")[0] in ("numpy", "torch", "np")
            ):
                found.append((line, f"loads a pickle ({node.attr} passed around as a value)"))
            reason = _attribute_reason(node.attr, aliases, base)
            if reason:
                found.append((line, reason))
            if node.attr == "loads" and (base or "").split(".")[0] not in ("json", "tomllib"):
                # pickle.loads as another module's `loads` (rich.style.loads gave sys.modules
                # from her bytes: the forty-ninth hub tester); json's and tomllib's are honest
                found.append((line, "loads a pickle? (.loads of a module other than json)"))
            if node.attr in BY_NAME and id(node) not in calls:
                found.append((line, f"reads attributes by name ({node.attr} as a value)"))
            if node.attr == FORMATTER[1] or f"{base}.{node.attr}" == FORMATTER[0]:
                found.append((line, "reads attributes by name (string.Formatter)"))
        elif isinstance(node, ast.MatchClass):
            for attr in node.kwd_attrs:
                if reason := _attribute_reason(attr, aliases):
                    found.append((line, f"{reason}, by name in a match pattern"))
        elif isinstance(node, ast.Constant) and node.value in DUNDERS | GRADER_MODULES | RAW_MEMORY:
            found.append((line, f"names {node.value} in a string"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for name in IN_STRINGS:
                if name in node.value:
                    found.append((line, f"names {name} in a string"))
        if isinstance(node, ast.arg | ast.FunctionDef | ast.AsyncFunctionDef | ast.AnnAssign):
            annotation = (
                node.returns
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                else node.annotation
            )
            if (
                isinstance(annotation, ast.Constant)
                and isinstance(annotation.value, str)
                and not re.fullmatch(r"[\w.\[\], |]*", annotation.value)
            ):
                found.append((line, "an annotation written as a string that holds code"))

        # strings read as code where they are evaluated: an annotation, or a forward reference
        # in a subscript (`typing.List["H[torch.sys]"]`), evaluated by singledispatchmethod's
        # register or attrs' resolve_types, gave her `__getitem__` sys (the forty-ninth hub
        # tester)
        for inner in read_as_code(node):
            if cell_flags(inner, protected, aliases, expected):
                found.append(
                    (line, "a string read as code (a forward reference) reaches past the lab")
                )
        if isinstance(node, ast.Attribute | ast.Name) and isinstance(node.ctx, ast.Store):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            if _dunder(name) and name not in ("__slots__", "__doc__", "__all__"):
                found.append((line, f"sets {name} (a method other code calls implicitly)"))
        # a class's __module__ set by a call, all words: collections.namedtuple's or
        # dataclasses.make_dataclass's `module=` (keyword-only in both), her object whose
        # __str__ the agent calls, unguarded, as it names her value's type (the sixty-seventh
        # hub tester; `__module__ = ...` in her class is flagged above)
        if isinstance(node, ast.Call) and _sets_module(node):
            found.append((line, "sets a class's __module__ (module=, a value of hers)"))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name in DUNDER_DEFS:
                found.append(
                    (line, f"defines {node.name} (it can make a wrong answer compare equal)")
                )
            elif node.name in REDUCERS:
                found.append((line, f"defines {node.name} (copy sets attributes by its names)"))
            elif node.name in TORCH_HOOKS:
                found.append((line, f"defines {node.name} (torch's interception points)"))
            elif node.name in RAW_MEMORY:
                found.append((line, f"defines {node.name} (an array over raw memory)"))
        elif isinstance(node, ast.Global | ast.Nonlocal):
            kind = "global" if isinstance(node, ast.Global) else "nonlocal"
            for name in node.names:
                if name in protected:
                    found.append((line, f"declares {name} {kind}, defined by the setup cell"))
        elif isinstance(node, ast.Attribute | ast.Subscript) and isinstance(
            node.ctx, ast.Store | ast.Del
        ):
            root = root_name(node)
            if root in protected:
                found.append((line, f"changes {_written(node)}, part of the setup cell's {root}"))
    for line, name, how, path in bindings(tree):
        if name == "*":
            found.append((line, f"{how} (it can rebind any name of the setup cell)"))
        elif name in protected and not (path and path == expected.get(name, name)):
            whose = (
                "defined by the setup cell"
                if name in expected or name not in PACKAGES
                else ("a package's name")
            )
            found.append((line, f"redefines {name} ({how}), {whose}"))
        elif vocabulary.builtin_reaching(name) or name in AS_VALUE:
            # a name of the notebook's namespace is hers for every read at the top, bound or
            # not yet: `for exec in []`, `if False: exec = 0`, `except E as exec` (deleted
            # after the handler), `del exec` leave the builtin (the fifty-second hub tester)
            found.append((line, f"binds {name} ({how}), a builtin's name: a read may be it"))
    return found


_FUNCTION_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _scope_parts(node):
    """(parameters, inside, outside) of a scope node: the names it takes, the children
    evaluated in its own scope, and those evaluated in the scope around it (decorators,
    defaults, annotations, a comprehension's first iterable, a class's bases)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]
        outside = [*a.defaults, *(d for d in a.kw_defaults if d)]
        outside += [x.annotation for x in params if x.annotation]
        if isinstance(node, ast.Lambda):
            return {x.arg for x in params}, [node.body], outside
        outside += [*node.decorator_list, *([node.returns] if node.returns else [])]
        return {x.arg for x in params}, node.body, outside
    if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
        first, *rest = node.generators
        inside = [first.target, *first.ifs, *rest]
        inside += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        return set(), inside, [first.iter]
    if isinstance(node, ast.ClassDef):
        return set(), node.body, [*node.decorator_list, *node.bases, *node.keywords]
    return set(), list(ast.iter_child_nodes(node)), []


def _scope(node):
    """A scope's names: (binds, global, reads, nested) for the scope `node` opens: the names
    it binds itself (not those it declares global or nonlocal), those it declares global, its
    ast.Name reads, and the scopes nested in it."""
    params, stack, _ = _scope_parts(node)
    binds, declared, nonlocal_, reads, nested = set(params), set(), set(), [], []
    stack = list(stack)
    while stack:
        here = stack.pop()
        if isinstance(here, (*_FUNCTION_SCOPES, ast.ClassDef)):
            stack += _scope_parts(here)[2]
            nested.append(here)
            if not isinstance(here, ast.Lambda) and hasattr(here, "name"):
                binds.add(here.name)
            continue
        if isinstance(here, ast.Name):
            if isinstance(here.ctx, ast.Load):
                reads.append(here)
            else:
                binds.add(here.id)
        elif isinstance(here, ast.alias):
            binds.add((here.asname or here.name).split(".")[0])
        elif isinstance(here, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and here.name:
            binds.add(here.name)
        elif isinstance(here, ast.MatchMapping) and here.rest:
            binds.add(here.rest)
        elif isinstance(here, ast.Global):
            declared.update(here.names)
        elif isinstance(here, ast.Nonlocal):
            nonlocal_.update(here.names)
        stack += list(ast.iter_child_nodes(here))
    return binds - declared - nonlocal_, declared, reads, nested


def local_reads(tree):
    """ids of the ast.Name reads of `tree` that resolve to a function's own binding: a name read
    in a def, lambda or comprehension (or a class body in one) that it or a function around it
    binds (a parameter, a local, a nested def), with no `global` for it between. Any other read
    is of the notebook's namespace or a builtin, whatever the cell binds elsewhere: `def
    never(): exec = 0` binds no `exec` for the top of the cell, where `exec` is the builtin
    (the fifty-second hub tester)."""
    found = set()

    def visit(node, chain):
        # chain: (binds, declared global, is a function) of every scope around node
        binds, declared, reads, nested = _scope(node)
        here = (*chain, (binds, declared, isinstance(node, _FUNCTION_SCOPES)))
        for read in reads:
            for depth, (scope_binds, scope_global, function) in enumerate(reversed(here)):
                if read.id in scope_global:
                    break
                if function and read.id in scope_binds:
                    found.add(id(read))
                    break
                if depth == 0 and read.id in scope_binds:
                    break  # a class body's own name: its namespace, then the notebook's
        for inner in nested:
            visit(inner, here)

    visit(tree, ())
    return found


class Known:
    """What a notebook's cells may name without the vocabulary's word (vocabulary.py): the
    released lab's names (bound in any of its code cells), the attribute names its code reads,
    the modules it imports; and the names the student's own cells bind at the top, and in a
    function those it binds where a read resolves to them (local_reads). Not the
    attribute names her cells set: a name is read whatever object it is read on, and an
    attribute name of hers (`self.transformers = 0`) would let the same name through on a
    module (`lmcourse.pretrained.transformers`), so it counts only if it is a word."""

    def __init__(self, lab_trees, student_trees):
        self.names, self.attributes, self.modules = set(), set(), set()
        for tree in lab_trees:
            self.names |= bound_names(tree)
            self.attributes |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
            self.modules |= {path.rsplit(".", 1)[0] for path in imported(tree).values()}
            self.modules |= set(imported(tree).values())
        self.local = set()  # ids of her reads of a function's own names (local_reads)
        for tree in student_trees:  # not a builtin's name that reaches (vocabulary.py)
            self.names |= {n for n in bound_names(tree) if not vocabulary.builtin_reaching(n)}
            self.local |= local_reads(tree)

    def attribute(self, name):
        return name in self.attributes or name in vocabulary.words()

    def module(self, path):
        return path in vocabulary.IMPORTABLE or path in self.modules


def outside(tree, known):
    """(line, reason) for every line of `tree` that uses a name that is neither a word of the
    labs' vocabulary (vocabulary.py) nor `known` (Known): a module it imports, a builtin or
    other name it reads, an attribute it reads (also by a constant name, through getattr or a
    match pattern). What such a flag names is no wrong: a person reads what it reaches."""
    found = {}

    def check(line, attribute):
        if not known.attribute(attribute):
            found.setdefault(line, []).append(f".{attribute}")

    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not known.module(alias.name):
                    found.setdefault(line, []).append(f"imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            module = node.module or ""
            for alias in node.names:
                path = f"{module}.{alias.name}"
                if node.level or not known.module(module):
                    found.setdefault(line, []).append(f"imports {'.' * node.level}{module}")
                elif not (known.module(path) or known.attribute(alias.name)):
                    found.setdefault(line, []).append(f"imports {path}")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if (
                node.id not in known.names
                and id(node) not in known.local
                and vocabulary.unknown_name(node.id)
            ):
                found.setdefault(line, []).append(node.id)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
            check(line, node.attr)
        elif isinstance(node, ast.Call):
            target = _attribute_name(node)
            if isinstance(target, ast.Constant) and isinstance(target.value, str):
                for part in target.value.split("."):
                    check(line, part)
        elif isinstance(node, ast.MatchClass):
            for attribute in node.kwd_attrs:
                check(line, attribute)
        for inner in read_as_code(node):  # read as code where they are evaluated
            for _, reason in outside(inner, known):
                found.setdefault(line, []).append(reason.removeprefix(f"{OUTSIDE}: "))
    return [
        (line, f"{OUTSIDE}: {', '.join(dict.fromkeys(names))}")
        for line, names in sorted(found.items())
    ]


OUTSIDE = "outside the labs' vocabulary"


def without_outside(phrases):
    """`phrases` (flags') with the vocabulary's reasons left out, and a phrase that had no
    other reason dropped: what the lists of routes past the lab flag."""
    kept = []
    for phrase in phrases:
        where, _, reasons = phrase.partition(": ")
        others = [r for r in reasons.split("; ") if not r.startswith(OUTSIDE)]
        if others:
            kept.append(f"{where}: {'; '.join(others)}")
    return kept


def _written(node):
    """`node` as source, for a flag's words; its root name and `[...]` where ast.unparse cannot
    write it: an int of more than 4,300 digits (a hex literal, which Python reads and runs, in
    `torch[0xff...] = 1` under `if False:`) made unparse raise ValueError, which stopped her
    grading before any of her code ran (the seventy-ninth hub tester)."""
    try:
        return ast.unparse(node)
    except ValueError:
        return f"{root_name(node)}[...]"


UNREADABLE = (
    "a cell the checks could not read ({}; Python runs it): its constructs were not all "
    "checked, so read every answer cell by hand"
)
TOO_DEEP = (
    "a cell nested too deeply for the checks to read (RecursionError; Python runs it): none "
    "of its constructs was checked, so read every answer cell by hand"
)


def flags(nb, release=None):
    """Suspicious constructs in the student's cells, as report phrases, in notebook order, one
    per line of a cell that has any ("l2_cache line 3: imports os; opens a file"); `release`
    (the released notebook) says which cells are the lab's. A cell nested deeper than the
    checks' recursion reaches (`_z = 1+1+...+1`, 600 terms, which Python runs) is one flag,
    TOO_DEEP: it stopped her grading with RecursionError before any of her code ran (the
    seventy-fifth hub tester), and its constructs go unread, so a person reads them."""
    try:
        return _flags(nb, release)
    except RecursionError:
        return [TOO_DEEP]
    except Exception as error:  # noqa: BLE001 (any failure of the checks is a flag, not a stop)
        return [UNREADABLE.format(type(error).__name__)]


def _flags(nb, release):
    lab = release or nb
    setup = setup_names(lab)
    expected = setup_imports(lab)
    protected = setup | declared_off_limits(lab) | PACKAGES
    locked_ids = None
    if release is not None:
        locked_ids = {meta(c).get("grade_id") for c in release.cells if meta(c).get("locked")}
    cells = []
    aliases = dict(expected)
    for index, cell in enumerate(nb.cells):
        if not is_student(cell, locked_ids):
            continue
        tree = parse(cell.source)
        if tree is None:
            continue  # a syntax error is the student's loss, not a flag
        cells.append((index, cell, tree))
        for name, path in imported(tree).items():
            aliases.setdefault(name, path)
    lab_trees = [t for c in lab.cells if c.cell_type == "code" and (t := parse(c.source))]
    if release is None:  # no release: the lab is the notebook's locked cells
        lab_trees = [t for c in lab.cells if is_locked(c) and (t := parse(c.source))]
    known = Known(lab_trees, [tree for _, _, tree in cells])
    phrases = []
    for index, cell, tree in cells:
        where = meta(cell).get("grade_id") or f"cell {index + 1}"
        seen, lines = set(), {}
        found = cell_flags(tree, protected, aliases, expected) + outside(tree, known)
        for line, reason in sorted(found):
            if reason not in seen:  # a reason once per cell, at its first line
                seen.add(reason)
                lines.setdefault(line, []).append(reason)
        phrases += [f"{where} line {line}: {'; '.join(found)}" for line, found in lines.items()]
    return phrases
