"""Every other home hidden from a server: systemd's `ProtectHome=tmpfs`, with the user's own
home bound back, built with bubblewrap (jupyterhub_config.sandbox_command).

The hub makes a home private (0700) when its server starts, and a student may open hers again
(`chmod 755`) and leave a folder there: every server saw the machine's homes read-only, the
instructor's among them, whose nbgrader ran the `nbgrader_config.py` of a folder a request
named (the sixty-ninth hub tester: an image of `/formgrader?path=/home/<her>/x` in a notebook
the instructor opened ran her file as the instructor). That handler refuses a path now
(grading/instructor/formgrader_csp.py); with the homes hidden, no handler of any server reads
another user's home, whatever it is asked.

Every folder that holds a home of the course is hidden, not only the server's own: where staff
and students live in folders of their own (`/home/staff/<instructor>`,
`/home/students/<her>`), hiding the instructor's folder alone left every student's home in her
server's view (the seventy-third hub tester).
"""

from pathlib import Path


def home_path(directory):
    """A home's path (the account's `pw_dir`) with every folder above it resolved: bubblewrap
    makes its mounts in a root of its own, where a link with an absolute target (`/home ->
    /data/home`, as `ln -s` makes it) leads nowhere, so a folder of homes that is such a link
    started no server, anyone's ("Can't mkdir /home/<her>: No such file or directory"; the
    eightieth hub tester). The home itself stays as it is: the hub refuses a home that is a
    link (jupyterhub_config.private_folder)."""
    path = Path(directory)
    return path.parent.resolve() / path.name


def others_hidden(home, replaced=(), homes=()):
    """(before, after): bubblewrap's options around the bind of `home`, the server's own, that
    show each folder holding it or one of `homes` (the course's users' homes) as an empty,
    read-only one, `home` alone bound back. A folder is left as it is where it is not there
    (yet), is /dev or /proc or lies in one (the sandbox makes its own), is the root,
    lies in a folder the sandbox already replaces (`replaced`, each a private tmpfs: the test
    hub's homes lie under /tmp) or holds one, or lies in `home`. A home of `homes` whose
    folder is left so for being the root or holding a replaced folder (`/<name>`,
    `/var/<name>`) is hidden itself, under the same rules (the seventy-third hub tester's open
    row): its name is still listed there, empty."""
    own = Path(home)
    folders, alone = set(), set()

    def left(folder):
        return (
            not folder.is_dir()
            or any(folder.is_relative_to(f) for f in ("/dev", "/proc"))
            or folder.is_relative_to(own)
            or any(folder.is_relative_to(f) for f in replaced)
        )

    for each in map(Path, homes):
        folder = each.parent
        # a home at the root or in /var (which holds /var/tmp): its folder stays, so the
        # home itself is hidden, unless it holds the server's own home or a replaced folder
        if (
            folder == Path(folder.anchor) or any(Path(f).is_relative_to(folder) for f in replaced)
        ) and not (
            each == Path(each.anchor)
            or left(each)
            or own.is_relative_to(each)
            or any(Path(f).is_relative_to(each) for f in replaced)
        ):
            alone.add(each)
    for each in (home, *homes):
        folder = Path(each).parent
        if (
            folder == Path(folder.anchor)
            # a folder not made yet holds no home to see, and bwrap cannot make its mount
            # point in the read-only root: one account of the course whose home lies in a
            # folder the hub makes only at its first start started no one's server (the
            # seventy-fifth hub tester); nor /dev or /proc, the sandbox's own (a home of
            # /dev/null hid every device)
            or not folder.is_dir()
            or any(folder.is_relative_to(f) for f in ("/dev", "/proc"))
            or folder.is_relative_to(own)
            or any(folder.is_relative_to(f) or Path(f).is_relative_to(folder) for f in replaced)
        ):
            continue
        folders.add(folder)
    alone = {h for h in alone if not any(h.is_relative_to(f) for f in folders)}
    ordered = sorted(folders | alone, key=lambda f: (len(f.parts), str(f)))  # shallower first
    return (
        tuple(a for f in ordered for a in ("--tmpfs", str(f))),
        tuple(a for f in ordered for a in ("--remount-ro", str(f))),
    )
