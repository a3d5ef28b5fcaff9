# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""A raw HTTP/1.1 client for the gateway suites: bytes exactly as given (malformed ones
too), from a chosen loopback source address, and every response read back in order.

    import rawhttp
    r = rawhttp.exchange(port, b"GET / HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n", src="127.0.2.1")
    r["responses"]  -> [{"status": 401, "headers": {...}, "body": "..."}, ...]
    r["closed"]     -> True when the server closed the connection (EOF or reset)

Responses are read by their Content-Length (the gateway and evhttp always send one); the
reader stops at EOF, at a reset, or after `timeout` seconds of silence.
"""
import socket
import time


def connect(port, src=None, timeout=5.0, host="127.0.0.1", sport=0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if src or sport:
        s.bind((src or "0.0.0.0", sport))
    s.connect((host, port))
    return s


def parse(data):
    """Split @data into responses; returns (responses, rest)."""
    out = []
    while True:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            return out, data
        head = data[:end].decode("latin-1").split("\r\n")
        parts = head[0].split(" ", 2)
        headers = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        if len(data) < end + 4 + n:
            return out, data
        body = data[end + 4:end + 4 + n]
        out.append({"status": int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0,
                    "reason": parts[2] if len(parts) > 2 else "", "headers": headers,
                    "body": body.decode("utf-8", "replace")})
        data = data[end + 4 + n:]


def read_all(s, timeout=2.0, want=None):
    """Read responses until EOF, a reset, `timeout` s of silence, or `want` responses."""
    data, closed = b"", False
    s.settimeout(timeout)
    while True:
        if want is not None and len(parse(data)[0]) >= want:
            break
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except (ConnectionResetError, BrokenPipeError):
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
    responses, rest = parse(data)
    return {"responses": responses, "closed": closed, "trailing": len(rest)}


def exchange(port, raw, src=None, timeout=2.0, want=None, host="127.0.0.1", sport=0):
    """Send @raw on a fresh connection (from @src, port @sport if given, to @host) and read
    what comes back; with @want None, up to the server's close, so that the server is the
    first to close and the client leaves no TIME_WAIT behind."""
    s = connect(port, src, host=host, sport=sport)
    try:
        s.sendall(raw)
    except (ConnectionResetError, BrokenPipeError):
        return {"responses": [], "closed": True, "trailing": 0}
    t0 = time.monotonic()
    r = read_all(s, timeout, want)
    r["ms"] = (time.monotonic() - t0) * 1000
    s.close()
    return r


def still_open(s, wait=0.05):
    """Is @s still open (no EOF, no reset, nothing unread)? Does not block long."""
    s.settimeout(wait)
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except socket.timeout:
        return True
    except OSError:
        return False
