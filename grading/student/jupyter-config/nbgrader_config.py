"""nbgrader configuration of the student edition: only what the Validate button needs.

Validate runs a lab's tests in a new kernel. A test cell may name what it compares against
("# Off limits while graded: ..."); the course's IPython extension stops the student's code
from calling those while that test runs, as the grader does (lmcourse/offlimits.py), so
Validate gives the verdict autograding will.
"""

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.Execute.extra_arguments = ["--IPKernelApp.extensions=lmcourse.offlimits"]
