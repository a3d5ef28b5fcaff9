#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Sample a sluiced's /metrics every INTERVAL seconds until SIGINT or SIGTERM, then print one
line: the upstream's learned limit (mean, and how often below its ceiling) and forwards in
flight (mean, and the share of samples at each whole value), the requests shed during the
sampling by reason, and the mean service time, a forward's round trip at this sluiced.
With --service, that of another sluiced too (the service behind it: there, the hash's wall
time), and what share of a forward's round trip the service spent on it.

Used by bench/proxy.sh's monday mode to say where a shortfall in goodput comes from: forwards
held back by the learned limit, by the capacity bucket (in flight below the limit while
requests are queued), the queue's own sheds, or the hand-off between forwards.

Usage: metrics_sample.py HOST:PORT INTERVAL [--service HOST:PORT] [--raw FILE]
       (--raw: every sample's time, limit and in flight, one line each)
Parsed with the Prometheus client's text parser, as tests/lib/prom.py does.
"""
import argparse
import collections
import signal
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

stop = False


def on_signal(_sig, _frm):
    global stop
    stop = True


def scrape(addr):
    """Every sample as (name, labels) -> value, or None when the scrape failed."""
    try:
        with urllib.request.urlopen("http://%s/metrics" % addr, timeout=1) as r:
            text = r.read().decode()
    except OSError:
        return None
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def total(vals, name):
    return sum(v for (n, _), v in vals.items() if n == name)


def sheds(vals):
    out = collections.Counter()
    for (n, labels), v in vals.items():
        if n == "sluice_gateway_shed_total":
            out[dict(labels).get("reason", "?")] += v
    return out


def mean_service_ms(vals):
    n = total(vals, "sluice_gateway_service_seconds_count")
    return 1000 * total(vals, "sluice_gateway_service_seconds_sum") / n if n else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("addr")
    ap.add_argument("interval", type=float)
    ap.add_argument("--service")
    ap.add_argument("--raw")
    a = ap.parse_args()
    raw = open(a.raw, "w") if a.raw else None
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    first = last = None
    limits, ceilings, inflight = [], [], []
    while not stop:
        v = scrape(a.addr)
        if v is not None:
            first = first or v
            last = v
            limits.append(total(v, "sluice_gateway_upstream_limit"))
            ceilings.append(total(v, "sluice_gateway_upstream_limit_ceiling"))
            inflight.append(total(v, "sluice_gateway_upstream_in_flight"))
            if raw:
                raw.write("%.3f %g %g\n" % (time.time(), limits[-1], inflight[-1]))
        time.sleep(a.interval)
    if not limits:
        print("front: no metrics sampled")
        return
    n = len(limits)
    below = sum(1 for lim, cap in zip(limits, ceilings) if lim < cap)
    hist = collections.Counter(int(x) for x in inflight)
    shed = sheds(last) - sheds(first)
    line = ("front: upstream limit mean %.2f (below its ceiling of %g in %d%% of %d samples), "
            "in flight mean %.2f (%s); shed %s; a forward %.2f ms" % (
                sum(limits) / n, ceilings[-1], round(100 * below / n), n, sum(inflight) / n,
                ", ".join("%d: %d%%" % (k, round(100 * hist[k] / n)) for k in sorted(hist)),
                ", ".join("%s %d" % (k, v) for k, v in shed.most_common() if v > 0) or "none",
                mean_service_ms(last)))
    svc = scrape(a.service) if a.service else None
    if svc is not None and mean_service_ms(last) > 0:
        line += ", its hash %.2f ms: the service busy %.1f%% of the time it is owed" % (
            mean_service_ms(svc), 100 * mean_service_ms(svc) / mean_service_ms(last))
    print(line)


if __name__ == "__main__":
    main()
