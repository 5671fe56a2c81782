"""What a lab's test compares against stays out of the student's reach while it is graded.

A lab test cell may declare, in a comment line of its own,

    # Off limits while graded: lmcourse.describe, torch.nn.functional.layer_norm, reference_count

the functions its expected values come from: a function, a method or a class (every method of
it) by dotted path, a module or package (every function in it), or a name the lab's setup
cell defines. While that test runs, a call of one of them made on behalf of the student's code
raises OffLimitsError, and the part scores 0: the student wrote the formula, not a call of the
very thing it is checked against.

"On behalf of the student's code" is read off the call stack when an off-limits function
starts: its nearest caller that is notebook code, skipping the off-limits functions
themselves, decides. The test cell's own code (a reference computing the expected value, a
setup helper the test calls) may use them; any other notebook code (answer cells, cells the
student added, a setup helper the student's code calls that is not itself off limits) may not.

Two places run this, with one rule:
- the grader's sandbox (grading/in_sandbox/sandbox_agent.py), where the tests run outside the
  student's kernel and only the student's code runs here: `Guard` is armed around each call a test
  makes, and what fired is reported to the grader, which scores the part 0 whatever the
  student's code did with the error;
- nbgrader's Validate, where the tests run in the student's own kernel: this module is an
  IPython extension (`--IPKernelApp.extensions=lmcourse.offlimits`, set in the course's
  nbgrader configuration) that arms a Guard for each test cell that declares one.

It is a profile hook (sys.setprofile), so it sees a function however it was reached: by its
module path, an alias imported earlier, a method of a module the student built. It cannot stop
code set on getting around it (unsetting the hook, another thread, a private copy of the
reference): the grader flags those constructs for a
person to read (grading/host/submission_checks.py).
"""

import importlib
import inspect
import os
import re
import sys
import types

DECLARATION = re.compile(r"^[ \t]*#[ \t]*Off limits while graded:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


# Off limits under every test: the ways to switch the guard off. (Threads are not: a
# library's thread, a progress bar's, is no delegation. One started during a guarded call
# runs under the same guard; one a student's cell started before the test is flagged for a
# person by the grader, grading/host/submission_checks.py.)
ALWAYS = (
    "sys.setprofile",
    "sys.settrace",
    "threading.setprofile",
    "threading.settrace",
)
# The stop of a call during which a process of hers ran: a program her code started then (a C
# call of _PROGRAMS), a worker forked from her kernel, or, in the grader's sandbox, any process
# of the sandbox but the kernel and its ancestors (Guard's `alone`). What another process
# computes is beyond the guard, so the call counts as it lost and scores 0, but the stop says so
# in its own words, not as sys.setprofile's: an honest torch.compile whose compilation
# (inductor's C++ compiler, a program) fell in a graded call read as her switching the guard
# off (the fortieth hub tester's open row; the seventy-eighth; the sandbox runs torch.compile
# uncompiled since).
PROGRAM = "a process of hers ran during the call"
STOPS = (*ALWAYS, PROGRAM)  # what the grader reads as a stop besides a test's declared names

# Families a test may declare by what the student must write rather than by a list of
# functions: every route torch offers to that computation. torch's own interception points see
# each route: a TorchFunctionMode every call of its Python API (torch.*, torch.nn.functional.*,
# the nn modules' forward, torch.ops.aten.*), by the operator's name, and a TorchDispatchMode
# every operator that reaches the dispatcher whole (rms_norm decomposes before it, so only the
# function mode sees it; layer, group, batch and instance norm reach it as native_* operators).
# A thread started during the call runs under the profile hook, which knows the Python
# functions and builtins of each name below.
FAMILIES = {
    "torch normalisation layers": (
        "layer_norm",
        "native_layer_norm",
        "rms_norm",
        "_fused_rms_norm",
        "group_norm",
        "native_group_norm",
        "batch_norm",
        "native_batch_norm",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_no_training",
        "_native_batch_norm_legit_functional",
        "_batch_norm_impl_index",
        "batch_norm_elemt",
        "batch_norm_stats",
        "batch_norm_gather_stats",
        "batch_norm_gather_stats_with_counts",
        "quantized_batch_norm",
        "_batch_norm_with_update",
        "_batch_norm_with_update_functional",
        "_batch_norm_no_update",
        "_transformer_encoder_layer_fwd",  # a fused encoder layer: two layer norms inside
        "cudnn_batch_norm",
        "miopen_batch_norm",
        "instance_norm",
        "local_response_norm",
    ),
}
FAMILY_MODULES = ("torch", "torch.nn.functional")  # where the Python forms of those names live
# torch's packages that reach an operator past both modes (TorchScript calls rms_norm whole,
# the reference and decomposition tables hold Python copies of the norms, the compiler traces
# around modes): off limits as a whole under any family (folders of torch's, not imported here).
FAMILY_ROUTES = ("jit", "_refs", "_decomp", "_prims", "_dynamo", "_inductor")
# ... but for the table torch.ops consults when it first names an operator
FAMILY_ROUTE_EXCEPTIONS = ("jit/_builtins.py",)


class OffLimitsError(RuntimeError):
    """A test's reference was called by the code under test."""


def declared(source):
    """The names a test cell's source declares off limits, in order, each once."""
    names = []
    for match in DECLARATION.finditer(source or ""):
        for name in match.group(1).split(","):
            name = name.strip().strip("`")
            if name and name not in names:
                names.append(name)
    return names


def message(name):
    if name == PROGRAM:
        return (
            "A process of yours ran while a test called your code: a program it started then "
            "(a shell, a python), or a worker or program still running from an earlier cell "
            "(a DataLoader's workers, for one). What another process computes is beyond the "
            "check that keeps the tests' references out of reach, so the part scores 0. End "
            "every program and worker your code starts before the tests call it."
        )
    if name in FAMILIES:
        return (
            f"{name} are off limits while your code is graded (every form torch offers: "
            "functions, modules, operators): this part asks you to write the normalisation "
            "yourself from elementary operations."
        )
    if name in ALWAYS:
        return (
            f"{name} is off limits while your code is graded: it would switch off, or run code "
            "beyond, the check that keeps the tests' references out of reach. The check also "
            "counts as switched off when your code recursed to Python's recursion limit."
        )
    return (
        f"{name} is off limits while your code is graded: this part asks you to write it "
        "yourself, and the test compares your answer with it. Use it to check your work "
        "outside your function, never inside."
    )


def _lookup(name, namespace):
    """The object a declared name stands for: a name of the notebook, or a dotted path."""
    head, _, rest = name.partition(".")
    if (
        namespace is not None
        and head in namespace
        and not isinstance(namespace[head], types.ModuleType)
    ):
        target = namespace[head]
        for part in rest.split(".") if rest else []:
            target = getattr(target, part)
        return target
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            try:
                target = getattr(target, part)
            except AttributeError:
                raise LookupError(f"{name!r}: {target!r} has no {part!r}") from None
        return target
    raise LookupError(f"{name!r} names no module and no name of the notebook")


def _codes(target, seen=None):
    """Code objects of a function, a method or a class (its methods, properties and nested
    functions included)."""
    seen = set() if seen is None else seen
    if id(target) in seen:
        return []
    seen.add(id(target))
    target = inspect.unwrap(target) if callable(target) else target
    if isinstance(target, staticmethod | classmethod):
        target = target.__func__
    if isinstance(target, property):
        return [c for f in (target.fget, target.fset, target.fdel) if f for c in _codes(f, seen)]
    if isinstance(target, types.MethodType):
        target = target.__func__
    if isinstance(target, types.FunctionType):
        code, found = target.__code__, []
        stack = [code]
        while stack:
            code = stack.pop()
            found.append(code)
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        return found
    if isinstance(target, type):
        found = []
        for value in vars(target).values():
            if isinstance(value, types.FunctionType | staticmethod | classmethod | property):
                found.extend(_codes(value, seen))
        return found
    return []


def _twin(code):
    """What a copy of `code` in another file has too: its name, bytecode, constants (a nested
    code object by its name) and names."""
    consts = tuple(
        ("<code>", c.co_name) if isinstance(c, types.CodeType) else (type(c), c)
        for c in code.co_consts
    )
    return code.co_name, code.co_code, consts, code.co_names, code.co_varnames


def _named(code):
    """Whether a copy of `code` elsewhere is a copy of the declared function, not common code:
    a comprehension, generator expression or lambda (`<genexpr>`, `<lambda>`) is a line anyone
    writes. LM10-L6's setup `attention_parameters`, given to the student, sums
    `p.numel() for p in layer.parameters()`, the same generator expression as the declared
    `reference_parameters`' own, and every honest answer that called it was stopped as the
    reference. A copy of a whole declared function is met at its own call first."""
    return not code.co_name.startswith("<")


# The guards armed now in this process. A process forked while one is armed runs her code under
# a copy of it whose `fired` this process never reads: a DataLoader worker (num_workers=1, her
# dataset's __getitem__) computed the declared reference for her f, nothing fired here and
# nothing flagged (the thirty-seventh hub tester). A fork while armed counts as the guard lost.
_ARMED = set()


def _forking():
    for guard in list(_ARMED):
        guard.missed = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_forking)

_LISTDIR, _OPEN, _READLINK = os.listdir, open, os.readlink  # as found: hers to rebind later


def _programs():
    """The C functions that start a program: one started during a call ran a python that
    computed the declared reference for her f, unguarded (torch.utils.collect_env's run, a
    shell with its output returned; huggingface_hub's run_subprocess; transformers' testing
    run_command: subprocess under names no list holds; the thirty-ninth hub tester)."""
    import _posixsubprocess

    found = [_posixsubprocess.fork_exec]
    for name in ("system", "posix_spawn", "posix_spawnp", "execv", "execve", "fork", "forkpty"):
        if hasattr(os, name):
            found.append(getattr(os, name))
    return frozenset(id(f) for f in found)


_PROGRAMS = _programs()


def _read(path):
    """The file's bytes; b"" where it is not (no /proc, a child or thread that ended), None where
    it could not be read: her answer cell held every descriptor the kernel may open (shared
    tensors), and a check that read nothing saw no child (the thirty-eighth hub tester)."""
    try:
        with _OPEN(path, "rb") as found:
            return found.read()
    except (FileNotFoundError, ProcessLookupError):
        return b""
    except OSError:
        return None


def _forked_children():
    """Whether a child of this process runs this process's own program still (forked, not
    exec'd: a DataLoader's worker, not a program she ran). A persistent worker her answer
    cell started before the call computed the reference for her f under no guard at all (the
    thirty-seventh hub tester): one alive when a guard is armed or ends counts as it lost."""
    own = _read("/proc/self/cmdline")
    if not own:
        return own is None  # no /proc (her own machine's Validate): nothing to look at
    try:
        tasks = _LISTDIR("/proc/self/task")
    except FileNotFoundError:
        return False
    except OSError:
        return True  # a check that cannot look counts as the guard lost
    for task in tasks:
        children = _read(f"/proc/self/task/{task}/children")
        if children is None:
            return True
        for pid in children.split():
            theirs = _read(f"/proc/{int(pid)}/cmdline")
            if theirs is None or theirs == own or _multiprocessing(theirs):
                return True
    return False


def _others_alive():
    """In the grader's sandbox, whose /proc lists the sandbox's processes alone: whether one lives
    that is neither this kernel nor one of its ancestors (the executor's). A program her answer
    cell started before the call and fed each input on its stdin (huggingface_hub's
    run_interactive_subprocess: the thirty-ninth hub tester), or a worker's own child, which
    outlives its parent and is no child of the kernel, computed the reference under no guard;
    every such process is hers. One that cannot be read counts as alive."""
    try:
        me = int(_READLINK("/proc/self"))
        entries = _LISTDIR("/proc")
    except (OSError, ValueError):
        return True
    ancestors, pid = {me}, me
    while pid > 1:
        stat = _read(f"/proc/{pid}/stat")
        if not stat:
            return True
        pid = int(stat.rsplit(b")", 1)[1].split()[1])
        ancestors.add(pid)
    for entry in entries:
        if entry.isdigit() and int(entry) not in ancestors and _running(entry):
            return True
    return False


def _live(stat):
    """Whether a /proc stat (a process's or a thread's) is of one still running: None (it could
    not be read) counts so, b"" (gone) does not, nor a zombie (Z, X)."""
    return stat is None or bool(stat) and stat.rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")


def _running(pid):
    """Whether a process lives: one of its threads is no zombie. Its stat is its main thread's,
    which reads Z once that thread exited alone (a bare SYS_exit) while another thread of it
    computed the reference for her f (the eighty-first hub tester): its tasks are read then."""
    stat = _read(f"/proc/{pid}/stat")
    if stat == b"" or _live(stat):  # gone, or running (or unreadable)
        return stat != b""
    try:
        tasks = _LISTDIR(f"/proc/{pid}/task")
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return any(_live(_read(f"/proc/{pid}/task/{task}/stat")) for task in tasks)


def _multiprocessing(cmdline):
    """Whether a child runs multiprocessing's own worker or fork server, started by exec: a
    DataLoader's persistent worker started with `multiprocessing_context="spawn"` (a string,
    no flagged call) computed the reference for her f under no guard, its cmdline not the
    kernel's (the thirty-ninth hub tester). The resource tracker runs none of her code."""
    args = cmdline.split(b"\0")
    return b"--multiprocessing-fork" in args or any(
        arg.startswith(b"from multiprocessing.forkserver import") for arg in args
    )


class Guard:
    """A profile hook that stops the `names` (see the module's docstring) while it is armed.

    `test_file`: the file name under which the running test cell's code was compiled (in the
    student's kernel); None in the grader's sandbox, where no test code runs here.
    `boundary`: files of the code that calls the student's code on the test's behalf (the
    sandbox's agent). Given, the guard is armed by that code around one call of the student's
    code: the frames on the stack when it is armed are the agent's, and whatever runs beneath
    them while it is armed runs on the student's behalf, whichever file it is in. So neither
    a frame of the agent's file that the student's code calls again (its dispatcher, a
    configuration's repr) nor an answer that *is* a torch function, called by the agent with
    no notebook frame between, passes for the test's side. `missing_ok`: a name that names
    nothing here is skipped (a graded room, grading/host/room.py, holds no references)."""

    def __init__(
        self, names, namespace=None, test_file=None, boundary=(), missing_ok=False, alone=False
    ):
        self.names, self.test_file, self.fired = list(names), test_file, []
        # the kernel is alone in the grader's sandbox: every other process there but its
        # ancestors is one of hers (_others_alive)
        self.alone = alone
        self.for_agent = bool(boundary)  # armed around a call the sandbox's agent makes
        self.outer = frozenset()  # ids of the agent's frames that armed it (__enter__)
        self.codes, self.builtins, self.files, self.ops = {}, {}, {}, {}
        # _twin of a declared code: (name, the folder a copy must lie in: "" anywhere for a
        # declared function's, its package's folder for a declared module's)
        self.twins = {}
        self.exempt = set()  # files under an off-limits folder that are not off limits
        self.named = set()  # a family's own functions (its routes' files are torch's)
        self.disabling = None  # torch's lazy `_disable_dynamo` wrapper's code (_family)
        for name in self.names + [n for n in ALWAYS if n not in self.names]:
            if name in FAMILIES:
                self._family(name)
                continue
            try:
                target = _lookup(name, namespace)
            except LookupError:
                if missing_ok:  # not in this process at all: nothing can call it
                    continue
                raise
            if isinstance(target, types.ModuleType):
                path = getattr(target, "__file__", None) or ""
                # a package: every file under it (by str's own methods: os.path's functions are
                # posixpath's, which her cells can rebind: her posixpath.basename left a declared
                # package's __init__.py guarded and every other file of it free, nothing flagged:
                # the thirty-third hub tester)
                if path.endswith(os.sep + "__init__.py"):
                    path = path.removesuffix("__init__.py")
                if path:
                    self.files[path] = name
                if path.endswith(".py"):  # a module, not a package: its functions' copies
                    self._module_twins(target, path, name)
            elif isinstance(target, types.BuiltinFunctionType):
                self.builtins[id(target)] = name
            else:
                codes = _codes(target)
                if not codes:
                    raise LookupError(f"{name!r} is no function, class or module")
                self.codes.update((code, name) for code in codes)
        # Where each declared function's code lies: torch.compile (backend="eager",
        # dynamic=True) of a declared reference, made in her answer cell, runs a copy of its
        # code that dynamo rewrote (the same file and lines, another code object), and her f
        # calling it computed the reference with nothing fired, nothing flagged (the fortieth
        # hub tester). A code object of that file within those lines is the reference's.
        self.spans = {}
        for code, name in self.codes.items():
            lines = [line for _, _, line in code.co_lines() if line is not None]
            last = max(lines, default=code.co_firstlineno)
            self.spans.setdefault(code.co_filename, []).append((code.co_firstlineno, last, name))
        # Each declared function's code by what it is, not where: transformers keeps a copy of
        # repeat_kv in 202 models' files ("Copied from"), and her f calling mistral's computed
        # L5's declared repeat_kv, nothing fired, nothing flagged (the fortieth hub tester).
        for code, name in self.codes.items():
            if name not in FAMILIES and _named(code):
                self.twins[_twin(code)] = (name, "")
        self.cell_prefixes = _cell_prefixes()
        self.previous, self.previous_threads, self.modes = None, None, []
        self.others = ()  # the other threads' hooks (_hook_other_threads)
        self.missed = False  # an event another thread's hook could not judge (trampoline)
        self.program = False  # a program started while it was armed (PROGRAM)
        # Whether anything declared is here to guard (in a graded room, grading/host/room.py, the
        # references are not): without it the hook would only slow honest code down.
        always = {n for n in ALWAYS if n not in self.names}
        self.guards_anything = bool(self.ops or self.files) or any(
            n not in always for n in [*self.codes.values(), *self.builtins.values()]
        )

    def _family(self, family):
        """A family's operators (for torch's modes) and their Python forms (for the hook)."""
        torch = importlib.import_module("torch")
        torch_folder = os.path.dirname(torch.__file__)
        wrapper = getattr(getattr(torch, "_compile", None), "_disable_dynamo", None)
        if wrapper is not None:  # every function it wraps runs this one code object
            self.disabling = getattr(wrapper(_unwrapped), "__code__", None)
        for route in FAMILY_ROUTES:
            self.files[os.path.join(torch_folder, route) + os.sep] = family
        self.exempt.update(os.path.join(torch_folder, path) for path in FAMILY_ROUTE_EXCEPTIONS)
        for op in FAMILIES[family]:
            self.ops[op] = family
            for module in FAMILY_MODULES:
                target = getattr(importlib.import_module(module), op, None)
                if isinstance(target, types.BuiltinFunctionType):
                    self.builtins[id(target)] = family
                elif isinstance(target, types.FunctionType):
                    self.codes.update((code, family) for code in _codes(target))
                    self.named.update(_codes(target))

    def _module_twins(self, module, path, name):
        """A declared module's functions and classes, by what their code is, in the files of
        its top package: L4 and L5 declare transformers.models.llama.modeling_llama (its file),
        and her f returning mistral's rotate_half (a copy in another file of transformers)
        computed it, nothing fired, nothing flagged (the forty-first hub tester). Only that
        package's files: her own cell's code of the same bytecode (a forward she typed as
        LlamaMLP's) is her work."""
        top = importlib.import_module(module.__name__.partition(".")[0])
        root = getattr(top, "__file__", None) or ""
        root = root.removesuffix("__init__.py") if root.endswith(os.sep + "__init__.py") else path
        for value in list(vars(module).values()):
            if not isinstance(value, types.FunctionType | type):
                continue
            for code in _codes(value):
                if code.co_filename == path and _named(code):
                    self.twins.setdefault(_twin(code), (name, root))

    def stop(self, name):
        if name not in self.fired:
            self.fired.append(name)
        raise OffLimitsError(message(name))

    def _reference(self, code):
        """The declared name `code` belongs to, or None; each code object is looked up once
        (the hook asks on every call the student's code makes)."""
        if code in self.codes:
            return self.codes[code]
        name = None
        filename = code.co_filename
        for path, module in self.files.items() if filename not in self.exempt else ():
            if filename == path or (path.endswith(os.sep) and filename.startswith(path)):
                name = module
                break
        else:
            first = code.co_firstlineno
            for start, end, declared in self.spans.get(filename, ()):
                if start <= first <= end:
                    name = declared
                    break
            else:
                declared, root = (
                    self.twins.get(_twin(code), (None, "")) if self.twins else (None, "")
                )
                if declared is not None and filename.startswith(root):
                    name = declared
        if name is None:  # dynamo's rewrite of a copy (torch.compile of mistral's repeat_kv)
            rewritten = getattr(sys.modules.get("torch._dynamo.utils"), "orig_code_map", None)
            original = rewritten.get(code) if rewritten is not None else None
            if isinstance(original, types.CodeType) and original is not code:
                name = self._reference(original)
        self.codes[code] = name
        return name

    def _students(self, frame):
        """Whether the nearest notebook code above `frame` (off-limits code skipped) is any
        but the running test's; reaching the frames that armed the guard first, whether the
        agent armed it (then the call is the student's code's, see `boundary`). A stack with
        neither (a thread started during the call) is the student's where the agent armed
        the guard: under it, nothing runs on the test's behalf. Beneath a call the modes
        passed on, everything is judged by who made that call: torch runs her callables there
        (a tensor's or a grad_fn's hook, by backward; Tensor.apply_'s function), a reference
        or a partial of one among them (the thirty-fourth hub tester), and torch's own code
        of a family's routes among them too: a decomposition of rms_norm from
        torch.export.default_decompositions() hung as a grad_fn's pre-hook computed the norm
        for her (the thirty-fifth hub tester). torch's own calls of its routes' code pass
        where `_disabling` says so."""
        while frame is not None:
            if id(frame) in self.outer:
                return True
            code = frame.f_code
            if code.co_filename == __file__:  # the guard's own calls (its modes pass func on)
                if code.co_name not in _PASSING:
                    return False
                frame = frame.f_back
                continue
            if self._reference(code) is None and code.co_filename.startswith(self.cell_prefixes):
                return code.co_filename != self.test_file
            frame = frame.f_back
        return self.for_agent

    def _route(self, code):
        """Whether `code` is torch's own code of a family's routes (a file there, none of the
        family's named functions)."""
        return self._reference(code) in FAMILIES and code not in self.named

    def _disabling(self, frame):
        """Whether `frame`, torch's own code of a family's routes, only runs a function with the
        compiler off for torch: beneath its lazy `_disable_dynamo` wrapper (torch.manual_seed
        once torch._dynamo is imported, as the sandbox's warm start imports it), with nothing
        but the routes' frames (and the import of torch._dynamo) between,
        around a Python function of no route. Such a wrapper computes nothing: an honest
        torch.manual_seed in her answer was stopped, 0 for the part. What the wrapped function
        calls is judged as any call; a wrapped function of a route (a compiled one) or another
        callable (a partial of a reference) is not passed."""
        while frame is not None and (
            frame.f_code.co_filename.startswith("<frozen importlib") or self._route(frame.f_code)
        ):
            frame = frame.f_back
        if frame is None or self.disabling is None or frame.f_code is not self.disabling:
            return False
        fn = frame.f_locals.get("fn")
        wrapped = getattr(fn, "__code__", None)
        if not isinstance(wrapped, types.CodeType) or self._reference(wrapped) is not None:
            return False
        # What `inner` calls is the function's attribute `__dynamo_disable`, which anyone can
        # set: torch.random.manual_seed's, set to a decomposition of torch's (from the public
        # torch.export.default_decompositions()), computed rms_norm beneath torch.manual_seed
        # unseen, nothing flagged (the thirty-fifth hub tester). Only torch._dynamo's own
        # disable wrapper around that very function passes (or none yet: its first call).
        disable_fn = frame.f_locals.get("disable_fn")
        if disable_fn is None:
            return True
        code = getattr(disable_fn, "__code__", None)
        if code is None or code not in _dynamo_disable_codes():
            return False
        closure = getattr(disable_fn, "__closure__", None) or ()
        cells = dict(zip(code.co_freevars, closure, strict=False))
        try:
            return "fn" in cells and cells["fn"].cell_contents is fn
        except ValueError:  # an empty cell
            return False

    def hook(self, frame, event, arg):
        if event == "call":
            name = self._reference(frame.f_code)
            caller = frame.f_back
            if self._route(frame.f_code) and self._disabling(frame):
                return
        elif event == "c_call":
            if id(arg) in _PROGRAMS:
                self.missed = True  # a program run during the call computes what it likes
                self.program = True  # the stop says so (PROGRAM), not sys.setprofile
            name = self.builtins.get(id(arg))
            caller = frame
        else:
            return
        if name is not None and self._students(caller):
            self.stop(name)  # CPython unsets the hook of this thread: it fired once

    def _in_thread(self, frame, event, arg):
        """The hook in a thread started while the guard is armed: CPython unsets it there when
        it raises, so a hook that could not judge an event (the recursion limit) is `missed`."""
        try:
            return self.hook(frame, event, arg)
        except OffLimitsError:
            raise
        except BaseException:
            self.missed = True
            raise

    def operator(self, name, frame):
        """torch's modes ask about each operator they see, `frame` the Python caller."""
        family = self.ops.get(name.split(".")[0])
        if family is not None and self._students(frame):
            self.stop(family)

    def __enter__(self):
        import threading

        # The agent's frames stay alive while the guard is armed, so their ids stand for
        # them; in Validate's kernel the guard is armed by a hook whose frames end at once.
        frame, outer = sys._getframe(1) if self.for_agent else None, set()
        while frame is not None:
            outer.add(id(frame))
            frame = frame.f_back
        self.outer = frozenset(outer)
        _ARMED.add(self)
        self.program = self.program or self._processes()
        self.missed = self.missed or self.program
        self.previous_threads = threading.getprofile()
        threading.setprofile(self._in_thread)  # threads started while it is armed run under it
        self.previous = sys.getprofile()
        sys.setprofile(self.hook)
        self.others = _hook_other_threads(self)
        if self.ops:
            self.modes = _torch_modes(self)
            for mode in self.modes:
                mode.__enter__()
        return self

    def _processes(self):
        """Whether a process of hers lives beside the kernel (see PROGRAM)."""
        return _forked_children() or (self.alone and _others_alive())

    def __exit__(self, *exc):
        import threading

        # CPython unsets a thread's profile hook whenever the hook raises, and calling the hook
        # raises RecursionError near the recursion limit: code that recursed that far (caught)
        # ran on unguarded (the thirty-third hub tester). `lost` says so, for the agent.
        _ARMED.discard(self)
        self.program = self._processes() or self.program
        self.lost = self.missed or sys.getprofile() != self.hook or self.program
        self.lost_as = PROGRAM if self.program else "sys.setprofile"  # the stop's name
        sys.setprofile(self.previous)
        threading.setprofile(self.previous_threads)
        _unhook_other_threads(self.others)
        self.others = ()
        for mode in reversed(self.modes):
            mode.__exit__(None, None, None)
        self.modes = []
        return False


# Threads that were running when the guard was armed: `threading.setprofile` reaches only
# threads started later, and sys.setprofile only the calling thread, so a thread a library had
# started for her earlier (tqdm's monitor, which calls her subclass's get_lock every
# monitor_interval) ran her code with no hook at all, nothing flagged (the thirty-fourth hub
# tester). CPython 3.11 has no Python function that hooks another thread (3.12's
# threading.setprofile_all_threads): the guard sets each one's hook through the C API, as that
# function does, with a C trampoline that passes the events on to the guard's hook. An error the
# hook raises there is recorded in `fired` (the agent reads it) and not raised in that thread.
_EVENTS = {0: "call", 4: "c_call"}  # PyTrace_CALL, PyTrace_C_CALL


def _c_api():
    import ctypes

    api = ctypes.pythonapi
    tracefunc = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.c_void_p, ctypes.py_object, ctypes.c_int, ctypes.c_void_p
    )
    api.PyInterpreterState_Get.restype = ctypes.c_void_p
    api.PyInterpreterState_ThreadHead.restype = ctypes.c_void_p
    api.PyInterpreterState_ThreadHead.argtypes = [ctypes.c_void_p]
    api.PyThreadState_Next.restype = ctypes.c_void_p
    api.PyThreadState_Next.argtypes = [ctypes.c_void_p]
    api.PyThreadState_Get.restype = ctypes.c_void_p
    api._PyEval_SetProfile.restype = ctypes.c_int
    api._PyEval_SetProfile.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return ctypes, api, tracefunc


try:
    _CTYPES, _API, _TRACEFUNC = _c_api()
except (ImportError, AttributeError):  # not CPython: other threads stay as they are
    _CTYPES = _API = _TRACEFUNC = None


def _each_thread(action, only=None):
    """action(state) for the C thread state of each thread of the interpreter but the calling
    one (of those in `only`, where given); the states read. A thread that ends frees its state,
    with the GIL: the interval is stretched so that none is handed over between reading a
    state and using it."""
    interval, done = sys.getswitchinterval(), []
    sys.setswitchinterval(1000.0)
    try:
        own = _API.PyThreadState_Get()
        state = _API.PyInterpreterState_ThreadHead(_API.PyInterpreterState_Get())
        while state:
            if state != own and (only is None or state in only):
                action(state)
                done.append(state)
            state = _API.PyThreadState_Next(state)
    finally:
        sys.setswitchinterval(interval)
    return done


def _hook_other_threads(guard):
    """Set `guard`'s hook on every other thread of the interpreter; (trampoline, states)."""
    if _API is None:
        return ()
    cast, py_object = _CTYPES.cast, _CTYPES.py_object

    # An event the hook could not judge (near the recursion limit its calls raise
    # RecursionError) was let through unseen, the hook left set: her code in a library's
    # thread recursed to the limit and called a reference there, nothing fired and nothing
    # lost (the thirty-fifth hub tester). Such a thread counts as the guard lost (`missed`).
    def trampoline(_, frame, what, arg):
        try:
            event = _EVENTS.get(what)
            if event is not None:
                guard.hook(frame, event, cast(arg, py_object).value if arg else None)
        except OffLimitsError:  # recorded in guard.fired
            pass
        except BaseException:  # noqa: BLE001 (whatever stopped the hook, the event went unseen)
            guard.missed = True
        return 0

    made = _TRACEFUNC(trampoline)
    address = _CTYPES.cast(made, _CTYPES.c_void_p)
    return made, _each_thread(lambda state: _API._PyEval_SetProfile(state, address, None))


def _unhook_other_threads(others):
    """Unset the hooks `_hook_other_threads` set, on those of its threads still running."""
    if not others:
        return
    _each_thread(lambda state: _API._PyEval_SetProfile(state, None, None), set(others[1]))


def _unwrapped():
    """What the guard wraps in torch's `_disable_dynamo` to learn its wrapper's code."""


def _dynamo_disable_codes():
    """The code objects of torch._dynamo's disable wrappers (recursive and not), once it is
    imported: what torch's lazy `_disable_dynamo` calls around the function it wraps."""
    codes = set()
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    context = getattr(eval_frame, "DisableContext", None)
    call = getattr(vars(context).get("__call__") if context else None, "__code__", None)
    if call is not None:
        codes.update(
            c for c in call.co_consts if isinstance(c, types.CodeType) and c.co_name == "_fn"
        )
    decorators = sys.modules.get("torch._dynamo.decorators")
    nonrecursive = getattr(decorators, "_nonrecursive_disable_wrapper_code", None)
    if isinstance(nonrecursive, types.CodeType):
        codes.add(nonrecursive)
    return codes


# The modes' frames that pass a torch call on (`func(*args)`), as `Guard._students` knows them.
_PASSING = ("__torch_function__", "__torch_dispatch__")


def _torch_modes(guard):
    """A TorchFunctionMode and a TorchDispatchMode that ask `guard` about every operator."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class FunctionGuard(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            guard.operator(str(getattr(func, "__name__", "")), sys._getframe(1))
            return func(*args, **(kwargs or {}))

    class DispatchGuard(TorchDispatchMode):
        # torch wraps a dispatch mode's __torch_dispatch__ in its lazy `_disable_dynamo`,
        # whose first call (each new mode's) runs torch._dynamo's `disable`, a family's route:
        # from her frame (an honest torch.manual_seed) it stopped her answer (the thirty-fourth
        # hub tester). Nothing is compiled while the guard is armed.
        @classmethod
        def _should_skip_dynamo(cls):
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            guard.operator(str(func.overloadpacket.__name__), sys._getframe(1))
            return func(*args, **(kwargs or {}))

    return [FunctionGuard(), DispatchGuard()]


def _cell_prefixes():
    """Starts of the file names IPython and ipykernel compile notebook cells under."""
    prefixes = ["<ipython-input-"]
    try:
        from ipykernel.compiler import get_tmp_directory

        prefixes.append(get_tmp_directory() + os.sep)
    except ImportError:
        pass
    if os.environ.get("IPYKERNEL_CELL_NAME"):
        prefixes.append(os.environ["IPYKERNEL_CELL_NAME"])
    return tuple(prefixes)


# ------------------------------------------------------------ the IPython extension (Validate)


class _CellGuards:
    """Validate's guard, armed around each test cell that declares names, in her own kernel.

    As the grader's sandbox does, torch.compile runs uncompiled while it is armed (once
    torch._dynamo is imported: her answer cell's torch.compile imports it), and a test whose
    guard was lost (a process of hers alive or started, her code recursed to the limit) or
    fired (an OffLimitsError her code caught) fails here as it scores 0 there: Validate had
    passed such a test, the grader failed it (the error is shown as the cell's error output,
    which Validate reads)."""

    def __init__(self, shell):
        self.shell, self.guard, self.compiled, self.environ = shell, None, None, None

    def pre_run_cell(self, info):
        names = declared(getattr(info, "raw_cell", ""))
        if not names:
            return
        try:
            name = self.shell.compile.get_code_name(info.raw_cell, info.raw_cell, 0)
        except (AttributeError, TypeError):
            name = None
        # matplotlib's fonts, found before the guard is armed, as the grader's sandbox finds
        # them before any notebook (sandbox_exec.serve): in a home without matplotlib's font
        # cache, her f that plots when called ran fc-list, a program, and Validate failed an
        # answer the grader passes (the eighty-seventh tester).
        try:  # noqa: SIM105 (no module more for the guard to import)
            import matplotlib.font_manager  # noqa: F401
        except Exception:  # noqa: BLE001, S110 (no matplotlib: no plot of hers to spare)
            pass
        try:
            self.guard = Guard(names, self.shell.user_ns, test_file=name)
        except (LookupError, AttributeError, ImportError) as error:
            print(f"lmcourse.offlimits: cannot guard this test: {error}", file=sys.stderr)
            return
        self.guard.__enter__()
        # torch._dynamo reads TORCH_COMPILE_DISABLE once, when first imported: her f that
        # first calls torch.compile during the test (dynamo not imported yet) ran compiled,
        # inductor's compiler a program, and Validate failed an answer the grader passes (the
        # eighty-third hub tester). The variable is set too, and undone after the cell.
        self.environ = os.environ.get("TORCH_COMPILE_DISABLE")
        os.environ["TORCH_COMPILE_DISABLE"] = "1"
        config = sys.modules.get("torch._dynamo.config")
        if config is not None:
            self.compiled = (config, config.disable)
            config.disable = True

    def post_run_cell(self, result):
        guard, self.guard = self.guard, None
        if guard is None:
            return
        guard.__exit__(None, None, None)
        if self.environ is None:
            os.environ.pop("TORCH_COMPILE_DISABLE", None)
        else:
            os.environ["TORCH_COMPILE_DISABLE"] = self.environ
        if self.compiled is not None:
            config, before = self.compiled
            config.disable, self.compiled = before, None
        else:  # imported during the cell, under the variable: as it would have been
            config = sys.modules.get("torch._dynamo.config")
            if config is not None:
                config.disable = self.environ == "1"
        if getattr(result, "error_in_exec", None) is None and (guard.fired or guard.lost):
            error = OffLimitsError(message(guard.fired[0] if guard.fired else guard.lost_as))
            self.shell.showtraceback((OffLimitsError, error, None))  # the cell's error output


def load_ipython_extension(shell):
    guards = _CellGuards(shell)
    shell.events.register("pre_run_cell", guards.pre_run_cell)
    shell.events.register("post_run_cell", guards.post_run_cell)
