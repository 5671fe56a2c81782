"""The grader's side of a submission, outside the sandbox, on the grading machine: in the
process that runs nbgrader's autograde (a worker of the batch, `nbgrader autograde`, the
formgrader's autograde button) and in the trusted test process that it starts.

    course_preprocessors  nbgrader's steps: the sandboxed execution, hidden tests out of the
                          feedback, duplicate ids, stderr and notes
    sandbox               bubblewrap: namespaces, read-only and capped folders, limits, the
                          one protocol to the executor (grading/in_sandbox/)
    seccomp               the system calls refused in a sandbox (System V IPC, keyrings), the
                          grading sandbox's and the hub servers' (grading/hub/no_keyrings.py)
    trusted_tests         the trusted process: the tests run here, the verdicts too
    room                  what of a lab's setup the graded sandbox holds, and its plain copies
    submission_checks     which cells are the lab's, the student's, tests; flags for a person
    vocabulary            the labs' vocabulary (vocabulary.txt): a name outside it is flagged
"""
