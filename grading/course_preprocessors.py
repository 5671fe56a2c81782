"""Two fixes to nbgrader 0.9.6, installed by nbgrader_config.py.

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

import re

from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests
from nbgrader.preprocessors import DeduplicateIds as NbgraderDeduplicateIds

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CELL_LINE = re.compile(r"(?:Cell In\s*\[\d*\]|<ipython-input-[^>]*>), line (\d+)")
CONTEXT_LINE = re.compile(r"^\s*(?:-*>\s*)?(\d+)\s")  # a numbered source line in a frame
HIDDEN_MESSAGE = (
    "A hidden test failed: it checks your answer on inputs that are not shown in the notebook."
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


def neutral_error(output):
    return new_output("error", ename=output.ename, evalue=HIDDEN_MESSAGE,
                      traceback=[f"{output.ename}: {HIDDEN_MESSAGE}"])


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
        kept = [line for line, bare in zip(entry.split("\n"), plain.split("\n"), strict=True)
                if not (numbered := CONTEXT_LINE.match(bare)) or int(numbered[1]) not in hidden]
        traceback = list(output.traceback)
        traceback[index] = "\n".join(kept)
        return new_output("error", ename=output.ename, evalue=output.evalue, traceback=traceback)
    return neutral_error(output)  # origin unknown: assume the worst


class StripHiddenTests(ClearHiddenTests):
    """Remove hidden tests, and every trace of them in errors, from autograded test cells."""

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code" or not utils.is_grade(cell):
            return cell, resources
        hidden = hidden_line_numbers(
            cell.source, self.begin_test_delimeter, self.end_test_delimeter
        )
        if not hidden:
            return cell, resources
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        cell.outputs = [scrub_error(output, hidden) if output.output_type == "error" else output
                        for output in cell.outputs]
        return cell, resources


class DeduplicateIds(NbgraderDeduplicateIds):
    """nbgrader's DeduplicateIds, leaving the repeated cells without nbgrader metadata."""

    def preprocess_cell(self, cell, resources, cell_index):
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if cell.metadata.get("nbgrader") == {}:
            del cell.metadata["nbgrader"]
        return cell, resources
