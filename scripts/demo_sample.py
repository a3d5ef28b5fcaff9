#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Sample sluiced's /metrics (loopback) once a second for the demo's chart. Writes a CSV:
time (s), phase, then per tenant: goodput/s, shed/s, queue wait p99 (ms) over the last
second. The phase is read from a file the demo script rewrites as it goes. Runs until the
stop file appears.

  demo_sample.py URL PHASE_FILE STOP_FILE OUT.csv TENANT [TENANT ...]
"""
import os
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(url):
    text = urllib.request.urlopen(url, timeout=2).read().decode()
    good, shed, wait = {}, {}, {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            t = s.labels.get("tenant")
            if s.name == "sluice_gateway_goodput_total":
                good[t] = s.value
            elif s.name == "sluice_gateway_shed_total":
                shed[t] = shed.get(t, 0) + s.value
            elif s.name == "sluice_gateway_queue_wait_seconds_bucket":
                wait.setdefault(t, {})[s.labels["le"]] = s.value
    return good, shed, wait


def p99_ms(cur, prev):
    """The p99 of the waits recorded between two scrapes, from the bucket deltas."""
    if not cur:
        return 0.0
    les = sorted((float("inf") if k == "+Inf" else float(k), k) for k in cur)
    total = cur["+Inf"] - (prev or {}).get("+Inf", 0)
    if total <= 0:
        return 0.0
    for le, k in les:
        if cur[k] - (prev or {}).get(k, 0) >= 0.99 * total:
            return (le if le != float("inf") else 10.0) * 1000
    return 0.0


def main():
    url, phase_file, stop_file, out = sys.argv[1:5]
    tenants = sys.argv[5:]
    start = time.monotonic()
    prev = scrape(url)
    with open(out, "w") as f:
        f.write("t,phase," + ",".join("goodput_%s" % t for t in tenants) + "," +
                ",".join("shed_%s" % t for t in tenants) + "," +
                ",".join("wait_p99_ms_%s" % t for t in tenants) + "\n")
        while not os.path.exists(stop_file):
            time.sleep(1.0)
            try:
                cur = scrape(url)
            except OSError:
                continue
            try:
                phase = open(phase_file).read().strip() or "-"
            except OSError:
                phase = "-"
            row = ["%.1f" % (time.monotonic() - start), phase]
            row += ["%.1f" % (cur[0].get(t, 0) - prev[0].get(t, 0)) for t in tenants]
            row += ["%.1f" % (cur[1].get(t, 0) - prev[1].get(t, 0)) for t in tenants]
            row += ["%.1f" % p99_ms(cur[2].get(t), prev[2].get(t)) for t in tenants]
            f.write(",".join(row) + "\n")
            f.flush()
            prev = cur


if __name__ == "__main__":
    main()
