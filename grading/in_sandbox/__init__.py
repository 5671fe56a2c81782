"""What runs inside the bubblewrap sandbox, beside the student's code.

The sandbox (grading/host/sandbox.py) binds these two files read-only at /opt/grader and runs
them there as files, with the standard library, the kernel's packages, torch and the course
library: the grading package is not in the sandbox, and neither file imports it
(tests/test_imports.py, tests/test_grading_package.py).

    sandbox_exec    the executor: a submission's cells in a fresh kernel, time limits, a dead
                    or stuck kernel, a test's calls; and the frames of the one protocol to
                    it, which the host imports (`from grading.in_sandbox import sandbox_exec`)
    sandbox_agent   imported by the kernel: calls the student's code for a test and sends the
                    result back as data
"""
