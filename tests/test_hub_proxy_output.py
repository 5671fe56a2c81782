"""The proxy's output, relayed and bounded (grading/hub/proxy_output.py, the forty-eighth
tester's table in grading/JUPYTERHUB.md): JupyterHub's own ConfigurableHTTPProxy.start, a real
configurable-http-proxy, and a student's flood of its REST API without a token, which logged
each request's whole path (794 MB of the hub's output in 10 s) past the hub's own bounds."""

import asyncio
import http.client
import logging
import shutil
import socket
import threading
import time
from pathlib import Path
from unittest import mock

import pytest

from grading.hub import proxy_output, server_output

ROOT = Path(__file__).resolve().parents[1]
CHP = ROOT / ".npm-tools" / "node_modules" / ".bin" / "configurable-http-proxy"
COMMAND = str(CHP) if CHP.exists() else shutil.which("configurable-http-proxy")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Counted(logging.Handler):
    def __init__(self):
        super().__init__()
        self.bytes, self.lines = 0, []

    def emit(self, record):
        line = record.getMessage()
        self.bytes += len(line.encode()) + 64
        self.lines.append(line)


def flood(port, seconds, path):
    sent = []

    def client(stop):
        n, c = 0, http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        while time.time() < stop:
            try:
                c.request("GET", path)
                c.getresponse().read()
                n += 1
            except (OSError, http.client.HTTPException):
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        sent.append(n)

    stop = time.time() + seconds
    threads = [threading.Thread(target=client, args=(stop,)) for _ in range(4)]
    for t in threads:
        t.start()
    return threads, sent


@pytest.mark.slow
@pytest.mark.skipif(not COMMAND, reason="no configurable-http-proxy (make hub-proxy)")
def test_a_flood_of_the_proxys_api_takes_the_hubs_log_a_bounded_amount(tmp_path, monkeypatch):
    monkeypatch.setattr(server_output, "LOGGED", {})
    log = Counted()
    logger = logging.getLogger("lm10-test-proxy-output")
    logger.addHandler(log)
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    api = free_port()
    chp = proxy_output.RelayedProxy(
        command=[COMMAND],
        public_url=f"http://127.0.0.1:{free_port()}",
        api_url=f"http://127.0.0.1:{api}",
        auth_token="the hub's secret",
        pid_file=str(tmp_path / "proxy.pid"),
        app=mock.Mock(subdomain_host="", internal_ssl=False),
        hub=mock.Mock(url="http://127.0.0.1:1/hub/"),
        log=logger,
    )

    async def play():
        await chp.start()
        try:
            threads, sent = flood(api, 5, "/api/routes/" + "a" * 15_000)
            while any(t.is_alive() for t in threads):
                await asyncio.sleep(0.1)
            await asyncio.sleep(1.5)  # the relay reads what is left
            return sum(sent)
        finally:
            chp.proxy_process.terminate()
            chp.proxy_process.wait()
            await asyncio.sleep(0.5)

    try:
        sent = asyncio.run(play())
    finally:
        logger.removeHandler(log)
    assert sent > 500, sent  # she was answered that many times
    relayed = [line for line in log.lines if f"{proxy_output.NAME}'s server:" in line]
    assert any("Proxy API at" in line for line in relayed), log.lines[:5]  # its own lines
    assert any("403 GET /api/routes/aaaa" in line for line in relayed), relayed[-3:]
    # 50 lines of at most 4 KiB a second from the relay, 5 to 8 seconds of it
    assert log.bytes < 8 * 50 * (4096 + 200), (log.bytes, sent)
    assert "\x1b" not in "".join(log.lines)  # the proxy's colours, made plain


def resident_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@pytest.mark.slow
@pytest.mark.skipif(not COMMAND, reason="no configurable-http-proxy (make hub-proxy)")
def test_a_flood_of_the_proxys_api_does_not_grow_the_proxy(tmp_path, monkeypatch):
    """The relay paused its reading past 1 MiB a second (as for a server, whose writes then
    wait); node does not wait, it keeps what the pipe does not take: her flood of the proxy's
    API without a token grew root's proxy by about 90 MB a second, 1.9 GB in 20 s, without
    bound (the fiftieth tester's table in JUPYTERHUB.md). The proxy's pipe is drained."""
    monkeypatch.setattr(server_output, "LOGGED", {})
    logger = logging.getLogger("lm10-test-proxy-memory")
    logger.addHandler(Counted())
    logger.propagate = False
    api = free_port()
    chp = proxy_output.RelayedProxy(
        command=[COMMAND],
        public_url=f"http://127.0.0.1:{free_port()}",
        api_url=f"http://127.0.0.1:{api}",
        auth_token="the hub's secret",
        pid_file=str(tmp_path / "proxy.pid"),
        app=mock.Mock(subdomain_host="", internal_ssl=False),
        hub=mock.Mock(url="http://127.0.0.1:1/hub/"),
        log=logger,
    )

    async def play():
        await chp.start()
        pid = chp.proxy_process.pid
        try:
            await asyncio.sleep(1)
            before = resident_kb(pid)
            threads, sent = flood(api, 5, "/api/routes/" + "a" * 15_000)
            while any(t.is_alive() for t in threads):
                await asyncio.sleep(0.1)
            return before, resident_kb(pid), sum(sent)
        finally:
            chp.proxy_process.terminate()
            chp.proxy_process.wait()
            await asyncio.sleep(0.5)

    before, after, sent = asyncio.run(play())
    assert sent > 500, sent
    # 15 KB logged a request: paused, it grew by hundreds of MB in these 5 s
    assert after - before < 100_000, (before, after, sent)
