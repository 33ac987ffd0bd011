"""The browser the tests start reaches nothing but loopback: watched through its own
sockets, and probed with an address refused before any connection."""

from __future__ import annotations

import http.server
import ipaddress
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import CHROMIUM

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"), reason="needs Debian's chromium"
)
WATCH_SECONDS = 5.0


def browser_processes() -> list[int]:
    """This test's descendants that run Chromium (its browser, renderers and helpers)."""
    found, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                todo += [
                    int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()
                ]
            if "chromium" in os.readlink(f"/proc/{pid}/exe"):
                found.append(pid)
        except OSError:
            continue  # ended meanwhile
    return found


def _address(hexed: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as /proc/net prints it: 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(hexed)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    found = ipaddress.ip_address(words)
    mapped = getattr(found, "ipv4_mapped", None)
    return mapped or found


def foreign_peers(pids: list[int]) -> set[str]:
    """The non-loopback peers of these processes' TCP and UDP sockets (an unsandboxed
    Chromium shares this test's network namespace)."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:[") : -1])
        except OSError:
            continue  # ended meanwhile
    peers = set()
    for kind in ("tcp", "tcp6", "udp", "udp6"):
        for line in Path(f"/proc/self/net/{kind}").read_text().splitlines()[1:]:
            fields = line.split()
            host, port = fields[2].split(":")
            peer = _address(host)
            if fields[9] in inodes and not peer.is_unspecified and not peer.is_loopback:
                peers.add(f"{kind} {peer}:{int(port, 16)}")
    return peers


class _Watch(threading.Thread):
    """The browser's foreign peers, looked at every 20 ms until stopped."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seen: set[str] = set()
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.02):
            self.seen |= foreign_peers(browser_processes())


class _Server(http.server.ThreadingHTTPServer):
    connections = 0

    def get_request(self) -> tuple[socket.socket, Any]:
        self.connections += 1
        return super().get_request()


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>loopback</title><p>here"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served() -> Iterator[tuple[_Server, _Server]]:
    """A page on 127.0.0.1, and a server on 127.0.0.2 standing for any other address: still
    loopback, so even a browser not blocked would send nothing off this machine."""
    servers = (_Server(("127.0.0.1", 0), _Page), _Server(("127.0.0.2", 0), _Page))
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield servers
    for server in servers:
        server.shutdown()
        server.server_close()


def test_the_browser_reaches_loopback_and_nothing_else(browser_page, served) -> None:
    page, _errors = browser_page
    allowed, other = served
    watch = _Watch()
    watch.start()
    assert browser_processes()
    assert page.goto(f"http://127.0.0.1:{allowed.server_address[1]}/").status == 200
    # An address not loopback's own is refused before a connection is opened ...
    with pytest.raises(Exception, match="ERR_NAME_NOT_RESOLVED"):
        page.goto(f"http://127.0.0.2:{other.server_address[1]}/", timeout=10_000)
    assert other.connections == 0
    # ... and so, that shown, a name is refused without a DNS query leaving.
    with pytest.raises(Exception, match="ERR_NAME_NOT_RESOLVED"):
        page.goto("http://probe.invalid/", timeout=10_000)
    time.sleep(WATCH_SECONDS)  # what the browser does of itself after a page
    watch.stopping.set()
    watch.join()
    assert not watch.seen, watch.seen


def test_the_watch_sees_a_foreign_peer() -> None:
    """A UDP socket connected to a documentation address (connecting one sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))
        assert foreign_peers([os.getpid()]) == {"udp 192.0.2.1:9"}
