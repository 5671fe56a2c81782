"""The course's grading steps around nbgrader 0.9.6, installed by nbgrader_config.py.

`SandboxedExecute` replaces nbgrader's `Execute` in autograding. The student's cells run in a
sandbox (grading/host/sandbox.py); the test cells never do. The sandbox meets each test cell as an
empty marker and waits while the grader runs the test's source, from the gradebook, in a
trusted process (trusted_tests.py) whose calls of the student's functions come back into the
sandbox as calls and leave it as plain data. The test cells' outputs are the trusted
process's; of the student's cells the grader keeps only the outputs of the cells it sent,
checked and size-capped. nbgrader's own preprocessors then score those outputs and write the
gradebook, outside the sandbox. Text a cell writes to stderr (warnings, logging) stays
visible but is moved to stdout with a note, so it never costs points. What it found
(suspicious constructs, cells stopped, stderr, whether the run was isolated) is kept as a
`results.Notes`, which the batch's worker takes with `take_notes()` for the report.

`StripHiddenTests` removes hidden tests from the feedback, every output line of any cell that
quotes one, and the outputs of the student's cells that ran after a hidden test had called
their code (they could print its inputs).

`StripHiddenTests` keeps hidden tests out of the feedback students receive. nbgrader 0.9.6
puts the hidden tests back into every autograded notebook (OverwriteCells restores test cells
from the gradebook) and `generate_feedback` renders that notebook as it is, so by default the
feedback HTML shows the hidden tests and the tracebacks of the ones that failed. This
preprocessor runs inside `generate_feedback`: it deletes the hidden region from each test cell
and replaces an error raised inside that region by a neutral message, so the student learns
that a hidden test failed but not what it checked.

`DeduplicateIds` lets autograding survive a cell that a student duplicated. nbgrader keeps the
last cell with a given grade_id and empties the nbgrader metadata of the others (`{}`); with
`OverwriteCells.add_missing_cells` on, OverwriteCells then reads `grade_id` from that empty
metadata and the whole submission fails with `KeyError: 'grade_id'`. This version removes the
emptied metadata instead, so the copies become ordinary cells.
"""

import json
import os
import re
import time

import nbformat
from lmcourse import offlimits, slips
from nbformat.v4 import new_code_cell, new_output
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests, Execute
from nbgrader.preprocessors import DeduplicateIds as NbgraderDeduplicateIds
from nbgrader.preprocessors import OverwriteCells as NbgraderOverwriteCells
from traitlets import Integer

from grading.batch.results import Notes, room_flag
from grading.host import room, sandbox, submission_checks, trusted_tests
from grading.in_sandbox import sandbox_exec

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CELL_LINE = re.compile(r"(?:Cell In\s*\[\d*\]|<ipython-input-[^>]*>), line (\d+)")
# A frame of an IPython traceback (the trusted process's): a test cell's or a library's
FRAME = re.compile(r"(?:Cell In\s*\[\d*\], line \d+|File \S)")
CONTEXT_LINE = re.compile(r"^\s*(?:-*>\s*)?(\d+)\s")  # a numbered source line in a frame
# Written by the grader, nothing hidden in them, where the cell's mark says the grader wrote it
# (FEEDBACK_MARK "stopped"): the student's code may raise errors of these names too.
GRADER_ERRORS = ("NotRun", "CellTimeoutError")
QUOTE_REMOVED = "[line removed by the grader: it quotes a hidden test]"
AFTER_HIDDEN = (
    "[outputs not shown in feedback: this cell ran after a hidden test had called your code, "
    "and they could show the hidden test's inputs]\n"
)
AFTER_HIDDEN_TEXT = (
    "[the rest of this output is not shown in feedback: it came after a hidden test had "
    "called your code, and could show the hidden test's inputs]\n"
)
AFTER_HIDDEN_ERROR = (
    "This visible check failed after a hidden test had called your code, so its message (which "
    "shows values your code computed) is not shown, nor the line of the test it failed at "
    "(your code's values chose it). Validate shows both."
)
AFTER_HIDDEN_STOP = (
    "The grader stopped this test, or an earlier cell, after a hidden test had called your "
    "code, so why (the kernel ending, an interrupt ignored) is not shown: your code's "
    "values could choose it. The instructor's notebook says why."
)
# Cell metadata the grader writes into the autograded notebook (SandboxedExecute): what of the
# cell's outputs came before any hidden input reached the student's code, {"stdout": characters
# of printed text (None: all), "error": whether its error}. StripHiddenTests shows only that.
FEEDBACK_MARK = "lm10_feedback"
HIDDEN_MESSAGE = (
    "A hidden test failed: it checks your answer on inputs that are not shown in the notebook."
)


# After a hidden input, feedback lists the part's catalogued slips instead of naming one
# (with_slips).
HIDDEN_SLIPS = (
    "The common slips of this part (after a hidden input, feedback does not say whether your "
    "answer made one of them, or which: that would show something of the input):"
)


def hidden_line_numbers(source, begin, end):
    """1-based numbers of the lines from `begin` to `end` delimiter, both included."""
    numbers, inside = set(), False
    for number, line in enumerate(source.split("\n"), start=1):
        if begin in line:
            inside = True
        if inside:
            numbers.add(number)
        if end in line:
            inside = False
    return numbers


def plain_error(ename, evalue):
    """An error output of the grader's own words: its traceback is the one line it says."""
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def shown_name(ename):
    """The exception's name as feedback may show it after a hidden input reached the
    student's code: a failed check (AssertionError) as it is, any other as "Error". The
    student's code chose that exception, and which of Python's dozens of names it chose could
    spell bits of the hidden input (a hidden width modulo 4 as one of four names); that a check
    failed is one bit, which the score shows anyway."""
    return "AssertionError" if ename == "AssertionError" else "Error"


def neutral_error(output):
    return plain_error(shown_name(output.ename), HIDDEN_MESSAGE)


def scrub_error(output, hidden):
    """An error output of a test cell, with nothing of the `hidden` lines left in it.

    An error raised on a hidden line becomes a neutral message. Otherwise the traceback is kept,
    but the test cell's frame loses the hidden lines IPython shows as context around the line
    that raised ("     12 source" and "---> 12 source").
    """
    for index, entry in enumerate(output.get("traceback", [])):
        plain = ANSI.sub("", entry)
        found = CELL_LINE.search(plain)  # the first frame is the test cell itself
        if not found:
            continue
        if int(found.group(1)) in hidden:
            return neutral_error(output)
        kept = [
            line
            for line, bare in zip(entry.split("\n"), plain.split("\n"), strict=True)
            if not (numbered := CONTEXT_LINE.match(bare)) or int(numbered[1]) not in hidden
        ]
        traceback = list(output.traceback)
        traceback[index] = "\n".join(kept)
        return new_output("error", ename=output.ename, evalue=output.evalue, traceback=traceback)
    return neutral_error(output)  # origin unknown: assume the worst


def with_slips(scrubbed, part):
    """A neutral error (a hidden test failed, or a visible one after a hidden input) with every
    slip catalogued for its part listed, the same list whatever the student's value was.

    Which slip, if any, the value matched was decided by code that had met a hidden input: naming
    that one would hand a choice of the code back to the student (a bit or two of the input per
    failing part). The list is fixed text of the catalogue, so it tells nothing; the autograded
    notebook, which only the instructor reads, keeps the slip the test named."""
    if scrubbed.evalue != HIDDEN_MESSAGE and scrubbed.evalue != AFTER_HIDDEN_ERROR:
        return scrubbed  # the message was kept whole, hints and all
    known = sorted(slips.sentences(part))
    if not known:
        return scrubbed
    return plain_error(
        scrubbed.ename, scrubbed.evalue + f"\n{HIDDEN_SLIPS}" + "".join(f"\n- {s}" for s in known)
    )


class StripHiddenTests(ClearHiddenTests):
    """Remove hidden tests, and every trace of them in errors, from autograded test cells, and
    every output line that quotes a hidden test line from any cell."""

    def preprocess(self, nb, resources):
        hidden, visible, after_hidden = set(), set(), False
        lm10 = nb.metadata.get("lm10")
        marked = isinstance(lm10, dict) and lm10.get("feedback") == "marked"
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            numbers = hidden_line_numbers(
                cell.source, self.begin_test_delimeter, self.end_test_delimeter
            )
            # What of the cell's outputs came before the student's code met a hidden input:
            # the grader's mark, or (a notebook graded without the marks) the cautious guess
            # that nothing did after a test with hidden lines.
            mark = cell.metadata.pop(FEEDBACK_MARK, None) if marked else None
            if not isinstance(mark, dict):
                mark = {"stdout": 0, "error": False} if after_hidden else {}
            cell.metadata["lm10_shown"] = mark
            if submission_checks.is_test(cell):
                after_hidden = after_hidden or bool(numbers)
            elif mark.get("stdout") is not None and cell.source.strip():
                # The student's code had seen a hidden test's inputs (its calls) when this cell
                # ran, and its outputs could show them: the instructor sees them, the student
                # does not. The note stands on every such cell that has code (nbclient runs
                # those alone), whether or not it printed: the note on those that printed and
                # none on the others spelt a hidden input a cell a bit (the sixty-seventh hub
                # tester)
                cell.outputs = [new_output("stream", name="stdout", text=AFTER_HIDDEN)]
                # and its count, which said whether it ran: a stop her code chose after the
                # last test (the kernel ended in the k-th of her N later cells) was spelt by
                # which cells had a count, log2(N) bits of a hidden input for no mark (the
                # seventy-ninth hub tester)
                cell.execution_count = None
            for number, line in enumerate(cell.source.split("\n"), start=1):
                (hidden if number in numbers else visible).add(line.strip())
        self.leaks = {
            line
            for line in hidden - visible
            if len(line) >= 12
            and self.begin_test_delimeter not in line
            and self.end_test_delimeter not in line
        }
        nb, resources = super().preprocess(nb, resources)
        for cell in nb.cells:
            if cell.cell_type == "code" and submission_checks.is_test(cell):
                cell.outputs = [self.scrub_quotes(o) for o in cell.outputs]
        return nb, resources

    def scrub_quotes(self, output):
        """The output of a test cell with every line of its traceback's frames (the trusted
        process's, IPython's source lines around each line that ran) that quotes a hidden
        line replaced by a note. Only those: the hidden tests' source never enters the
        sandbox, so her cells, her printed text and her error's message and trace hold it
        only where she guessed it, and a line of hers replaced for matching a hidden line
        told her the guess was right (her answer cell printing `assert f(n) == 2n` for a
        hundred n: the line removed spelt the hidden input; the seventy-second hub tester)."""

        def clean(text):
            if not isinstance(text, str) or not any(leak in text for leak in self.leaks):
                return text
            if not FRAME.match(ANSI.sub("", text).lstrip()):
                return text  # not a frame of the grader's: hers, or the error's message
            return "\n".join(
                QUOTE_REMOVED if any(leak in line for leak in self.leaks) else line
                for line in text.split("\n")
            )

        if "traceback" in output:
            output.traceback = [clean(line) for line in output.traceback]
        return output

    def preprocess_cell(self, cell, resources, cell_index):
        mark = cell.metadata.pop("lm10_shown", {}) if cell.cell_type == "code" else {}
        if cell.cell_type != "code" or not utils.is_grade(cell):
            return cell, resources
        hidden = hidden_line_numbers(
            cell.source, self.begin_test_delimeter, self.end_test_delimeter
        )
        if hidden:
            cell, resources = super().preprocess_cell(cell, resources, cell_index)
        part = submission_checks.meta(cell).get("grade_id", "")
        # The grader's OffLimitsError names a reference the test declares, in fixed words:
        # nothing of a hidden input is in it, and the student needs to read which it was.
        stopped = {
            offlimits.message(n) for n in offlimits.declared(cell.source) + list(offlimits.STOPS)
        }
        shown_chars = mark.get("stdout")
        outputs = []
        for output in cell.outputs:
            if output.output_type == "stream" and shown_chars is not None:
                text = output.text if isinstance(output.text, str) else "".join(output.text)
                if len(text) > shown_chars:
                    output.text = text[:shown_chars] + AFTER_HIDDEN_TEXT
                shown_chars = max(0, shown_chars - len(text))
                outputs.append(output)
            elif output.output_type != "error":
                outputs.append(output)
            elif output.ename in GRADER_ERRORS and mark.get("stopped") is True:
                # the grader's words; of its traceback, nothing of the hidden lines (nor which
                # one her code was stopped at: her code chose it, after meeting their inputs)
                scrubbed = scrub_error(output, hidden) if hidden else output
                if scrubbed.evalue == HIDDEN_MESSAGE:
                    scrubbed = plain_error(output.ename, output.evalue)
                if output.ename == "NotRun" and mark.get("error", True) is False:
                    # after a hidden input, why the grader stopped (the kernel dying, the
                    # interrupt ignored) was her values' choice, on this test and every later
                    # one (the seventy-sixth hub tester): fixed words. A CellTimeoutError's
                    # are fixed already (the time limit)
                    scrubbed = plain_error("NotRun", AFTER_HIDDEN_STOP)
                outputs.append(scrubbed)
            elif output.ename == "OffLimitsError" and output.get("evalue") in stopped:
                if mark.get("error", True) is False:
                    # after a hidden input, whether her code called a declared reference and
                    # which (a test declares several, and every test sys.setprofile, which
                    # recursing to the limit names) were her values' choice: three names for
                    # one hidden input, nothing flagged (the seventy-fourth hub tester). It
                    # reads as any error of hers there does
                    outputs.append(
                        with_slips(
                            neutral_error(output) if hidden else after_hidden_error(output), part
                        )
                    )
                else:
                    outputs.append(plain_error(output.ename, output.evalue))
            else:
                scrubbed = scrub_error(output, hidden) if hidden else output
                if mark.get("error", True) is False and scrubbed.evalue != HIDDEN_MESSAGE:
                    scrubbed = after_hidden_error(scrubbed)
                outputs.append(with_slips(scrubbed, part))
        cell.outputs = outputs
        return cell, resources


def after_hidden_error(scrubbed):
    """A visible check's error raised after the student's code met a hidden input: its
    message carries values that code computed, and the line of the test it failed at is the
    one those values chose (a later part's answer failing the test's first, second or third
    assert as bits of the hidden input pick: the seventy-second hub tester), so neither is
    named: fixed words."""
    return plain_error(shown_name(scrubbed.ename), AFTER_HIDDEN_ERROR)


class DeduplicateIds(NbgraderDeduplicateIds):
    """nbgrader's DeduplicateIds, leaving the repeated cells without nbgrader metadata, and
    cells whose nbgrader metadata is not a mapping (a string, a list) as ordinary cells: every
    later step of nbgrader calls `.get` on it and the whole submission would fail."""

    def preprocess_cell(self, cell, resources, cell_index):
        if not isinstance(cell.get("metadata"), dict):
            cell.metadata = nbformat.NotebookNode()
        if "nbgrader" in cell.metadata and not isinstance(cell.metadata["nbgrader"], dict):
            del cell.metadata["nbgrader"]
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if cell.metadata.get("nbgrader") == {}:
            del cell.metadata["nbgrader"]
        return cell, resources


class OverwriteCells(NbgraderOverwriteCells):
    """nbgrader's OverwriteCells, leaving a cell whose nbgrader metadata names no grade id the
    gradebook knows (a cell pasted from another lab, or metadata without an id) as an ordinary
    cell. nbgrader removes an unknown id but keeps the rest of the metadata, then looks every
    cell's id up when it puts missing cells back (`add_missing_task_cells`): a KeyError that
    failed the whole submission."""

    def preprocess_cell(self, cell, resources, cell_index):
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        nbgrader = cell.metadata.get("nbgrader")
        if isinstance(nbgrader, dict) and "grade_id" not in nbgrader:
            del cell.metadata["nbgrader"]
        return cell, resources


STDERR_NOTE = "[written to stderr: shown here, never costs points]\n"
KEEP_MIME = ("text/plain", "image/png", "image/jpeg")  # no HTML or script from student code


class SandboxError(RuntimeError):
    pass


def clean_output(raw, limit):
    """A checked copy of one output the sandbox returned, or None to drop it."""
    if not isinstance(raw, dict):
        return None

    def text(value):
        value = "".join(map(str, value)) if isinstance(value, list) else str(value)
        return value if len(value) <= limit else value[:limit] + "\n[output cut by the grader]\n"

    kind = raw.get("output_type")
    if kind == "stream":
        name = raw.get("name") if raw.get("name") in ("stdout", "stderr") else "stdout"
        return new_output("stream", name=name, text=text(raw.get("text", "")))
    if kind == "error":
        trace = raw.get("traceback") if isinstance(raw.get("traceback"), list) else []
        return new_output(
            "error",
            ename=text(raw.get("ename", "Error"))[:200],
            evalue=text(raw.get("evalue", "")),
            traceback=[text(line) for line in trace[:200]],
        )
    if kind in ("display_data", "execute_result"):
        data = raw.get("data") if isinstance(raw.get("data"), dict) else {}
        data = {k: text(v) for k, v in data.items() if k in KEEP_MIME}
        if not data:
            return None
        if kind == "execute_result":
            count = raw.get("execution_count")
            return new_output(
                kind, data=data, execution_count=count if isinstance(count, int) else None
            )
        return new_output(kind, data=data)
    return None


_notes = None  # the Notes of the submission this process ran last (one at a time)


def take_notes():
    """The Notes of the last submission SandboxedExecute ran in this process (None if it ran
    none since the last call), as far as it got: a run that failed midway keeps its flags."""
    global _notes
    notes, _notes = _notes, None
    return notes


def release_notebook(config, resources):
    """The released notebook of the lab being graded (labs/<lab>/<notebook>.ipynb): its setup
    cells are what the trusted process runs, its answer cells name the student's values."""
    from nbgrader.coursedir import CourseDirectory

    info = resources.get("nbgrader", {})
    coursedir = CourseDirectory(config=config)
    folder = coursedir.format_path(coursedir.release_directory, ".", info.get("assignment"))
    path = os.path.join(folder, f"{info.get('notebook')}.ipynb")
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError) as error:
        raise SandboxError(
            f"the released notebook {path} is not readable ({type(error).__name__}): run "
            f"`make release LAB={info.get('assignment')}`"
        ) from None


def trusted_parts(release):
    """(setup sources, names) of a released notebook: the locked cells that are neither
    answers nor tests, in order, and every top-level name an answer cell binds."""
    setup = [c.source for c in release.cells if submission_checks.is_setup(c)]
    students = set()
    for cell in release.cells:
        if cell.cell_type == "code" and submission_checks.is_solution(cell):
            tree = submission_checks.parse(cell.source)
            students |= submission_checks.bound_names(tree) if tree else set()
    return setup, students


def not_run(reason):
    return plain_error("NotRun", reason)


def read_by_checks(source):
    """Whether submission_checks.parse reads the cell. A cell nested past what Python's parser
    builds (`a.b.b...`, 200,000 deep) raised RecursionError in parse here, after the checks
    had flagged it (TOO_DEEP), and her grading stopped with it (the eighty-first hub tester):
    such a cell is unread, as a syntax error is."""
    try:
        return submission_checks.parse(source) is not None
    except (RecursionError, MemoryError):
        return False


def unread(source):
    """What the sandbox runs in place of a cell the checks could not read as Python
    (submission_checks.parse): the SyntaxError Python gives it, raised, with its line. Only
    cells the checks read run in her kernel: a cell they took for a syntax error (no flag) but
    the kernel read otherwise ran unread, `import sys` and the agent's guard switched off in it
    (barry_as_FLUFL's `<>`, the seventy-ninth hub tester); the next such difference between
    the checks and IPython is a SyntaxError, never a route. A typo's feedback reads as
    Python's."""
    # where Python reads it and the checks did not (a limit of theirs), or Python's own
    # compiler fails too (nested too deep), said as such
    kind, message = "SyntaxError", "the grader could not read this cell"
    where = ("<cell>", 1, 1, "")
    try:
        compile(submission_checks.python_source(source), "<cell>", "exec", dont_inherit=True)
    except SyntaxError as error:  # IndentationError, TabError among them
        kind, message = type(error).__name__, error.msg
        where = ("<cell>", error.lineno, error.offset, error.text)
    except ValueError as error:  # null bytes
        message = str(error)
    except (RecursionError, MemoryError):
        pass
    return f"raise {kind}({message!r}, {where!r})\n"


class SandboxedExecute(Execute):
    """nbgrader's Execute, with the student's code run in grading/host/sandbox.py and the tests
    run outside it (trusted_tests.py)."""

    total_timeout = Integer(
        900, help="Seconds the whole notebook may run in the sandbox before it is stopped."
    ).tag(config=True)

    @property
    def output_chars(self) -> int:
        """Characters kept of each output:
        c.SandboxLimits.output_chars (grading/host/sandbox.py)."""
        return sandbox.SandboxLimits(config=self.config).output_chars

    def furnish(self, prepared, setup, names, tested):
        """Replace the setup cells of the notebook the sandbox runs by the room's (grading/
        room.py): the imports it may hold, then, in the first, the plain copies of the other
        names it declares, made by the trusted process, which ran the real setup."""
        try:
            sources, shipped = room.sandbox_setup(setup, names)
            helpers = room.answered(setup)
        except room.RoomError as error:
            raise SandboxError(f"the lab's room: {error}") from None
        cells = [c for c in prepared.cells if submission_checks.is_setup(c)]
        if len(cells) != len(sources):
            raise SandboxError(
                f"the submission has {len(cells)} setup cells, the release {len(sources)}"
            )
        payload = tested.plain(shipped) if shipped else None
        for cell, source in zip(cells, sources, strict=True):
            cell.source = source
        # at the end of the first: the tests may start before a later setup cell
        # (the executor's kernel compiles a cell ending with the agent's line as Python)
        cells[0].source += f"\n{sandbox_exec.AGENT}enter_room({payload!r}, {helpers!r})\n"

    def preprocess(self, nb, resources):
        try:
            isolated = sandbox.require()  # before any of the student's code runs
        except sandbox.SandboxUnavailable as error:
            raise SandboxError(str(error)) from None
        # Kept in the autograded notebook, where the grades export reads it (GradesExport).
        # Its "feedback" entry, set once every cell carries its mark (below), tells
        # StripHiddenTests that the marks are the grader's: a submission's own are removed.
        nb.metadata["lm10"] = {"isolated": isolated}
        for cell in nb.cells:
            cell.metadata.pop(FEEDBACK_MARK, None)
        release = release_notebook(self.config, resources)
        global _notes
        _notes = notes = Notes(flags=submission_checks.flags(nb, release), isolated=isolated)
        setup, students = trusted_parts(release)
        room_names = room.declared(setup)  # the setup's names the sandbox holds, or None
        # The sandbox gets every cell but the tests, which it meets as empty markers.
        tests = {i: c.source for i, c in enumerate(nb.cells) if submission_checks.is_test(c)}
        # A test may read a value an answer cell computes below its stub (the release shows
        # only the stub): every name a test reads and the setup does not define is asked for.
        for source in tests.values():
            students |= submission_checks.free_names(source)
        students -= submission_checks.setup_names(release)
        prepared = nbformat.from_dict(json.loads(json.dumps(nb)))
        for index, cell in enumerate(prepared.cells):
            # the grader's marker only: hers made a cell of hers a test (asked for out of
            # turn), or, as null, kept its outputs past the channel's limit (`fitted`)
            cell.metadata.pop("lm10_test", None)
            if index in tests:
                prepared.cells[index] = new_code_cell("", metadata={"lm10_test": index})
            elif cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
                if not read_by_checks(cell.source):
                    cell.source = unread(cell.source)
        if not notes.isolated:
            self.log.warning(sandbox.NOT_ISOLATED)
        # every limit from c.SandboxLimits, as the worker warmed its sandbox with them
        limits = sandbox.SandboxLimits(config=self.config).limits(room=room_names is not None)
        results, clean = {}, {}
        delimiters = ClearHiddenTests(config=self.config)
        with trusted_tests.session(
            setup, students, time.monotonic() + self.total_timeout, room_names
        ) as tested:
            if room_names is not None:
                self.furnish(prepared, setup, room_names, tested)

            def on_test(index, call, deadline):
                if index not in tests or results.keys() and index <= max(results):
                    raise SandboxError(f"the sandbox asked for test {index} out of turn")
                hidden = hidden_line_numbers(
                    tests[index],
                    delimiters.begin_test_delimeter,
                    delimiters.end_test_delimeter,
                )
                results[index], clean[index] = tested.run(tests[index], call, deadline, hidden)

            run = sandbox.execute(
                nbformat.writes(prepared), self.timeout, self.total_timeout, limits, on_test
            )
        if tested.missed:
            notes.flags.append(room_flag(tested.missed))
            # and with the graded notebook, the grader's words only: the formgrader's Autograde
            # hands the notes to no one, and the class report reads it back (graded_later)
            nb.metadata["lm10"]["room_missed"] = list(tested.missed)
        if run.timed_out:
            notes.timeout = True
            raise SandboxError(f"still running after {self.total_timeout} s; stopped")
        try:
            executed = json.loads(run.notebook)
            cells = executed["cells"]
            assert isinstance(cells, list) and len(cells) == len(prepared.cells)
        except (ValueError, KeyError, TypeError, AssertionError):
            if run.failure:
                raise SandboxError(f"no executed notebook: {run.failure}") from None
            last = run.log.strip().splitlines()[-1:] or ["(nothing)"]
            raise SandboxError(
                f"the sandbox returned no executed notebook (exit status "
                f"{run.returncode}; last line it printed: {last[0][:200]!r})"
            ) from None
        timed_out = executed.get("metadata", {}).get("lm10_timed_out")
        timed_out = (
            {i for i in timed_out if type(i) is int} if isinstance(timed_out, list) else set()
        )
        stopped = executed.get("metadata", {}).get("lm10_stopped")
        reason = ""
        if isinstance(stopped, dict):
            position = stopped.get("cell")
            index = (
                position if isinstance(position, int) and 0 <= position < len(nb.cells) else None
            )
            name = (
                "a grader cell"
                if index is None
                else (
                    submission_checks.meta(nb.cells[index]).get("grade_id") or f"cell {index + 1}"
                )
            )
            reason = str(stopped.get("reason"))[:300]
            detail = stopped.get("detail")  # the instructor's, never on a cell
            notes.stopped = f"{name}: {reason}" + (
                f" ({detail[:300]})" if isinstance(detail, str) and detail else ""
            )
        # The first test during which a hidden input reached the student's code: every cell
        # after it is marked, and its own outputs from that moment on (see FEEDBACK_MARK).
        tainted = min((i for i, c in clean.items() if c is not None), default=len(nb.cells))
        count = 0  # execution counts are the grader's: a kernel can set its own to anything
        for index, (sent, back) in enumerate(zip(prepared.cells, cells, strict=True)):
            cell = nb.cells[index]
            if sent.cell_type == "code":
                cell.metadata[FEEDBACK_MARK] = (
                    clean.get(index) or {"stdout": None, "error": True}
                    if index <= tainted
                    else {"stdout": 0, "error": False}
                )
                # whether its error is the grader's own (the executor's stop, or a test the
                # grader never ran): only then does a NotRun or CellTimeoutError keep its words
                # in feedback, as the student's code can name its errors so too
                stop = index in tests and (
                    index not in results or (clean.get(index) or {}).get("stopped") is True
                )
                cell.metadata[FEEDBACK_MARK] = dict(cell.metadata[FEEDBACK_MARK], stopped=stop)
            if index in tests:  # outputs made here, by the trusted process, or none
                # a test run, its outputs, none where it passed silently; else the grader's
                outputs = (
                    results[index]
                    if index in results
                    else [
                        not_run(
                            f"Not run: the grader stopped an earlier cell ({reason})."
                            if reason
                            else "Not run: the notebook ended before this test."
                        )
                    ]
                )
                cell.outputs = [
                    o
                    for o in (clean_output(r, self.output_chars) for r in outputs)
                    if o is not None
                ]
                cell.execution_count = None
                continue
            if sent.cell_type != "code":
                continue
            if not isinstance(back, dict) or back.get("source") not in (
                sent.source,
                sent.source.splitlines(keepends=True),
            ):
                raise SandboxError(f"the sandbox changed cell {index + 1}")
            outputs = back.get("outputs") if isinstance(back.get("outputs"), list) else []
            cell.outputs = [
                o
                for o in (clean_output(r, self.output_chars) for r in outputs[:100])
                if o is not None
            ]
            ran = isinstance(back.get("execution_count"), int)
            count += ran
            cell.execution_count = count if ran else None
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if any(o.output_type == "stream" and o.name == "stderr" for o in cell.outputs):
                notes.stderr.append(
                    submission_checks.meta(cell).get("grade_id") or f"cell {index + 1}"
                )
                for o in cell.outputs:
                    if o.output_type == "stream" and o.name == "stderr":
                        o.name, o.text = "stdout", STDERR_NOTE + o.text
        nb.metadata["lm10"]["feedback"] = "marked"
        # The cells the grader stopped at their time limit: those the executor lists
        # (lm10_timed_out; a test's, where nbclient stopped one of its calls, before any hidden
        # input as after). Not an error's name: the student's code may name an error
        # CellTimeoutError, and a run beside others that ran out of time is graded again alone
        # (grading/batch/autograde.py)
        notes.timed_out_cells = [
            submission_checks.meta(c).get("grade_id") or f"cell {i + 1}"
            for i, c in enumerate(nb.cells)
            if c.cell_type == "code"
            and i in timed_out
            and any(o.output_type == "error" and o.ename == "CellTimeoutError" for o in c.outputs)
        ]
        return nb, resources
