"""What a server writes to its standard output and error, in the hub's log: each line under the
server's name, plain, a line at most LINE_BYTES long and at most LINES_PER_SECOND lines a second.

LocalProcessSpawner passes the hub's own descriptors 0, 1 and 2 to every server it starts. A
student's server runs her code (her kernel is its child, and her ~/.jupyter configures it), so
she held the hub's terminal (JUPYTERHUB.md's install starts the hub in one, as root): she read
what the administrator typed there, and wrote her bytes there raw, a window title, the
clipboard (OSC 52, pasted later into root's shell), a cleared screen, lines that read as the
hub's own. Under a service manager the same descriptors are the hub's log. So the hub gives
each server /dev/null to read and a pipe to write (`SandboxedSpawner.start` in
jupyterhub_config.py), and `relay` reads that pipe in the hub's event loop: every line is logged
as "<name>'s server: <line>", made plain (grading/instructor/sanitise.py: no escape sequence,
control or direction character). A line longer than LINE_BYTES is cut there; past
LINES_PER_SECOND lines in a second, the rest of that second's lines are counted, not logged,
and the count is logged with the next line logged; past BYTES_PER_SECOND in a second, the hub
reads that pipe again the next second (the server's writes wait meanwhile): a student's flood
costs the hub little reading and no log. And at most LOG_BYTES_PER_DAY of each user's lines a
day, all her servers together: 50 lines of 4 KiB a second, held all day, were 16 GiB of the
hub's log a day from one student (the twenty-second tester's table in JUPYTERHUB.md), a full
disk or, under journald, the rotation of everything the hub logged before (her own earlier
attempts included). Past it her lines are counted, not logged, for the rest of that day (days
of 24 hours of the relay's clock, from the machine's start), and the hub says so once.
"""

import asyncio
import os
import time

from grading.instructor.sanitise import plain

LINE_BYTES = 4096
LINES_PER_SECOND = 50
BYTES_PER_SECOND = 1 << 20
READ_BYTES = 1 << 16
LOG_BYTES_PER_DAY = 32 << 20
# What the hub's log adds to each line beside the message, counted against the day's cap with
# the message's bytes: its level, time, logger and place ("[I 2026-12-07 08:10:23.301 JupyterHub
# server_output:98] ", 57 bytes) and the newline, rounded up. Counted as characters of her text
# alone, 50 empty lines a second were 330 MiB of the log a day counted as nothing, and lines of
# bytes that are not UTF-8 (each logged as U+FFFD, 3 bytes) three times what they counted (the
# forty-fifth tester's table in JUPYTERHUB.md)
LOG_PREFIX_BYTES = 64
LOGGED = {}  # user name -> [the day, bytes of her lines logged that day]


class Relay:
    """Reads one server's pipe in the running event loop until every writer has closed it."""

    def __init__(self, fd, log, name, clock=time.monotonic, drain=False):
        self.fd, self.log, self.name, self.clock = fd, log, name, clock
        self.drain = drain
        self.buffer = b""
        self.second, self.lines, self.bytes, self.left_out = None, 0, 0, 0
        os.set_blocking(fd, False)
        self.loop = asyncio.get_running_loop()
        self.loop.add_reader(fd, self.read)

    def new_second(self):
        now = int(self.clock())
        if now != self.second:
            self.second, self.lines, self.bytes = now, 0, 0

    def read(self):
        try:
            chunk = os.read(self.fd, READ_BYTES)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.close()
            return
        self.new_second()
        self.bytes += len(chunk)
        # the lines this second may still log, each on its own; the rest only counted
        lines = (self.buffer + chunk).split(b"\n", max(LINES_PER_SECOND - self.lines, 0))
        self.buffer = lines.pop()
        for line in lines:
            self.line(line)
        extra = self.buffer.count(b"\n")
        if extra:
            self.left_out += extra
            self.buffer = self.buffer[self.buffer.rindex(b"\n") + 1 :]
        while len(self.buffer) > LINE_BYTES:
            self.line(self.buffer[:LINE_BYTES])
            self.buffer = self.buffer[LINE_BYTES:]
        # a flood: read again next second, not before (but a writer that buffers what the pipe
        # does not take, as the proxy does, is drained: `relay`'s `drain`)
        if self.bytes >= BYTES_PER_SECOND and not self.drain:
            self.loop.remove_reader(self.fd)
            self.loop.call_later(self.second + 1 - self.clock(), self.resume)

    def resume(self):
        if self.fd is not None:
            self.loop.add_reader(self.fd, self.read)

    def line(self, raw):
        day = int(self.clock() // 86400)
        logged = LOGGED.setdefault(self.name, [day, 0])
        if logged[0] != day:
            logged[:] = [day, 0]
        if self.lines >= LINES_PER_SECOND or logged[1] >= LOG_BYTES_PER_DAY:
            self.left_out += 1
            return
        self.lines += 1
        self.say_left_out()
        text = plain(raw[:LINE_BYTES].decode("utf-8", "replace"))
        self.log.info("%s's server: %s", self.name, text)
        logged[1] += LOG_PREFIX_BYTES + len(f"{self.name}'s server: {text}".encode())
        if logged[1] >= LOG_BYTES_PER_DAY:
            self.log.warning(
                "%s's server: %d MiB of its lines logged today; the rest are counted, not "
                "logged, for the rest of the day",
                self.name,
                LOG_BYTES_PER_DAY >> 20,
            )

    def say_left_out(self):
        if self.left_out:
            self.log.warning(
                "%s's server: %d lines left out (more than %d in a second, or %d MiB a day)",
                self.name,
                self.left_out,
                LINES_PER_SECOND,
                LOG_BYTES_PER_DAY >> 20,
            )
            self.left_out = 0

    def close(self):
        if self.fd is None:
            return
        if self.buffer:
            self.new_second()
            self.line(self.buffer)
            self.buffer = b""
        self.say_left_out()
        self.loop.remove_reader(self.fd)
        os.close(self.fd)
        self.fd = None


def relay(fd, log, name, drain=False):
    """Log what comes through `fd` (a pipe's read end) as `name`'s server's lines; returns the
    Relay, which closes `fd` when the pipe ends. With `drain`, the pipe is read as fast as it is
    written however much comes (what is past the bounds counted, not logged): for a writer that
    keeps in its own memory what the pipe does not take, as configurable-http-proxy (node) does:
    paused past 1 MiB a second, a student's flood of its API without a token grew the proxy,
    root's, by about 90 MB a second, 1.9 GB in 20 s, without bound (the fiftieth tester's
    table in JUPYTERHUB.md)."""
    return Relay(fd, log, name, drain=drain)
