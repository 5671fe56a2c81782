"""Which submissions of a lab share their answer code: pairs and clusters, ranked, for the
instructor's eyes only.

    python -m grading.instructor.similarity LM10-L2 [--grading DIR] [--threshold 0.5]
    (make similarity LAB=LM10-L2)

writes grading/reports/LM10-L2-similarity.html (one file, opens from disk, requests nothing)
and LM10-L2-similarity.csv (every pair with a share above zero) beside it. Nothing of it goes
to students, the feedback or the gradebook; no grading run is needed: it reads
grading/submitted/<student>/LAB/LAB.ipynb directly and labs/LAB/LAB.ipynb, the release.

How a pair is scored:
- Only the student's own answer code is compared: her answer cells, in notebook order, as the
  release names them (by grade id: her notebook's `solution` flags are hers to change, and
  nbgrader grades the cells all the same), and every code cell she added, which grading runs as
  hers (answer_text). Setup and test cells are never read, and everything of the release
  (the starter code of the answer cells, the setup and the tests) is boilerplate: a passage the
  release holds counts for no one.
- Statements that do nothing are left out first (`idle`): `pass`, an expression that calls
  nothing but a builtin that changes nothing (a docstring apart), and a value stored in names no
  statement reads. A copy padded with such a statement after each of hers has fingerprints
  across every seam that the original lacks (0.23 against its original before, the forty-eighth
  hub tester's; grading/JUPYTERHUB.md).
- The matcher is copydetect (PyPI; winnowing, as MOSS does): its tokenizer replaces every name
  by one letter and drops comments, whitespace and line breaks, so renaming, reformatting and
  comments change nothing, and a fingerprint is a k-gram of those tokens, so reordered
  functions or cells keep all but the fingerprints across their seams.
- Fingerprints are weighted by how rare they are in the class: a fingerprint that d of the
  class's n submissions hold weighs log2(n / (2 d)), and nothing when at least half the class
  holds it. What every second student writes flags no one; what two students alone share
  weighs most.
- A pair's score is the weight the two share divided by the weight of the smaller of the two
  (the share of its distinctive code that is also in the other). Pairs at or above the
  threshold are linked; clusters are the groups they link.

Similarity is evidence for a person to read, never a verdict: short formulas converge,
students work together where the course allows it, and a shared source (a lesson, a book)
makes honest answers alike. The page says so.
"""

import argparse
import ast
import functools
import html
import math
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import numpy as np

from grading.host import submission_checks
from grading.instructor import csvout
from grading.instructor.sanitise import plain

GRADING = Path(__file__).resolve().parents[1]  # grading/, the course's data
# A fingerprint is K characters of filtered code (a name is one character): copydetect's default
# is 25; answers here are a few short lines, and 15 kept reordered statements recognisable while
# honest pairs stayed lower (benchmarks/similarity.py, K = 12, 15, 25).
K = 15
THRESHOLD = 0.5
SHOWN = 40  # pairs shown side by side on the page (all are in the CSV)
# Answer code compared per submission, at most: the labs' answers are a few thousand
# characters; a submission of megabytes (hostile, or pasted output) would take minutes alone.
MAX_CHARS = 100_000


@dataclass
class Submission:
    student: str
    text: str  # the answer cells, each behind a comment line naming its grade_id
    fingerprint: object = None  # copydetect.CodeFingerprint
    hashes: set = field(default_factory=set)  # fingerprints left after the boilerplate
    weight: float = 0.0  # summed rarity weight of its fingerprints


@dataclass
class Pair:
    a: str
    b: str
    score: float  # shared weight / weight of the smaller submission
    shared_weight: float
    plain_share: float  # copydetect's unweighted share of the smaller submission
    shared: int  # fingerprints in common (weighted above zero)
    rarest: int  # fewest submissions holding one of the shared fingerprints


# ------------------------------------------------------------------------------ reading


# Builtins whose call, as a statement of its own or stored in a name nobody reads, changes
# nothing a reader would copy (print's output is no answer).
PURE = frozenset(
    {
        "abs", "bool", "dict", "divmod", "float", "hash", "id", "int", "isinstance", "len",
        "list", "max", "min", "pow", "print", "range", "repr", "round", "set", "sorted",
        "str", "sum", "tuple", "type",
    }
)  # fmt: skip


def _calls_nothing(expr, bound=frozenset()):
    """Whether evaluating `expr` calls nothing but PURE builtins, binds nothing and defines no
    function (a lambda stored in a name that only the tests read is her answer: the fifty-fifth
    hub tester's copy written as lambdas was cut whole and paired with no one), and reads no
    name but a PURE builtin's. Whatever reads a name's value may hand it on: an operation calls
    a method of its operand's class (`r << formula`, her `__lshift__` keeping the value, the
    fifty-seventh hub tester's), so does a builtin given her value (`round(r, formula)` calls
    her `__round__`, `max(..., key=seen.append)` her list's method), and anything may raise,
    which a `try` around it reads (`1 // (formula >> k & 1)` tells one bit of the formula; so
    does `pow(bit, -1)`). A statement of constants alone is still cut."""
    nodes = list(ast.walk(expr))
    # a builtin's name is hers where she binds it (`bound`): a local named `int` or `round`
    # (`1 // ((int * int ...) >> round & 1)`, the same tester's, was cut)
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    if any(
        isinstance(n, ast.Name)
        and isinstance(n.ctx, ast.Load)
        and id(n) not in called
        and (n.id not in PURE or n.id in bound)
        for n in nodes
    ):
        return False
    # a comprehension's target may be an item or an attribute (`[0 for seen[0] in [formula]]`,
    # then `return seen[0]`, the fifty-seventh hub tester's): a store
    if any(
        isinstance(n, ast.Subscript | ast.Attribute) and isinstance(n.ctx, ast.Store) for n in nodes
    ):
        return False
    for node in nodes:
        if isinstance(
            node,
            ast.NamedExpr | ast.Await | ast.Yield | ast.YieldFrom | ast.Lambda | ast.GeneratorExp,
        ):  # a generator expression's code runs when it is iterated, later: as a lambda's
            return False
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in PURE and node.func.id not in bound
        ):
            return False
    return True


def _stored_names(target):
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        names = [_stored_names(t) for t in target.elts]
        return None if None in names else [n for group in names for n in group]
    return None


def idle(node, read, bound=frozenset()):
    """Whether statement `node` does nothing a reader would copy: `pass`, an expression that
    calls nothing but PURE builtins (not a docstring: the caller keeps those), or a store into
    names that no statement reads (`read`) of a value that calls nothing but PURE builtins."""
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Expr):
        return _calls_nothing(node.value, bound)
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [_stored_names(t) for t in targets]
        if None in names or any(n in read for group in names for n in group):
            return False
        # a bare annotation is evaluated at the top of a cell: `_: (f := lambda ...)` binds
        # her answer (the fifty-fifth hub tester's, cut whole before)
        if isinstance(node, ast.AnnAssign) and not _calls_nothing(node.annotation, bound):
            return False
        return node.value is None or _calls_nothing(node.value, bound)
    return False


def _docstrings(tree):
    return {
        id(body[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and (body := node.body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    }


def class_stores(tree):
    """The ids of the stores made in a class's namespace (its body, and the blocks in its body
    outside functions): never idle. A class's names are read by whatever reads the class, as
    its attributes (`C.g`), by its metaclass or through `vars`, never as names: the fifty-seventh
    hub tester's answers were generator expressions stored in class bodies and taken by
    `next(C.g)`, each store cut as a name nobody reads, so a copy was paired with no one."""
    found = set()

    def visit(node, in_class):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, True)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, False)
            else:
                if in_class and isinstance(child, ast.Assign | ast.AugAssign | ast.AnnAssign):
                    found.add(id(child))
                visit(child, in_class)

    visit(tree, False)
    return found


def names_bound(trees):
    """The names the parsed `trees` bind: stores, parameters, imports, functions, classes,
    exception and pattern captures."""
    found = set()
    for tree in trees:
        if tree is None:
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                found.add(n.id)
            elif isinstance(n, ast.arg):
                found.add(n.arg)
            elif isinstance(n, ast.alias):
                found.add((n.asname or n.name).split(".")[0])
            elif (
                isinstance(
                    n,
                    ast.FunctionDef
                    | ast.AsyncFunctionDef
                    | ast.ClassDef
                    | ast.ExceptHandler
                    | ast.MatchAs
                    | ast.MatchStar,
                )
                and n.name
            ):
                found.add(n.name)
            elif isinstance(n, ast.MatchMapping) and n.rest:
                found.add(n.rest)
            elif isinstance(n, ast.Global | ast.Nonlocal):
                found.update(n.names)
    return found


def names_read(trees):
    """The names the parsed `trees` (None for a source that did not parse) read; an augmented
    assignment reads its target (`seen += [formula]` extends the list an alias of `seen`
    returns: the fifty-seventh hub tester's, cut as a store nothing read)."""
    return {
        n.id
        for tree in trees
        if tree is not None
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)
    } | {
        n.target.id
        for tree in trees
        if tree is not None
        for n in ast.walk(tree)
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
    }


LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def without_idle(sources, read_elsewhere=()):
    """`sources` (code cells) with their idle statements cut out (`idle`; the names read are
    read across all of them, and `read_elsewhere`: the release's tests read her answers by
    name); a source that does not parse is left as it is."""
    # a cell is read as the kernel runs it: IPython strips `>>> ` and `In [1]: ` prompts and a
    # common indent first. Her cell `>>> divmod, hash = Box(), Sym(...)` (no Python) or
    # `In [1]: divmod = Box()` (Python, an annotation of `In[1]` that binds nothing) bound
    # builtins' names in her kernel, and her formula written in them (`divmod << hash * hash
    # + ...`) was cut as idle (the sixtieth hub tester's). Such a cell is left as it is; the
    # names it binds and reads, as run, count.
    trees, as_run = _parsed(sources), []
    for index, (source, tree) in enumerate(zip(sources, trees, strict=True)):
        run = _parsed([submission_checks.python_source(source)])[0]
        if tree is None or run is None or ast.dump(tree) != ast.dump(run):
            trees[index] = None
        as_run.append(run or tree)
    read = set(read_elsewhere) | names_read(as_run)
    bound = names_bound(as_run) & PURE
    kept = []
    for source, tree in zip(sources, trees, strict=True):
        if tree is None:
            kept.append(source)
            continue
        # lines as Python's tokenizer ends them (not str.splitlines, which ends them at a form
        # feed too), and the AST's columns are UTF-8 bytes
        lines = LINES.findall(source)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))

        def at(lineno, col, lines=lines, starts=starts):
            head = lines[lineno - 1].encode("utf-8")[:col].decode("utf-8", "replace")
            return starts[lineno - 1] + len(head)

        kept_ids = _docstrings(tree) | class_stores(tree)
        spans = sorted(
            (at(n.lineno, n.col_offset), at(n.end_lineno, n.end_col_offset))
            for n in ast.walk(tree)
            if isinstance(n, ast.stmt) and id(n) not in kept_ids and idle(n, read, bound)
        )
        text, done = [], 0
        for start, end in spans:
            if start >= done:  # an idle statement is never inside another
                text.append(source[done:start])
                done = end
        text.append(source[done:])
        if spans:  # the lines the cut statements leave empty (or holding a `;`) go too
            lines = "".join(text).splitlines()
            source = "\n".join(line for line in lines if line.strip(" \t;"))
        kept.append(source)
    return kept


def kept_ids(nb):
    """The indices of the cells of `nb` whose grade id nbgrader keeps (DeduplicateIds): it walks
    the notebook from the end and strips the id of every cell marked graded, an answer or
    locked but the last of each id; a cell marked none of these keeps its id."""
    kept, marked = set(), set()
    for index in reversed(range(len(nb.cells))):
        cell = nb.cells[index]
        if not (
            submission_checks.is_grade(cell)
            or submission_checks.is_solution(cell)
            or submission_checks.is_locked(cell)
        ):
            kept.add(index)
        elif submission_checks.meta(cell).get("grade_id") not in marked:
            marked.add(submission_checks.meta(cell).get("grade_id"))
            kept.add(index)
    return kept


def answer_text(nb, release=None):
    """The student's code cells of a notebook, in order, each after a comment naming it.

    Without `release`, the notebook's own solution cells. With the released notebook, which
    cells are answers is the release's word, never the submission's metadata (a student may set
    her answer cells' `solution` to false; nbgrader still grades them by their grade ids): the
    cells whose grade id the release gives an answer cell, and every code cell the release does
    not hold, which grading runs as hers too: one without a grade id the release knows (a cell
    she added), or one whose id nbgrader strips (DeduplicateIds keeps the id of the *last*
    cell of an id marked graded, an answer or locked, from the notebook's end: a copy in a cell
    carrying a test's id, put before that test, ran as hers and was never read here, the
    fifty-third hub tester's). Skipped: each other cell that keeps one of the release's other
    ids, its setup and tests (locked: nbgrader puts the release's code back). An answer cell
    counts whatever type her notebook gives it: nbgrader gives it the release's type back and
    runs it (a copy in answer cells typed markdown or raw was graded in full and never read
    here, the same tester's)."""
    if release is not None:
        ids = [submission_checks.meta(c).get("grade_id") for c in release.cells]
        answers = {
            i for i, c in zip(ids, release.cells, strict=True) if submission_checks.is_solution(c)
        }
        known = {i for i in ids if isinstance(i, str)}
        kinds = {}  # each grade id's cell type in the release
        for i, c in zip(ids, release.cells, strict=True):
            if isinstance(i, str):
                kinds.setdefault(i, c.cell_type)
        kept = kept_ids(nb)
    parts = []
    for index, cell in enumerate(nb.cells):
        grade_id = submission_checks.meta(cell).get("grade_id")
        if release is None:
            if cell.get("cell_type") != "code" or not submission_checks.is_solution(cell):
                continue
        elif index in kept and isinstance(grade_id, str) and grade_id in known:
            # nbgrader gives the cell the release's type back (OverwriteCells) and runs it:
            # her answer cell typed markdown or raw is graded as code all the same
            if grade_id not in answers or kinds[grade_id] != "code":
                continue
        elif cell.get("cell_type") != "code":
            continue
        name = "?" if grade_id is None else str(grade_id)
        parts.append((plain(name), _source(cell)))
    # a name the release's code reads (a test reads her answer by its name) is read
    lab = () if release is None else _lab_reads(tuple(release_sources(release)))
    sources = without_idle([source for _, source in parts], lab)
    # each cell after a header line of its grade id, which `parts_alike` finds again: a line of
    # hers that reads as one (`# [answer-a]`, or an added cell's id holding a newline) took the
    # passages under it for that part, and the page named another answer than the copied one
    # (the sixty-fourth hub tester's); it is indented by a space (a comment still, shown so)
    return "\n".join(
        f"# [{name.replace(chr(10), ' ')}]\n{_no_header(source.rstrip())}\n"
        for (name, _), source in zip(parts, sources, strict=True)
    )


def _no_header(source):
    """`source` with each line that reads as a part's header indented by a space."""
    return HEADER.sub(lambda found: " " + found[0], source)


def _source(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def release_sources(nb):
    """The sources of the release's code cells."""
    return [_source(cell) for cell in nb.cells if cell.get("cell_type") == "code"]


@functools.lru_cache(maxsize=8)
def _lab_reads(sources):
    """The names the release's code cells (`sources`, a tuple) read: parsed once a class, not
    once a submission."""
    return frozenset(names_read(_parsed(sources)))


def _parsed(sources):
    trees = []
    for source in sources:
        try:
            trees.append(ast.parse(source))
        except (SyntaxError, ValueError):
            trees.append(None)
    return trees


def release_text(nb):
    """Every code cell of the release: starter code, setup and tests are all boilerplate."""
    return "\n\n".join(without_idle(release_sources(nb)))


def starter_texts(release):
    """Boilerplate: every code cell of the release, and its answer cells joined as a
    submission's are (so that the seams between answer cells are the release's too)."""
    return (release_text(release), answer_text(release, release))


def notebook_of(folder, lab):
    """The lab's notebook in a student's folder: LAB.ipynb, or the only notebook there."""
    named = folder / f"{lab}.ipynb"
    if named.is_file() and not named.is_symlink():
        return named
    found = [p for p in folder.glob("*.ipynb") if p.is_file() and not p.is_symlink()]
    if len(found) == 1:
        return found[0]
    raise ValueError("no notebook" if not found else f"{len(found)} notebooks and none named")


def read_class(lab, grading=GRADING):
    """(release texts, {student: answer text}, {student: why it was not read, or only in
    part}): the release's
    code cells joined, and its answer cells joined as a submission's are (both boilerplate)."""
    grading = Path(grading)
    root = grading.parent
    release = root / "labs" / lab / f"{lab}.ipynb"
    if not release.is_file():
        raise ValueError(f"no released notebook {release}: run `make release LAB={lab}`")
    released = nbformat.read(release, as_version=4)
    starter = starter_texts(released)
    submitted = grading / "submitted"
    folders = sorted(p / lab for p in submitted.glob("*") if (p / lab).is_dir())
    if not folders:
        raise ValueError(f"no submissions of {lab}: nothing in {submitted}/<student>/{lab}/")
    texts, problems = {}, {}
    for folder in folders:
        student = folder.parent.name
        try:
            nb = nbformat.read(notebook_of(folder, lab), as_version=4)
            texts[student] = answer_text(nb, released)
            if len(texts[student]) > MAX_CHARS:
                problems[student] = (
                    f"only the first {MAX_CHARS:,} characters compared: its answer cells "
                    f"hold {len(texts[student]):,}"
                )
                texts[student] = texts[student][:MAX_CHARS]
        except Exception as error:  # noqa: BLE001 (a broken submission is reported, never fatal)
            problems[student] = f"not read: {type(error).__name__}: {error}"[:300]
    return starter, texts, problems


# ------------------------------------------------------------------------------ matching


def fingerprint(text, boilerplate=None, win_size=1):
    from copydetect import CodeFingerprint

    class Source:  # copydetect reads the code from a file object
        def read(self):
            return text

    return CodeFingerprint(
        "answer.py", K, win_size, boilerplate=boilerplate, language="python", fp=Source()
    )


def rarity_weights(counts, n):
    """Weight of a fingerprint held by `counts` of n submissions: log2(n / (2 count)), zero
    from half the class up."""
    return np.maximum(0.0, np.log2(n / (2.0 * np.maximum(counts, 1))))


def match(starter, texts):
    """Fingerprint every submission (less the fingerprints of the texts in `starter`, the
    release's code) and score every pair. Returns (submissions, pairs, df): pairs sorted by
    score, highest first; df maps a fingerprint to how many submissions hold it."""
    boilerplate = set()
    for text in starter:
        boilerplate |= fingerprint(text).hashes
    boilerplate = np.array(sorted(boilerplate), dtype=np.int64)
    subs = {}
    for student, text in texts.items():
        fp = fingerprint(text, boilerplate)
        subs[student] = Submission(student, text, fp, set(fp.hashes))
    n = len(subs)
    df = Counter(h for sub in subs.values() for h in sub.hashes)
    for sub in subs.values():
        counts = np.array([df[h] for h in sub.hashes], dtype=np.float64)
        sub.weight = float(rarity_weights(counts, n).sum()) if len(counts) else 0.0
    # Only fingerprints that two or more hold can be shared: the matrix has those alone, so a
    # huge submission of its own code costs no memory here.
    shareable = sorted(h for h, count in df.items() if count > 1)
    index = {h: i for i, h in enumerate(shareable)}
    students = sorted(s for s in subs if subs[s].weight > 0)
    held = np.zeros((len(students), len(index)), dtype=np.float32)
    for row, student in enumerate(students):
        held[row, [index[h] for h in subs[student].hashes if h in index]] = 1.0
    weights = rarity_weights(np.array([df[h] for h in shareable], dtype=np.float64), n)
    weights = weights.astype(np.float32)
    shared_weight = (held * weights) @ held.T
    weighted = held * (weights > 0)
    shared_count = weighted @ weighted.T
    shared_plain = held @ held.T
    pairs = []
    for i in range(len(students)):
        for j in range(i + 1, len(students)):
            if shared_weight[i, j] <= 0:
                continue
            a, b = subs[students[i]], subs[students[j]]
            common = a.hashes & b.hashes
            pairs.append(
                Pair(
                    a.student,
                    b.student,
                    float(shared_weight[i, j] / min(a.weight, b.weight)),
                    float(shared_weight[i, j]),
                    float(shared_plain[i, j] / min(len(a.hashes), len(b.hashes))),
                    int(shared_count[i, j]),
                    min((df[h] for h in common if 2 * df[h] < n), default=n),
                )
            )
    pairs.sort(key=lambda p: (-p.score, -p.shared_weight, p.a, p.b))
    return subs, pairs, df


def clusters(pairs, threshold):
    """Groups of students linked by pairs at or above the threshold, largest first."""
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in pairs:
        if p.score >= threshold:
            parent[find(p.a)] = find(p.b)
    groups = {}
    for x in parent:
        groups.setdefault(find(x), []).append(x)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g))


def passages(sub, common, df):
    """Shared passages of one submission as (start, end, fewest holders) in its raw text."""
    from copydetect.utils import get_copied_slices

    fp = sub.fingerprint
    spans = []
    for h in common:
        for i in fp.hash_idx.get(h, []):
            spans.append((int(i), df[h]))
    if not spans:
        return []
    starts = np.array([i for i, _ in spans])
    slices = get_copied_slices(starts, fp.k)
    raw = slices.copy()
    if len(fp.offsets) > 0:
        raw = (
            raw
            + fp.offsets[:, 1][
                np.clip(np.searchsorted(fp.offsets[:, 0], raw), 0, fp.offsets.shape[0] - 1)
            ]
        )
    found = []
    for (s, e), (rs, re_) in zip(slices.T, raw.T, strict=True):
        fewest = min(c for i, c in spans if s <= i < e)
        found.append((int(rs), int(re_), fewest))
    return found


# ------------------------------------------------------------------------------ writing


def esc(value):
    return html.escape(plain("" if value is None else str(value)), quote=True)


def code_esc(text):
    """Code as text: control characters out (tab and newline kept), then escaped."""
    return html.escape(plain(text), quote=True)


HEADER = re.compile(r"^# \[(.*)\]$", re.MULTILINE)


def parts_alike(text, spans):
    """{grade_id: share of that answer cell's characters inside shared passages}."""
    heads = list(HEADER.finditer(text))
    found = {}
    for i, head in enumerate(heads):
        start, end = head.end(), heads[i + 1].start() if i + 1 < len(heads) else len(text)
        code = sum(1 for c in text[start:end] if not c.isspace())
        inside = sum(
            1 for s, e, _ in spans for c in text[max(s, start) : min(e, end)] if not c.isspace()
        )
        if code:
            found[head.group(1)] = min(1.0, inside / code)
    return found


def marked(text, spans, n):
    out, at = [], 0
    for start, end, fewest in sorted(spans):
        start = max(start, at)
        if end <= start:
            continue
        out.append(code_esc(text[at:start]))
        out.append(
            f"<mark title='shared; its rarest part is in {fewest} of {n} submissions'>"
            f"{code_esc(text[start:end])}</mark>"
        )
        at = end
    out.append(code_esc(text[at:]))
    return "".join(out)


def pair_rows(pairs):
    return [
        (
            p.a,
            p.b,
            round(p.score, 4),
            round(p.shared_weight, 2),
            round(p.plain_share, 4),
            p.shared,
            p.rarest,
        )
        for p in pairs
    ]


COLUMNS = ("student", "other", "score", "shared_weight", "plain_share", "shared", "rarest")


def similarity_page(lab, subs, pairs, df, problems, threshold):
    from grading.instructor.class_report import page

    n = len(subs)
    linked = [p for p in pairs if p.score >= threshold]
    groups = clusters(pairs, threshold)
    out = [f"<h1>{esc(lab)}: answer code that submissions share</h1>"]
    out.append(
        "<p><strong>Similarity is evidence for a person to read, never a verdict.</strong> "
        "Short formulas converge, students may have worked together where the course allows "
        "it, and a shared source (a lesson, a book, a forum answer) makes honest answers "
        "alike. Read both notebooks, and talk with the students, before concluding anything. "
        "This page is for the instructor: nothing of it reaches students, the feedback or the "
        "gradebook.</p>"
    )
    out.append(
        "<p class='note'>What is compared: each submission's answer cells only (nbgrader's "
        "solution cells); the release's starter code, setup and tests count for no one. Names, "
        "layout and comments are ignored, so renaming and reformatting hide nothing, and so "
        "are statements that do nothing (<code>pass</code>, an expression that calls no "
        "function, a value stored in a name nothing reads), which the code below leaves out. Each "
        "shared passage is weighted by how rare it is in the class: a passage in d of the "
        f"{n} submissions weighs log2({n}/(2d)), and nothing when half the class or more "
        "writes it. A pair's <em>score</em> is the weight the two share divided by the weight "
        "of the smaller one: 1 means all of its distinctive code is in the other. "
        "<em>Plain share</em> is the same without weights (copydetect's own measure), "
        "<em>rarest</em> the fewest submissions that hold one of the shared passages.</p>"
    )
    out.append(
        "<table><tr><th>submissions read</th><th>not read, or in part</th><th>pairs compared</th>"
        f"<th>pairs at or above {esc(threshold)}</th><th>clusters</th></tr><tr>"
        f"<td class='n'>{n}</td><td class='n'>{len(problems)}</td>"
        f"<td class='n'>{n * (n - 1) // 2}</td><td class='n'>{len(linked)}</td>"
        f"<td class='n'>{sum(len(g) > 1 for g in groups)}</td></tr></table>"
    )
    out.append("<h2>Clusters</h2>")
    if groups:
        out.append("<p class='note'>Students linked by pairs at or above the threshold.</p><ul>")
        for g in groups:
            out.append(f"<li>{esc(', '.join(g))}</li>")
        out.append("</ul>")
    else:
        out.append(f"<p>No pair scores {esc(threshold)} or more.</p>")
    out.append(
        "<h2>Pairs, highest score first</h2><table class='sortable'><thead><tr><th>#</th>"
        "<th>student</th><th>student</th><th>score</th><th>shared weight</th>"
        "<th>plain share</th><th>shared passages</th><th>rarest (of "
        f"{n})</th></tr></thead><tbody>"
    )
    for rank, p in enumerate(pairs[: max(SHOWN, len(linked))], 1):
        out.append(
            f"<tr><td class='n'>{rank}</td><td>{esc(p.a)}</td><td>{esc(p.b)}</td>"
            f"<td class='n'>{p.score:.2f}</td><td class='n'>{p.shared_weight:.1f}</td>"
            f"<td class='n'>{p.plain_share:.2f}</td><td class='n'>{p.shared}</td>"
            f"<td class='n'>{p.rarest}</td></tr>"
        )
    out.append("</tbody></table>")
    out.append(
        "<h2>Side by side</h2><p class='note'>Marked: passages the two share that weigh "
        "something (fewer than half the class writes them); hover a mark for how many "
        "submissions hold it.</p>"
    )
    for rank, p in enumerate(pairs[:SHOWN], 1):
        a, b = subs[p.a], subs[p.b]
        common = {h for h in a.hashes & b.hashes if 2 * df[h] < n}
        left, right = passages(a, common, df), passages(b, common, df)
        alike = sorted(parts_alike(a.text, left).items(), key=lambda kv: (-kv[1], kv[0]))
        why = (
            f"score {p.score:.2f}: {p.shared} shared passages, the rarest in {p.rarest} of "
            f"{n} submissions; without weights they share {p.plain_share:.0%}. Marked, of "
            f"{p.a}'s answers: " + ", ".join(f"{grade_id} {share:.0%}" for grade_id, share in alike)
        )
        out.append(
            f"<details{' open' if rank <= 3 else ''}><summary>#{rank} {esc(p.a)} and "
            f"{esc(p.b)}: {esc(why)}</summary><table><tr><th>{esc(p.a)}</th>"
            f"<th>{esc(p.b)}</th></tr><tr>"
            f"<td><pre>{marked(a.text, left, n)}</pre></td>"
            f"<td><pre>{marked(b.text, right, n)}</pre></td>"
            "</tr></table></details>"
        )
    if problems:
        out.append(
            "<h2>Not compared, or only in part</h2><table><tr><th>student</th><th>why</th></tr>"
        )
        for student, why in sorted(problems.items()):
            out.append(f"<tr><td>{esc(student)}</td><td>{esc(why)}</td></tr>")
        out.append("</table>")
    out.append(
        f"<p class='note'>Every pair with a score above zero: {esc(lab)}-similarity.csv, "
        "beside this page. Built by grading/instructor/similarity.py on copydetect's "
        "fingerprints.</p>"
    )
    return page(f"{lab}: similar answer code", "\n".join(out))


def analyse(lab, grading=GRADING):
    starter, texts, problems = read_class(lab, grading)
    subs, pairs, df = match(starter, texts)
    return subs, pairs, df, problems


def build(lab, grading=GRADING, out=None, threshold=THRESHOLD):
    """Write the lab's similarity page and CSV; return (page path, pairs, problems)."""
    grading = Path(grading)
    out = Path(out or grading / "reports")
    subs, pairs, df, problems = analyse(lab, grading)
    out.mkdir(parents=True, exist_ok=True)
    page_path = out / f"{lab}-similarity.html"
    page_path.write_text(similarity_page(lab, subs, pairs, df, problems, threshold))
    csvout.write(out / f"{lab}-similarity.csv", [COLUMNS, *pair_rows(pairs)])
    return page_path, pairs, problems


def section(lab, grading=GRADING, out=None, threshold=THRESHOLD, top=5):
    """The class report's section on similar code: writes the similarity page beside the lab's
    page and returns a short summary that links to it (or says why there is none)."""
    head = "<h2>Similar answer code</h2>"
    try:
        path, pairs, problems = build(lab, grading, out, threshold)
    except ValueError as error:
        return f"{head}<p class='note'>Not built: {esc(error)}</p>"
    linked = [p for p in pairs if p.score >= threshold]
    listed = "".join(
        f"<li>{esc(p.a)} and {esc(p.b)}: score {p.score:.2f}, rarest shared passage in "
        f"{p.rarest} submissions</li>"
        for p in pairs[:top]
    )
    return (
        f"{head}<p>{len(linked)} pairs of submissions score {esc(threshold)} or more on "
        f"shared answer code (passages weighted by rarity in the class; starter code, setup "
        f"and tests never count); {len(problems)} could not be read, or only in part. "
        f"Similarity is evidence "
        f"for a person to read, never a verdict: <a href='{esc(path.name)}'>the pairs side by "
        f"side</a>.</p><ul>{listed}</ul>"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lab", help="the lab, such as LM10-L2")
    parser.add_argument("--grading", type=Path, default=GRADING, help="the course's grading folder")
    parser.add_argument(
        "--threshold", type=float, default=THRESHOLD, help="score that links a pair (0 to 1)"
    )
    args = parser.parse_args(argv)
    start = time.monotonic()
    try:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", args.lab):
            raise ValueError(f"lab must be a folder name such as LM10-L2, got {args.lab!r}")
        if not 0 < args.threshold <= 1 or not math.isfinite(args.threshold):
            raise ValueError(f"threshold must be above 0 and at most 1, got {args.threshold}")
        path, pairs, problems = build(args.lab, args.grading.resolve(), threshold=args.threshold)
    except ValueError as error:
        parser.exit(2, f"similarity: {error}\n")
    linked = sum(p.score >= args.threshold for p in pairs)
    print(f"wrote {path}: {linked} pairs at or above {args.threshold}, {len(problems)} not read")
    print(f"built in {time.monotonic() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
