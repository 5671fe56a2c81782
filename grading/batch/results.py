"""The records the grading steps hand each other, typed.

`Notes` is what SandboxedExecute (course_preprocessors.py) found while one submission ran:
flags, the cell that stopped the run, the cells that wrote to stderr or ran past the per-cell
limit, whether the run was isolated. The worker that autograded the submission takes it from
the preprocessor and sends it to the batch as JSON (`to_json`); the batch reads it back with
`from_json`, which accepts only these fields, of these types, so a grader process that went
wrong cannot put anything else into the report.

`Result` is one row of the report (autograde-LAB.csv): the submission's status, score and why.
"""

import re
from dataclasses import asdict, dataclass, field, fields

STATUSES = ("graded", "flagged", "error", "timeout")


@dataclass
class Notes:
    flags: list[str] = field(default_factory=list)  # constructs a person should look at
    isolated: bool | None = None  # None: the sandboxed execution never started
    stopped: str = ""  # "<cell>: <reason>" when the grader stopped the run at a cell
    timed_out_cells: list[str] = field(default_factory=list)  # past the per-cell limit
    stderr: list[str] = field(default_factory=list)  # cells that wrote to stderr (not penalised)
    timeout: bool = False  # the whole submission ran past its time limit

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        """Notes from `to_json`'s dict; ValueError naming the field that is not as written."""
        if not isinstance(data, dict):
            raise ValueError(f"notes must be a JSON object, got {type(data).__name__}")
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown notes fields: {', '.join(sorted(unknown))}")
        notes = cls(**data)
        lists = (notes.flags, notes.timed_out_cells, notes.stderr)
        if not all(isinstance(v, list) and all(isinstance(s, str) for s in v) for v in lists):
            raise ValueError("notes: flags, timed_out_cells and stderr must be lists of strings")
        if not isinstance(notes.isolated, bool | None) or not isinstance(notes.timeout, bool):
            raise ValueError("notes: isolated must be true, false or null; timeout a boolean")
        if not isinstance(notes.stopped, str):
            raise ValueError("notes: stopped must be a string")
        return notes


@dataclass
class Result:
    student: str
    status: str  # one of STATUSES
    score: float = 0.0
    max_score: float = 0.0
    attempts: int = 0
    seconds: float = 0.0
    message: str = ""
    isolated: str = ""  # yes | no (LM10_GRADE_WITHOUT_ISOLATION=1) | "" (never ran)


NAMED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")
MAX_MISSED = 32  # names a room's copies lacked, kept for the instructor (trusted_tests too)


def room_missed(nb):
    """The names a graded notebook says her code asked the room's copies for and they lack
    (set by SandboxedExecute, the grader's words; [] where none, or not as it writes them)."""
    lm10 = nb.get("metadata", {}).get("lm10")
    missed = lm10.get("room_missed") if isinstance(lm10, dict) else None
    # "Kind.name" (the grader's own words; a notebook autograde left as she wrote it says
    # nothing else here)
    ok = isinstance(missed, list) and all(
        type(m) is str and len(m) <= 120 and NAMED.fullmatch(m) for m in missed
    )
    return list(missed[:MAX_MISSED]) if ok else []


def room_flag(missed):
    """The flag of a submission whose code asked the room's copies (grading/host/room.py) for
    what transformers' objects answer and the copies lack (`missed`: "Kind.name", the
    grader's own words): such a test may fail in the room where Validate, with transformers'
    objects, passed it, so a person checks the parts."""
    shown = ", ".join(missed[:6]) + (f" and {len(missed) - 6} more" if len(missed) > 6 else "")
    return (
        f"her code used {shown} of the grader's copies of transformers' objects, which the "
        "copies do not answer as transformers' do (a name they lack, or a setter's work they "
        "cannot do): a test may have failed on the copy where Validate, with transformers' "
        "own objects, passes; check those parts by hand"
    )
