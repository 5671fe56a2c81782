"""The course's grading around nbgrader: `import grading.<folder>.<module>` (installed with the
course, `pip install -e .`). The folders say where their code runs (CONTRIBUTING.md, "The
grading package's layout"; its table "Where each grading rule lives" maps rules to modules):

    in_sandbox/   inside the bubblewrap sandbox, as two files beside the student's code: the
                  executor and the agent that answers the tests' calls; they import no module
                  of this package
    host/         the grader's side of a submission, outside the sandbox: nbgrader's
                  preprocessors, the sandbox's launcher, the trusted process that runs the
                  tests, the room, the checks of a submission's cells
    batch/        `make autograde`: the command, its workers, intake, the gradebook, the report
    instructor/   the instructor's pages and exports: the class report, similarity, grades
                  for nbgrader and the LMS, the CSV writer, the sanitiser, the formgrader's CSP
    slips/        the labs' slip rules, one module per lab: the trusted process only; the
                  student edition gets tables for the visible inputs (lmcourse.slips)
    hub/          the course on JupyterHub, a system user per student, and its exchange
                  (ngshare with the course's rules): grading/JUPYTERHUB.md

grading/ is also nbgrader's working folder (`cd grading && nbgrader ...`): nbgrader_config.py
and jupyter_server_config.py are configuration files that nbgrader and Jupyter read by path,
not modules, and what grading produces (gradebook, submissions, feedback, reports) is beside
them, git-ignored.
"""
