"""``serve`` answers every request, error responses included, with the page's CSP and
security headers: other methods get 405, two Host headers 400, oversized headers 431; the
listen backlog fits a browser's burst and idle connections time out. Real server on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from test_pairs import ARTIFACT, COMPANION, write
from tlnetron.pages.serve import CONTENT_SECURITY_POLICY, LOOPBACK, _Handler, _Server, _site, serve_bytes


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("pair")
    write(folder, 2)
    served = serve_bytes(
        (ARTIFACT, (folder / ARTIFACT).read_bytes()), (COMPANION, (folder / COMPANION).read_bytes()), browse=False
    )
    yield int(served.url.split(":")[2].split("/")[0])
    served.stop()


def ask(port: int, raw: bytes) -> bytes:
    with socket.create_connection((LOOPBACK, port), timeout=30) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    return reply


@pytest.mark.parametrize("method", ["POST", "OPTIONS", "PUT", "DELETE", "TRACE", "get"])
def test_other_methods_get_405_with_the_csp(port: int, method: str) -> None:
    reply = ask(port, f"{method} / HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\nContent-Length: 0\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.") and reply.split(b" ")[1] == b"405", reply[:200]
    assert f"Content-Security-Policy: {CONTENT_SECURITY_POLICY}".encode() in reply and b"Allow: GET, HEAD" in reply


@pytest.mark.parametrize(
    "raw, status",
    [
        (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", b"414"),
        (b"GET / HTTP/1.1\r\nX: " + b"a" * 70000 + b"\r\n\r\n", b"431"),
        (b"GET / HTTP/1.1\r\n" + b"".join(b"X%d: y\r\n" % i for i in range(200)) + b"\r\n", b"431"),
    ],
)
def test_http_servers_own_errors_carry_the_csp(port: int, raw: bytes, status: bytes) -> None:
    reply = ask(port, raw)
    assert reply.startswith(b"HTTP/1.") and reply.split(b" ")[1] == status, reply[:200]
    assert f"Content-Security-Policy: {CONTENT_SECURITY_POLICY}".encode() in reply


def test_two_host_headers_get_400(port: int) -> None:
    reply = ask(
        port, f"GET /netron/index.html HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\nHost: evil.example\r\n\r\n".encode()
    )
    assert reply.startswith(b"HTTP/1.") and reply.split(b" ")[1] == b"400", reply[:200]


def _get(port: int, path: str = "/tlnetron/files.json") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\nConnection: close\r\n\r\n".encode()


def _reply(sock: socket.socket) -> bytes:
    reply = b""
    while chunk := sock.recv(65536):
        reply += chunk
    return reply


def _answered(reply: bytes) -> bool:
    head, _, body = reply.partition(b"\r\n\r\n")
    length = [line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    return (
        head.startswith(b"HTTP/1.")
        and head.split(b" ")[1] == b"200"
        and f"Content-Security-Policy: {CONTENT_SECURITY_POLICY}".encode() in head
        and len(length) == 1
        and len(body) == int(length[0])
    )


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server hung up: recv sees the end (or a reset) within the socket's timeout."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_half_open_connections_are_held_while_other_requests_are_answered(port: int) -> None:
    """Each connection has its own thread: ones stuck mid request line do not stop the server answering."""
    stuck = [socket.create_connection((LOOPBACK, port), timeout=30) for _ in range(20)]
    try:
        for sock in stuck:
            sock.sendall(b"GET /tlnetron/fil")
        with socket.create_connection((LOOPBACK, port), timeout=30) as sock:
            sock.sendall(_get(port))
            assert _answered(_reply(sock))
        for sock in stuck:  # still open: the server is waiting for the rest of the line
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)
    finally:
        for sock in stuck:
            sock.close()


def test_a_half_open_connection_is_closed_after_the_idle_timeout(port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The handler's own ``timeout`` (read as each connection starts) lowered so the test is quick;
    the bound waited is far above it."""
    assert _Handler.timeout is not None and _Handler.timeout > 0
    monkeypatch.setattr(_Handler, "timeout", 0.5)
    with socket.create_connection((LOOPBACK, port), timeout=60) as sock:
        sock.sendall(b"GET /tlnetron/files.json HT")
        assert _closed_by_server(sock)
    with socket.create_connection((LOOPBACK, port), timeout=60) as sock:  # nothing sent at all
        assert _closed_by_server(sock)
    with socket.create_connection((LOOPBACK, port), timeout=60) as sock:  # the server still answers
        sock.sendall(_get(port))
        assert _answered(_reply(sock))


def test_the_listen_backlog_holds_a_browsers_burst(tmp_path: Path) -> None:
    """100 connections made while the server accepts none yet all complete (the kernel queues up to
    the backlog; past it a connect hangs), then every one gets a whole 200 with the CSP."""
    burst = 100
    assert _Server.request_queue_size >= burst
    write(tmp_path, 2)
    handler: type[_Handler] = type("_BurstHandler", (_Handler,), {})
    httpd = type("_BurstServer", (_Server,), {"address_family": socket.AF_INET})((LOOPBACK, 0), handler)
    port = int(httpd.server_address[1])
    handler.site = _site(
        (ARTIFACT, (tmp_path / ARTIFACT).read_bytes()),
        (COMPANION, (tmp_path / COMPANION).read_bytes()),
        frozenset({f"{LOOPBACK}:{port}"}),
    )
    socks: list[socket.socket] = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    try:
        for _ in range(burst):
            socks.append(socket.create_connection((LOOPBACK, port), timeout=30))
        thread.start()
        for i, sock in enumerate(socks):
            sock.sendall(_get(port, "/tlnetron/files.json" if i % 2 else "/tlnetron/data/model"))
        replies = [_reply(sock) for sock in socks]
        assert sum(_answered(reply) for reply in replies) == burst, [r[:80] for r in replies if not _answered(r)][:3]
    finally:
        for sock in socks:
            sock.close()
        if thread.is_alive():
            httpd.shutdown()
        httpd.server_close()
