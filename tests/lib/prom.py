#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Scrape a /metrics URL (loopback only), parse it with the Prometheus client's own text
parser (a malformed exposition raises), and print one sample's value, or "" when absent.

  prom.py URL NAME [LABEL=VALUE ...]      the value of the sample with exactly those labels
  prom.py URL --check                     parse only: prints the number of samples
  prom.py URL --promtool                  also `promtool check metrics` (Prometheus's own
                                          parser and linter): prints "ok" or its complaints
"""
import os
import shutil
import subprocess
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main():
    url = sys.argv[1]
    if not url.startswith(("http://127.0.0.1", "http://[::1]", "http://localhost")):
        sys.exit("prom.py: loopback only")
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    if sys.argv[2] == "--promtool":
        tool = os.environ.get("PROMTOOL") or shutil.which("promtool") or "/usr/local/lib/sluice/promtool"
        if not os.access(tool, os.X_OK):
            print("no promtool")
            return
        r = subprocess.run([tool, "check", "metrics"], input=text.encode(),
                           capture_output=True, timeout=30)
        out = (r.stdout + r.stderr).decode().strip()
        print("ok" if r.returncode == 0 and not out else out or "rc %d" % r.returncode)
        return
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    if sys.argv[2] == "--check":
        print(len(samples))
        return
    want = dict(a.split("=", 1) for a in sys.argv[3:])
    for s in samples:
        if s.name == sys.argv[2] and all(s.labels.get(k) == v for k, v in want.items()):
            v = s.value
            print(int(v) if v == int(v) else v)
            return
    print("")


if __name__ == "__main__":
    main()
