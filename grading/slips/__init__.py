"""The slip rules of every lab part: the grader's side of lmcourse.slips.

Each lab has its module here (l1.py ... l6.py) with `PARTS = {grade_id: {sentence: rule}}`: a
rule turns the right value and the test's inputs into the value the slip would give (a count
without the biases, a cache in numbers instead of bytes, a variance over n - 1). A rule whose
inputs do not apply raises (AssertionError, ArithmeticError, KeyError, TypeError, ...) and is
skipped.

The rules compute near-answers, so they never reach a student: this package is not in the
student edition, not in the course's wheel (pyproject.toml packages only `grading` and
`grading.hub`), nor in the graded sandbox. The grader's trusted process, which runs every test
(trusted_tests.py), calls `install()`: from then on the labs' `lmcourse.slips.hint` names slips
with these rules, on hidden inputs too. Everywhere else `hint` looks values up in the tables
that `make release` writes from these rules for the visible tests' inputs (table.py).
"""

from lmcourse import slips as lookup

from grading.slips import l1, l2, l3, l4, l5, l6

LABS = {"l1": l1, "l2": l2, "l3": l3, "l4": l4, "l5": l5, "l6": l6}
CATALOGUE = {part: rules for lab in LABS.values() for part, rules in lab.PARTS.items()}
SKIPPED = (AssertionError, ArithmeticError, AttributeError, KeyError, TypeError, ValueError)


def rules(part):
    if part not in CATALOGUE:
        raise KeyError(f"no slips catalogued for {part!r}; parts: {sorted(CATALOGUE)}")
    return CATALOGUE[part]


def example(part, want, **inputs):
    """The slips of `part` on these inputs as table data: {"want", "inputs", "slips": [[value,
    [sentence, ...]], ...]}, slips of one value grouped, none whose number is the right one."""
    grouped = []
    for sentence, rule in rules(part).items():
        try:
            value = lookup.encode(rule(want, **inputs))
        except SKIPPED:
            continue  # the slip does not apply to these inputs
        if not (type(value) is dict and "tensor" in value) and lookup._same(want, value):
            continue  # a slip that gives the right number here costs nothing
        # (a tensor close to the right one is kept: recognise tells them apart at `got`)
        for entry in grouped:
            if entry[0] == value:
                entry[1].append(sentence)
                break
        else:
            grouped.append([value, [sentence]])
    return {"want": lookup.encode(want), "inputs": lookup.encode(inputs), "slips": grouped}


def hint(part, got, want, **inputs):
    """lmcourse.slips.hint with the rules: any inputs, hidden ones included."""
    rules(part)  # an unknown part is an error, as in the tables
    return lookup.line(lookup.recognise(example(part, want, **inputs), got, want))


def sentences(part):
    return set(CATALOGUE.get(part, {}))


def install():
    """Put these rules behind lmcourse.slips.hint in this process (the trusted one)."""
    import sys

    lookup.use_rules(sys.modules[__name__])
