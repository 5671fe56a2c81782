"""The course's grading around nbgrader: `import grading.<module>` (installed with the course,
`pip install -e .`); CONTRIBUTING.md's table "Where each grading rule lives" maps rules to modules.

    autograde           the batch: `python -m grading.autograde LAB` (`make autograde`)
    intake              which notebook of a submission folder is graded, or why none is
    workers             grader processes, each with a warm sandbox and trusted test process
    gradebook           the lab in the gradebook; scores read back, zeros for the ungraded
    report              why each submission scored what it did; the CSV report
    results             the typed records passed between them (Result, Notes)
    class_report        the instructor's view of a class: `python -m grading.class_report`
                        (`make report`), pages and CSVs under grading/reports/
    lms                 grades into Canvas and Moodle: `python -m grading.lms` (`make lms`)
    course_preprocessors, submission_checks, sandbox, trusted_tests, sanitise,
    grades_export, formgrader_csp: nbgrader's pipeline and the pages (see CONTRIBUTING.md)
    slips/              the labs' slip rules, one module per lab: the grader's side only; the
                        student edition gets tables for the visible inputs (lmcourse.slips)
    hub/                the course on JupyterHub, a system user per student, and its exchange
                        (ngshare with the course's rules): grading/JUPYTERHUB.md

sandbox_exec.py and sandbox_agent.py also run inside the sandbox, as files, on the standard
library alone; nothing else here does. nbgrader_config.py and jupyter_server_config.py are
configuration files that nbgrader and Jupyter read by path, not modules.
"""
