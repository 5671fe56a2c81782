"""The batch: `make autograde` grades every submission of a lab in parallel on the grading
machine, one worker process per core, and loses no grade.

    autograde   the command: `python -m grading.batch.autograde LAB` (`make autograde`)
    intake      which notebook of a submission folder is graded, or why none is
    workers     grader processes (`python -m grading.batch.workers`), each with a warm sandbox
                and a warm trusted test process
    gradebook   the lab in the gradebook; scores read back, zero for the ungraded
    report      why each submission scored what it did; the CSV report
    results     the records passed between these steps (Result, Notes)
"""
