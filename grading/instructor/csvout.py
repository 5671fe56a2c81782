"""The one way the course writes a CSV file: every text cell plain, none a formula.

Whatever the course writes as CSV (the autograde report, `make grades`, the class report's
rows, the LMS import and its mismatch list) is opened by instructors in a spreadsheet, and
much of it carries text a student chose: an id, a name, an e-mail, an error message their code
raised. A spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` as a formula (spaces,
a tab or a carriage return in front, or a full-width `＝ ＋ － ＠`, which some spreadsheets read
as the same, do not stop it), and a formula can fetch addresses, or run programs through DDE.
So `cell` writes such a text with a leading `'`, which spreadsheets show as text (OWASP ASVS
5.0, 1.2.10; OWASP's "CSV Injection" page), after `sanitise.plain` (no escape sequences or
control characters). A text that starts with `'` itself gets one more, so that the course's
own readers can undo the guard exactly (`uncell`, `DictReader`): a cell that starts with `'`
was guarded. Numbers (`-0.5`, or a text that is only such a number) are not formulas and stay
as they are; so do None (an empty cell) and booleans.

`writer(handle)` is csv.writer with every cell through `cell`; `write(path, rows)` writes a
whole file; `DictReader(handle)` is csv.DictReader with every cell through `uncell`, for the
files the course reads back (grading/batch/report.py merges the autograde report; the class report
reads it).
"""

import csv
import re

from grading.instructor.sanitise import plain

FORMULA = tuple("=+-@\uff1d\uff0b\uff0d\uff20")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def cell(value):
    """`value` as one CSV cell: numbers, None and booleans as they are; anything else as plain
    text, with a leading `'` where it would start a formula (after any spaces, or a tab) or
    starts with `'` itself."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = plain(value)
    start = text.lstrip()
    formula = start.startswith(FORMULA) and not NUMBER.fullmatch(start)
    if formula or text.startswith(("'", "\t", "\r")):
        return "'" + text
    return text


def uncell(text):
    """What `cell` was given, from the text it wrote (for a text: plain, as it wrote it)."""
    return text[1:] if text.startswith("'") else text


class Writer:
    """csv.writer over `handle`, every cell through `cell`."""

    def __init__(self, handle, **options):
        self._writer = csv.writer(handle, **options)

    def writerow(self, row):
        return self._writer.writerow([cell(v) for v in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


def writer(handle, **options):
    """The course's csv.writer: `Writer(handle, **options)`."""
    return Writer(handle, **options)


def write(path, rows, encoding="utf-8"):
    """Write `rows` (the header first) to the CSV file at `path`, each cell through `cell`."""
    with open(path, "w", newline="", encoding=encoding) as handle:
        writer(handle).writerows(rows)


def DictReader(handle, **options):  # noqa: N802 (named after the csv.DictReader it wraps)
    """csv.DictReader over `handle`, each row's cells through `uncell`."""
    for row in csv.DictReader(handle, **options):
        yield {k: uncell(v) if isinstance(v, str) else v for k, v in row.items()}
