#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Scrape a /metrics URL (loopback only), parse it with the Prometheus client's own text
parser (a malformed exposition raises), and print one sample's value, or "" when absent.

  prom.py URL NAME [LABEL=VALUE ...]      the value of the sample with exactly those labels
  prom.py URL --check                     parse only: prints the number of samples
"""
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main():
    url = sys.argv[1]
    if not url.startswith(("http://127.0.0.1", "http://[::1]", "http://localhost")):
        sys.exit("prom.py: loopback only")
    text = urllib.request.urlopen(url, timeout=5).read().decode()
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
