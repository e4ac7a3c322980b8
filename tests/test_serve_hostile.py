"""``serve`` answers every request, error responses included, with the page's CSP and
security headers: other methods get 405, two Host headers 400, oversized headers 431; the
listen backlog fits a browser's burst and idle connections time out. Real server on 127.0.0.1."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from test_pairs import ARTIFACT, COMPANION, write
from tlnetron.pages.serve import CONTENT_SECURITY_POLICY, LOOPBACK, _Handler, _Server, serve_bytes


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("pair")
    write(folder, 2)
    served = serve_bytes((ARTIFACT, (folder / ARTIFACT).read_bytes()), (COMPANION, (folder / COMPANION).read_bytes()), browse=False)
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


@pytest.mark.parametrize("raw, status", [
    (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", b"414"),
    (b"GET / HTTP/1.1\r\nX: " + b"a" * 70000 + b"\r\n\r\n", b"431"),
    (b"GET / HTTP/1.1\r\n" + b"".join(b"X%d: y\r\n" % i for i in range(200)) + b"\r\n", b"431"),
])
def test_http_servers_own_errors_carry_the_csp(port: int, raw: bytes, status: bytes) -> None:
    reply = ask(port, raw)
    assert reply.startswith(b"HTTP/1.") and reply.split(b" ")[1] == status, reply[:200]
    assert f"Content-Security-Policy: {CONTENT_SECURITY_POLICY}".encode() in reply


def test_two_host_headers_get_400(port: int) -> None:
    reply = ask(port, f"GET /netron/index.html HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\nHost: evil.example\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.") and reply.split(b" ")[1] == b"400", reply[:200]


def test_idle_connections_time_out_and_the_backlog_fits_a_burst() -> None:
    assert _Handler.timeout is not None and _Handler.timeout > 0
    assert _Server.request_queue_size >= 64
