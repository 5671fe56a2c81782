"""nbgrader's exchange on the course's JupyterHub, read by every server the hub starts
(jupyterhub_config.py puts this folder on JUPYTER_CONFIG_PATH, after the course's own
`grading/` for the instructor and after `../student/` for students).

Releases, fetches, submissions, collection and feedback go through ngshare, a hub service that
knows who is calling from the hub's token (grading/hub/ngshare_service.py), instead of a folder
every student can write: ngshare_exchange's classes, with the course's submit, collect and
release_feedback (grading/hub/exchange.py). The service's address comes from the hub
($LM10_NGSHARE_URL); the student id of a fetch, a submission or a feedback is the hub user's
name, decided by the service, never by the student's configuration.
"""

import os

import ngshare_exchange

from grading.hub import exchange

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = "LM10"
c.ExchangeFactory.exchange = exchange.Exchange
c.ExchangeFactory.fetch_assignment = ngshare_exchange.ExchangeFetchAssignment
c.ExchangeFactory.fetch_feedback = ngshare_exchange.ExchangeFetchFeedback
c.ExchangeFactory.release_assignment = ngshare_exchange.ExchangeReleaseAssignment
c.ExchangeFactory.list = ngshare_exchange.ExchangeList
c.ExchangeFactory.submit = exchange.Submit
c.ExchangeFactory.collect = exchange.Collect
c.ExchangeFactory.release_feedback = exchange.ReleaseFeedback
c.Exchange._ngshare_url = os.environ.get(exchange.URL_VARIABLE, "")
