#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""A small HTTP/1.1 server for the stateless-front tests: answers every request with the
method, path, Host, body length and the SHA-256 of the body it received, as JSON, so a test
can prove the request reached the application intact. Listens on IPv4 and IPv6."""
import hashlib
import json
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        # tcpi_options: 1 timestamps, 2 SACK, 4 window scaling, as this socket negotiated.
        info = self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        out = json.dumps({"method": self.command, "path": self.path,
                          "host": self.headers.get("Host"), "length": len(body),
                          "sha256": hashlib.sha256(body).hexdigest(),
                          "tcp_options": info[5], "snd_wscale": info[6] & 15,
                          "rcv_wscale": info[6] >> 4}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, *a):
        pass


class Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


if __name__ == "__main__":
    Server(("::", int(sys.argv[1]) if len(sys.argv) > 1 else 80), Handler).serve_forever()
