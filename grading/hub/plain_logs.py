"""Log messages written plain in every Jupyter application an instructor starts on the hub
(grading/hub/instructor/jupyter_config.py installs this), in nbgrader's commands in any terminal
(grading/nbgrader_config.py) and in the hub itself (grading/hub/jupyterhub_config.py: JupyterHub
and tornado logged the scopes or roles a student asked a token for, "Not assigning requested
scopes ...", and a request's address sent to the hub's own port, where tornado accepts C1
controls, as they were, into the administrator's terminal).

nbgrader writes a submission's own text into its log: `OverwriteCells` warns "Cell '<grade
id>' does not exist in the database" with the grade id her notebook's metadata holds, and
`CheckCellMetadata` logs a traceback whose message holds a cell's source. Run in the
instructor's terminal (`nbgrader autograde`, which grading/README.md names beside the batch and
the formgrader), that log reached her terminal raw: a grade id of escape sequences cleared the
screen, set the window's title and wrote a forged line there, and the formgrader's autograde
answer carried the same bytes. Every log record's message, and every formatted traceback, is
made plain (grading/instructor/sanitise.py: no escape sequence, no control or direction
character; newlines and tabs stay, as tracebacks need them).
"""

import logging

from grading.instructor.sanitise import plain


def _plain_records(factory):
    """`factory`, whose records' messages, formatted, are plain."""

    def plain_record(*args, **kwargs):
        record = factory(*args, **kwargs)
        message = type(record).getMessage
        record.getMessage = lambda: plain(message(record))
        return record

    plain_record.lm10_plain = True
    return plain_record


_format_exception = logging.Formatter.formatException


def _plain_exception(self, exc_info):
    return plain(_format_exception(self, exc_info))


def install():
    """Every record made from now on in this process has a plain message (whatever record
    factory was set before still makes it), and every traceback a formatter writes is plain.
    Installing twice changes nothing."""
    factory = logging.getLogRecordFactory()
    if not getattr(factory, "lm10_plain", False):
        logging.setLogRecordFactory(_plain_records(factory))
    logging.Formatter.formatException = _plain_exception
