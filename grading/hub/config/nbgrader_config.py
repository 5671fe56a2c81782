"""nbgrader's exchange on the course's JupyterHub, read by every server the hub starts
(jupyterhub_config.py puts this folder on JUPYTER_CONFIG_PATH, after the course's own
`grading/` for the instructor and after `../student/` for students).

Releases, fetches, submissions, collection and feedback go through ngshare, a hub service that
knows who is calling from the hub's token (grading/hub/ngshare_service.py), instead of a folder
every student can write: ngshare_exchange's classes, with the course's submit, collect and
release_feedback (grading/hub/exchange.py), each sending its requests to the exchange's Unix
socket with the server's exchange-only token, both from the hub ($LM10_NGSHARE_SOCKET,
$LM10_EXCHANGE_TOKEN); the student id of a fetch, a submission or a feedback is the hub user's
name, decided by the service, never by the student's configuration.
"""

import os

from grading.hub import exchange

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = "LM10"
c.ExchangeFactory.exchange = exchange.Exchange
c.ExchangeFactory.fetch_assignment = exchange.FetchAssignment
c.ExchangeFactory.fetch_feedback = exchange.FetchFeedback
c.ExchangeFactory.release_assignment = exchange.ReleaseAssignment
c.ExchangeFactory.list = exchange.List
c.ExchangeFactory.submit = exchange.Submit
c.ExchangeFactory.collect = exchange.Collect
c.ExchangeFactory.release_feedback = exchange.ReleaseFeedback
c.Exchange._ngshare_url = os.environ.get(exchange.URL_VARIABLE, "")
