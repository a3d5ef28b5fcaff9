#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Sample sluiced's /metrics (loopback) once a second for the demo's chart (demo_chart.gp).

Every row is the difference between two scrapes, so each is what happened in that second,
from sluiced's own counters (nothing here is estimated or made up):

  t                      seconds since T0 (the demo's clock: demo.sh's phases.csv uses it)
  per tenant T:
    offered_T            requests reaching the gateway per second (requests_total): what
                         the load generator sent that arrived; the demo checks the sum
                         against the generator's own count of what it sent
    goodput_T            logins answered 200 before their deadline, per second
    shed_T               429s per second (every reason)
    resv_T               the tenant's reservation (reservation_units, from the config) in
                         logins per second at what a login's hash measured in that second
                         (cost_units_total / hashes); empty in a second without hashes
    wait_mean_T          queue wait (admission to a worker) in ms, the mean over the
                         second (the histogram's _sum / _count: exact)
    wait_p99_T           its p99 from the histogram's bucket deltas, interpolated inside
                         the bucket as Prometheus' histogram_quantile does (the buckets
                         are coarse: 0.5, 1, 2.5, 5 s), with --wait-bound-ms as the top of
                         the bucket that holds it (the requests' deadline: no job waits
                         past it, it is dropped at dequeue; without the bound a wait of
                         2.6 s would be drawn at up to 5 s); both empty in a second where
                         nothing of T reached a worker (no wait to speak of, not a 0)
    wait_over1s_T        how many of its waits that second were above 1 s
  the gateway as a whole:
    hashes               hashes finished per second (all tenants)
    units_per_login      cost units a hash measured (1 unit = 100 us of CPU)
    svc_p50              a hash's wall time on a worker, ms (p50)
    depth, limit, lifo, busy
                         the queue's depth, its Little's-law limit, 1 while it serves LIFO,
                         workers hashing (gauges, at the scrape)
    scrape_ms            how long the scrape took: the gateway's event loop answers it,
                         so a slow scrape is a loop that was busy
  the edge, per source class C (sluice_xdp_decisions_total, as sluicectl stats counts):
    edge_pass_C          connections admitted per second (passed + first_admitted)
    edge_shed_C          shed per second (shed_prefix + shed_parent)
    edge_syn             SYNs answered with a cookie SYN-ACK per second, every class
                         (charged nothing: a SYN proves no source)

  demo_sample.py --url URL --t0 EPOCH --stop FILE --out OUT.csv
                 --tenants a,b,... --classes c1,c2,... [--wait-bound-ms MS]

Runs until the stop file appears.
"""
import argparse
import os
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

EDGE_PASS = ("passed", "first_admitted")
EDGE_SHED = ("shed_prefix", "shed_parent")
EDGE_SYN = ("handshake",)


def scrape(url):
    t0 = time.monotonic()
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    took = (time.monotonic() - t0) * 1000.0
    m = {"scrape_ms": took, "req": {}, "good": {}, "shed": {}, "resv": {}, "units": {},
         "wait": {}, "wsum": {}, "svc": {}, "edge": {}, "gauge": {}}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            t = s.labels.get("tenant")
            n = s.name
            if n == "sluice_gateway_requests_total":
                m["req"][t] = s.value
            elif n == "sluice_gateway_goodput_total":
                m["good"][t] = s.value
            elif n == "sluice_gateway_shed_total":
                m["shed"][t] = m["shed"].get(t, 0) + s.value
            elif n == "sluice_gateway_reservation_units":
                m["resv"][t] = s.value
            elif n == "sluice_gateway_cost_units_total":
                m["units"][t] = s.value
            elif n == "sluice_gateway_queue_wait_seconds_bucket":
                m["wait"].setdefault(t, {})[s.labels["le"]] = s.value
            elif n == "sluice_gateway_queue_wait_seconds_sum":
                m["wsum"][t] = s.value
            elif n == "sluice_gateway_service_seconds_bucket":
                m["svc"].setdefault(t, {})[s.labels["le"]] = s.value
            elif n == "sluice_xdp_decisions_total":
                k = (s.labels.get("class"), s.labels.get("reason"))
                m["edge"][k] = s.value
            elif n in ("sluice_gateway_queue_depth", "sluice_gateway_queue_limit",
                       "sluice_gateway_queue_lifo", "sluice_gateway_workers_busy"):
                m["gauge"][n[len("sluice_gateway_"):]] = s.value
    return m


def bucket_delta(cur, prev):
    """Per-bucket counts between two scrapes of one cumulative histogram: [(le, count)]."""
    les = sorted((float("inf") if k == "+Inf" else float(k), k) for k in cur)
    return [(le, cur[k] - (prev or {}).get(k, 0)) for le, k in les]


def merge(hists):
    out = {}
    for h in hists:
        for k, v in h.items():
            out[k] = out.get(k, 0) + v
    return out


def quantile_ms(cur, prev, q, bound_s=None):
    """The q quantile of what a histogram recorded between two scrapes, in ms, or None when
    it recorded nothing. Linear inside the bucket that holds the rank (Prometheus'
    histogram_quantile), whose top is taken as bound_s when that is lower (nothing recorded
    can exceed it); the +Inf bucket answers with the highest finite bound."""
    if not cur:
        return None
    rows = bucket_delta(cur, prev)
    total = rows[-1][1]
    if total <= 0:
        return None
    rank, lo = q * total, 0.0
    below = 0.0
    for le, cum in rows:
        if cum >= rank:
            if le == float("inf"):
                return lo * 1000.0
            inb = cum - below
            frac = (rank - below) / inb if inb > 0 else 1.0
            hi = min(le, bound_s) if bound_s and bound_s > lo else le
            return (lo + (hi - lo) * frac) * 1000.0
        below, lo = cum, le
    return lo * 1000.0


def fmt(v):
    return "" if v is None else "%.1f" % v


def row(t, cur, prev, tenants, classes, bound_s):
    d = lambda key, k: cur[key].get(k, 0) - prev[key].get(k, 0)
    count = lambda h, p: (h or {}).get("+Inf", 0) - (p or {}).get("+Inf", 0)
    out = ["%.1f" % t]
    hashes = sum(count(cur["svc"].get(x), prev["svc"].get(x)) for x in tenants)
    units = sum(d("units", x) for x in tenants)
    upl = units / hashes if hashes > 0 else None
    for x in tenants:
        out.append("%.0f" % d("req", x))
    for x in tenants:
        out.append("%.0f" % d("good", x))
    for x in tenants:
        out.append("%.0f" % d("shed", x))
    for x in tenants:
        r = cur["resv"].get(x)
        out.append(fmt(r / upl if r is not None and upl else None))
    for x in tenants:
        n = count(cur["wait"].get(x), prev["wait"].get(x))
        out.append(fmt(d("wsum", x) * 1000.0 / n if n > 0 else None))
    for x in tenants:
        out.append(fmt(quantile_ms(cur["wait"].get(x), prev["wait"].get(x), 0.99, bound_s)))
    for x in tenants:
        h, p = cur["wait"].get(x) or {}, prev["wait"].get(x) or {}
        out.append("%.0f" % ((h.get("+Inf", 0) - p.get("+Inf", 0)) -
                             (h.get("1", 0) - p.get("1", 0))))
    allsvc = merge(cur["svc"].get(x, {}) for x in tenants)
    prevsvc = merge(prev["svc"].get(x, {}) for x in tenants)
    g = cur["gauge"]
    out += ["%.0f" % hashes, fmt(upl), fmt(quantile_ms(allsvc, prevsvc, 0.5)),
            "%.0f" % g.get("queue_depth", 0), "%.0f" % g.get("queue_limit", 0),
            "%.0f" % g.get("queue_lifo", 0), "%.0f" % g.get("workers_busy", 0),
            "%.1f" % cur["scrape_ms"]]
    for c in classes:
        out.append("%.0f" % sum(d("edge", (c, r)) for r in EDGE_PASS))
    for c in classes:
        out.append("%.0f" % sum(d("edge", (c, r)) for r in EDGE_SHED))
    out.append("%.0f" % sum(v - prev["edge"].get(k, 0) for k, v in cur["edge"].items()
                            if k[1] in EDGE_SYN))
    return out


def header(tenants, classes):
    h = ["t"]
    for col in ("offered", "goodput", "shed", "resv", "wait_mean", "wait_p99", "wait_over1s"):
        h += ["%s_%s" % (col, x) for x in tenants]
    h += ["hashes", "units_per_login", "svc_p50", "depth", "limit", "lifo", "busy",
          "scrape_ms"]
    h += ["edge_pass_%s" % c for c in classes]
    h += ["edge_shed_%s" % c for c in classes]
    h.append("edge_syn")
    return h


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--t0", type=float, required=True, help="the demo's start, epoch seconds")
    ap.add_argument("--stop", required=True, help="stop once this file exists")
    ap.add_argument("--out", required=True)
    ap.add_argument("--tenants", required=True)
    ap.add_argument("--classes", required=True)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--wait-bound-ms", type=float, default=0,
                    help="no queue wait exceeds this (the requests' deadline)")
    a = ap.parse_args()
    tenants = [x for x in a.tenants.split(",") if x]
    classes = [x for x in a.classes.split(",") if x]
    prev = None
    for _ in range(50):
        try:
            prev = scrape(a.url)
            break
        except OSError:
            time.sleep(0.1)
    if prev is None:
        sys.exit("demo_sample: %s does not answer" % a.url)
    with open(a.out, "w") as f:
        f.write(",".join(header(tenants, classes)) + "\n")
        due = time.monotonic()
        while not os.path.exists(a.stop):
            due += a.interval
            time.sleep(max(0.0, due - time.monotonic()))
            try:
                cur = scrape(a.url)
            except OSError as e:
                print("demo_sample: scrape failed: %s" % e, file=sys.stderr)
                continue
            f.write(",".join(row(time.time() - a.t0, cur, prev, tenants, classes,
                                   a.wait_bound_ms / 1000.0)) + "\n")
            f.flush()
            prev = cur


if __name__ == "__main__":
    main()
