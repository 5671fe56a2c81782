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

import os
import re
from pathlib import Path, PurePosixPath

MOUNTINFO = "/proc/self/mountinfo"


def home_path(directory):
    """A home's path (the account's `pw_dir`) with every folder above it resolved: bubblewrap
    makes its mounts in a root of its own, where a link with an absolute target (`/home ->
    /data/home`, as `ln -s` makes it) leads nowhere, so a folder of homes that is such a link
    started no server, anyone's ("Can't mkdir /home/<her>: No such file or directory"; the
    eightieth hub tester). The home itself stays as it is: the hub refuses a home that is a
    link (jupyterhub_config.private_folder)."""
    path = Path(directory)
    return path.parent.resolve() / path.name


def mounts(mountinfo=MOUNTINFO):
    """(device, folder inside its file system, mount point) of each mount, in the order
    /proc/self/mountinfo lists them (a later one over an earlier at the same point); octal
    escapes (a space is \\040) undone."""
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return []

    def plain(field):
        return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)

    found = []
    for line in lines:
        fields = line.split()
        if len(fields) > 4:
            found.append((fields[2], PurePosixPath(plain(fields[3])), Path(plain(fields[4]))))
    return found


def other_paths(folder, found):
    """Every other path of `folder` that `found` (mounts()) holds: a mount of the same device
    whose folder inside the file system holds it (`mount --bind /data/home /home` makes
    `/data/home` another path of `/home`, as an fstab line does), or lies in it (a bind of one
    home elsewhere), each still the same folder (device and inode) where it holds it. The
    eighty-fourth hub tester's open row: `others_hidden` hid `/home` and the instructor's
    server read a student's opened home under `/data/home`."""
    folder = Path(folder)

    def holder(path):
        best = None
        for mount in found:
            if path.is_relative_to(mount[2]) and (
                best is None or len(mount[2].parts) >= len(best[2].parts)
            ):
                best = mount
        return best

    mount = holder(folder)
    if mount is None:
        return set()
    device, root, point = mount
    inside = root / folder.relative_to(point)
    paths = set()
    for each in found:
        if each[0] != device or holder(each[2]) != each:
            continue
        if inside.is_relative_to(each[1]):
            path = each[2] / inside.relative_to(each[1])
            try:
                if path != folder and os.path.samefile(path, folder):
                    paths.add(path)
            except OSError:
                pass
        elif each[1].is_relative_to(inside) and each[2] != folder:
            paths.add(each[2])  # a part of the folder mounted elsewhere
    return paths


def others_hidden(home, replaced=(), homes=()):
    """(before, after): bubblewrap's options around the bind of `home`, the server's own, that
    show each folder holding it or one of `homes` (the course's users' homes) as an empty,
    read-only one, `home` alone bound back. A folder is left as it is where it is not there
    (yet), is /dev or /proc or lies in one (the sandbox makes its own), is the root,
    lies in a folder the sandbox already replaces (`replaced`, each a private tmpfs: the test
    hub's homes lie under /tmp) or holds one, or lies in `home`. A home of `homes` whose
    folder is left so for being the root or holding a replaced folder (`/<name>`,
    `/var/<name>`) is hidden itself, under the same rules (the seventy-third hub tester's open
    row): its name is still listed there, empty. Each folder so hidden is hidden under every
    other path it has on the machine too (`other_paths`: a bind mount of it), under the same
    rules (the eighty-fourth hub tester's open row)."""
    own = Path(home)
    folders, alone = set(), set()

    def left(folder):
        return (
            not folder.is_dir()
            or any(folder.is_relative_to(f) for f in ("/dev", "/proc"))
            or folder.is_relative_to(own)
            or any(folder.is_relative_to(f) for f in replaced)
        )

    def stays(path):
        """A home or a second path hidden on its own is not the root, holds neither the
        server's own home nor a replaced folder, and is not `left`."""
        return (
            path == Path(path.anchor)
            or left(path)
            or own.is_relative_to(path)
            or any(Path(f).is_relative_to(path) for f in replaced)
        )

    for each in map(Path, homes):
        folder = each.parent
        # a home at the root or in /var (which holds /var/tmp): its folder stays, so the
        # home itself is hidden, unless it holds the server's own home or a replaced folder
        if (
            folder == Path(folder.anchor) or any(Path(f).is_relative_to(folder) for f in replaced)
        ) and not stays(each):
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
    found, hidden = mounts(), [*folders, *alone]
    for each in hidden:
        for path in other_paths(each, found):
            if not (stays(path) or any(path.is_relative_to(f) for f in hidden)):
                folders.add(path)  # (one in a hidden folder is hidden with it)
    alone = {h for h in alone if not any(h.is_relative_to(f) for f in folders)}
    ordered = sorted(folders | alone, key=lambda f: (len(f.parts), str(f)))  # shallower first
    return (
        tuple(a for f in ordered for a in ("--tmpfs", str(f))),
        tuple(a for f in ordered for a in ("--remount-ro", str(f))),
    )
