"""Every other home hidden from a server: systemd's `ProtectHome=tmpfs`, with the user's own
home bound back, built with bubblewrap (jupyterhub_config.sandbox_command).

The hub makes a home private (0700) when its server starts, and a student may open hers again
(`chmod 755`) and leave a folder there: every server saw the machine's homes read-only, the
instructor's among them, whose nbgrader ran the `nbgrader_config.py` of a folder a request
named (the sixty-ninth hub tester: an image of `/formgrader?path=/home/<her>/x` in a notebook
the instructor opened ran her file as the instructor). That handler refuses a path now
(grading/instructor/formgrader_csp.py); with the homes hidden, no handler of any server reads
another user's home, whatever it is asked.
"""

from pathlib import Path


def others_hidden(home, replaced=()):
    """(before, after): bubblewrap's options around the bind of `home`, the server's own, that
    show the folder holding it as an empty, read-only one, `home` alone bound back. None where
    that folder is the root, or lies in a folder the sandbox already replaces (`replaced`,
    each a private tmpfs: the test hub's homes lie under /tmp)."""
    parent = Path(home).parent
    if parent == Path(parent.anchor) or any(parent.is_relative_to(f) for f in replaced):
        return (), ()
    return ("--tmpfs", str(parent)), ("--remount-ro", str(parent))
