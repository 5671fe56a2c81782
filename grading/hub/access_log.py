"""The hub's access log, bounded (the hub's configuration installs `bounded` as tornado's
`log_function`).

JupyterHub logs every request it answers, but for static files, at INFO or above, with the
request's whole address (`log_request`: "200 GET /hub/api/?x=... (@127.0.0.1) 0.25ms"), and
anyone on the machine reaches the hub's own port on the loopback without a credential. A
student's four connections asking `/hub/api/?x=<30,000 characters>` were 1,610 requests and
484 MB of the hub's log a second (about 4 TB a day: the disk, or under journald the rotation
of everything the hub logged before); short addresses, 3,352 requests and 3.3 MB a second
(27 GiB a day): the forty-fifth tester's table in JUPYTERHUB.md. Her server's own lines were
capped at 32 MiB a day (server_output.py); these were not.

Here each line names at most ADDRESS_CHARS characters of the address (and how long it was),
and at most LINES_PER_SECOND requests a second are logged: the rest are counted, and the
count is logged with the next line logged. At most about 1 GiB a day, whoever asks. During a
flood, others' requests are counted with hers, not logged one by one.
"""

import logging
import os
import time

from jupyterhub.log import log_request

ADDRESS_CHARS = 200
LINES_PER_SECOND = 50


class Bounded:
    """JupyterHub's `log_request`, at most `LINES_PER_SECOND` lines a second, each address cut
    to `ADDRESS_CHARS` characters."""

    def __init__(self, log=log_request, clock=time.monotonic):
        self.log, self.clock = log, clock
        self.second, self.lines, self.left_out = None, 0, 0

    def __call__(self, handler):
        now = int(self.clock())
        if now != self.second:
            self.second, self.lines = now, 0
        if self.lines >= LINES_PER_SECOND:
            self.left_out += 1
            return
        self.lines += 1
        if self.left_out:
            from tornado.log import access_log

            access_log.warning(
                "%d requests not logged (more than %d a second)", self.left_out, LINES_PER_SECOND
            )
            self.left_out = 0
        request = handler.request
        uri = request.uri
        if len(uri) > ADDRESS_CHARS:
            request.uri = f"{uri[:ADDRESS_CHARS]}...[{len(uri)} characters]"
        try:
            self.log(handler)
        finally:
            request.uri = uri


bounded = Bounded()


MESSAGE_CHARS = 2000
RECORDS_PER_SECOND = 100
# ... and past BYTES_PER_SECOND of the log in a second, each record counted as its message's
# UTF-8 bytes and RECORD_PREFIX_BYTES (the level, time, logger and place the hub's formatter
# puts before it, and the newline, as server_output.LOG_PREFIX_BYTES), every further record of
# that second cut to SHORT_CHARS characters: at most about 40 KB a second, 3.3 GB a day, and the
# lines of others stay, cut. Counted in records alone, 100 records of 2,000 characters a
# second were 17 GiB a day: a student without a credential, four connections asking
# `/hub/api/users/<30,000 characters>`, wrote 10.5 GiB a day of the hub's log (tornado's 403
# warning cut to 2,000 characters and the access line, 100 a second), against the 32 MiB a day
# her server's lines may take (the forty-eighth tester's table in JUPYTERHUB.md)
BYTES_PER_SECOND = 16 << 10
RECORD_PREFIX_BYTES = 64
SHORT_CHARS = 100
TRACEBACK_CHARS = 8000


class LinesPerSecond:
    """A filter for the hub's log handler (the hub's `logging_config` installs it): every
    message cut to MESSAGE_CHARS characters (SHORT_CHARS past BYTES_PER_SECOND bytes of the
    log in a second), and at most RECORDS_PER_SECOND records a second, the rest counted and the
    count put before the next record's message. Tornado's warning for every refused request and
    JupyterHub's "Not authorizing access to ..." carry a request's whole address: 6.3 MB of the
    log in 10 s from one student's token, 30 KB a request without a credential (the forty-fifth
    tester's table)."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.second, self.records, self.bytes, self.left_out = None, 0, 0, 0

    def filter(self, record):
        now = int(self.clock())
        if now != self.second:
            self.second, self.records, self.bytes = now, 0, 0
        if self.records >= RECORDS_PER_SECOND:
            self.left_out += 1
            return False
        self.records += 1
        message = record.getMessage()
        # past the second's bytes, each record is cut shorter (never dropped for its length: a
        # few long ones would hide everyone's short lines)
        short = self.bytes >= BYTES_PER_SECOND
        most = SHORT_CHARS if short else MESSAGE_CHARS
        if len(message) > most:
            message = f"{message[:most]}...[{len(message)} characters]"
        self.bytes += RECORD_PREFIX_BYTES + len(message.encode("utf-8", "replace"))
        # ... and the traceback the formatter puts after the message (`exc_info`): counted, at
        # most TRACEBACK_CHARS, past the second's bytes only its last line, cut. Uncounted, a
        # request of hers that the hub logs with one (a body that is not JSON, to her own
        # token's API: "Couldn't parse JSON") wrote 900 bytes of the log a record past the
        # 100 characters counted: 90 KB a second, 7.5 GB a day (the fiftieth tester's table)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            text = record.exc_text
            if short:
                text = text.rstrip().rsplit("\n", 1)[-1][:SHORT_CHARS]
            elif len(text) > TRACEBACK_CHARS:
                text = f"{text[:TRACEBACK_CHARS]}...[{len(text)} characters]"
            record.exc_text = text
            self.bytes += len(text.encode("utf-8", "replace")) + 1
        record.stack_info = None if short else record.stack_info
        if self.left_out:
            said = f"{self.left_out} lines not logged: more than {RECORDS_PER_SECOND} a second"
            message = f"({said}) {message}"
            self.left_out = 0
        record.msg, record.args = message, ()
        record.getMessage = lambda: message
        return True


# journald's sockets (`socket`, `stdout`, `dev-log`, the target of /dev/log) where the machine
# runs systemd. Mode 0666, in reach of every server (`--ro-bind / /`: a read-only mount stops
# neither `connect` nor `sendmsg` on a socket), and a student's server runs in the hub's
# service's cgroup (LocalProcessSpawner), so her entry (`SYSLOG_IDENTIFIER=jupyterhub`, a line
# forged as the hub's, escape sequences and newlines in it) showed under `journalctl -u` as the
# hub's own, past the relay's name, plainness and daily cap, and a flood of hers spent the
# hub's unit's rate limit, so journald dropped the hub's own lines (the forty-fifth tester's
# table in JUPYTERHUB.md; hidden by the forty-eighth)
JOURNAL = "/run/systemd/journal"
# ... and systemd's notification socket (mode 0777), which files what it is sent by the sender's
# cgroup too: PID 1 logs, under the hub's unit, each message it refuses from a process there
# (reasoned: no systemd on the machine that played the journal's)
NOTIFY = "/run/systemd/notify"


# ... and the system's D-Bus (`system_bus_socket`, mode 0666), whose systemd and logind answer
# anyone: `GetUnitProcesses` of the hub's unit lists every process in it with its command line
# (each server's bwrap, which names its student's home), as the cgroups that are hidden did
# (the twentieth tester's), and logind lists who is logged in (the fiftieth tester's table;
# reasoned: no system bus on the machine that played its reach)
DBUS = "/run/dbus"


def journal_hidden(folder=JOURNAL, notify=NOTIFY, bus=DBUS):
    """bubblewrap's options that show a server `folder` (journald's sockets) and `bus` (the
    system's D-Bus) as empty, read-only folders, and `notify` (systemd's own notification
    socket) as /dev/null, where they exist."""
    hidden = ()
    for place in (folder, bus):
        hidden += ("--tmpfs", place, "--remount-ro", place) if os.path.isdir(place) else ()
    if os.path.exists(notify):
        hidden += ("--ro-bind", "/dev/null", notify)
    return hidden
