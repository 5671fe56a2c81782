"""The course's gradebook as the batch uses it: where things are, that the lab is released,
and the scores read back after grading, with zero recorded, visibly, for every submission that
was not graded (so exports and feedback never miss a student)."""

from pathlib import Path


def course_paths(grading):
    """Course root, submitted and autograded folders, gradebook URL and course id, read from
    the course's nbgrader_config.py."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(grading)).load_config()
    course = config.CourseDirectory
    root = Path(course.root)
    return (
        root / course.submitted_directory,
        root / course.autograded_directory,
        course.db_url,
        course.course_id,
        root,
    )


def check_released(lab, db_url, course_id):
    """The lab must be in the gradebook (which also creates the database before any worker)."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url, course_id=course_id) as gradebook:
        try:
            gradebook.find_assignment(lab)
        except MissingEntry:
            raise ValueError(
                f"lab {lab} is not in the gradebook: run `make release LAB={lab}` first"
            ) from None


def record(results, lab, db_url, course_id):
    """Read scores back from the gradebook; give ungraded submissions zero, visibly."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url, course_id=course_id) as gradebook:
        for result in results:
            try:
                submission = gradebook.find_submission(lab, result.student)
            except MissingEntry:
                gradebook.update_or_create_student(result.student)
                submission = gradebook.add_submission(lab, result.student)
            grades = [g for n in submission.notebooks for g in n.grades]
            missing = [g.name for g in grades if g.auto_score is None and not g.needs_manual_grade]
            if result.status in ("graded", "flagged") and (missing or not grades):
                result.status = "error"
                result.message = (
                    f"no score in the gradebook for {', '.join(missing)}"
                    if missing
                    else "no grades in the gradebook"
                )
            if result.status not in ("graded", "flagged"):
                for grade in grades:
                    grade.auto_score, grade.needs_manual_grade = 0.0, False
                    grade.manual_score = None
                gradebook.db.commit()
            result.score = float(sum(g.score for g in grades))
            result.max_score = float(sum(g.max_score for g in grades))
