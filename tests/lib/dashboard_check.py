#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Check a Grafana dashboard against a live /metrics (loopback only): every sluice_* series an
expression names must be one the daemon exports. The exposition is parsed with the Prometheus
client's parser first (it raises on malformed text). Prints the missing names, one per line,
and exits 1 when there are any.

  dashboard_check.py DASHBOARD.json URL
"""
import json
import re
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main():
    dash, url = sys.argv[1], sys.argv[2]
    if not url.startswith(("http://127.0.0.1", "http://[::1]")):
        sys.exit("dashboard_check.py: loopback only")
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    list(text_string_to_metric_families(text))  # raises on a malformed exposition
    exported = set()
    for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M):
        name, kind = m.group(1), m.group(2)
        exported.add(name)
        if kind == "histogram":
            exported |= {name + "_bucket", name + "_sum", name + "_count"}
    wanted = set()
    for p in json.load(open(dash))["panels"]:
        for t in p.get("targets", []):
            wanted |= set(re.findall(r"\bsluice_[a-z0-9_]+", t["expr"]))
    missing = sorted(wanted - exported)
    print("\n".join(missing))
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
