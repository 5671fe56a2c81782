"""What the instructor reads and exports, on the instructor's machine: pages, CSV files, the
LMS's files, and the formgrader's Content-Security-Policy.

    class_report    what the class got wrong: `python -m grading.instructor.class_report`
                    (`make report`), pages and CSVs under grading/reports/
    similarity      submissions that share answer code (`make similarity`)
    grades_export   nbgrader's grades export (`make grades`)
    lms             grades into Canvas and Moodle (`make lms`)
    csvout          the one CSV writer: no cell a spreadsheet would run as a formula
    sanitise        text from a submission on pages, the terminal and in CSV files
    formgrader_csp  the formgrader's Content-Security-Policy (a Jupyter server extension)
"""
