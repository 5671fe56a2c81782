"""The course on JupyterHub with one system user per student (grading/JUPYTERHUB.md).

jupyterhub_config.py  the hub: PAM logins, one system user per student, private homes, the
                      instructor's server on the course, ngshare as a hub service
ngshare_service       ngshare, the exchange every submission, fetch and feedback goes
                      through, started with the course's rules:
                      `python -m grading.hub.ngshare_service` (the hub runs it)
exchange              nbgrader's side of it: ngshare_exchange, with the course's collect and
                      release_feedback (one student's submission never stops the others')
singleuser            jupyterhub-singleuser on the listening socket the hub holds for each
                      server's port (`python -m grading.hub.singleuser`, the hub runs it)
gitpuller_guard       what an "Open on the hub" link (nbgitpuller) may pull, and where
                      (loaded by config/jupyter_server_config.py in every server)
config/, student/     the nbgrader, Jupyter server and JupyterLab configuration the hub gives
                      every server and the students' servers (read by path, not imported)
"""
