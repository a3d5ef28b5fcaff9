#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Sample a sluiced's /metrics every INTERVAL seconds until SIGINT, then print one line: the
upstream's learned limit and forwards in flight (mean and share of samples at each whole
value), and the requests shed during the sampling by reason.

Used by bench/proxy.sh's monday mode to say where a shortfall in goodput comes from: forwards
held back by the learned limit, by the capacity bucket (in flight below the limit while
requests are queued), or the queue's own sheds.

Usage: metrics_sample.py HOST:PORT INTERVAL [RAW]   (RAW: a file for every sample's
time, limit and in flight)
"""
import collections
import signal
import sys
import time
import urllib.request

stop = False


def on_int(_sig, _frm):
    global stop
    stop = True


def scrape(url):
    vals = {}
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            text = r.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        name, _, v = line.rpartition(" ")
        try:
            vals[name] = float(v)
        except ValueError:
            pass
    return vals


def pick(vals, prefix):
    return sum(v for k, v in vals.items() if k.startswith(prefix))


def sheds(vals):
    out = collections.Counter()
    for k, v in vals.items():
        if k.startswith("sluice_gateway_shed_total{") and 'reason="' in k:
            out[k.split('reason="', 1)[1].split('"', 1)[0]] += v
    return out


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    raw = open(sys.argv[3], "w") if len(sys.argv) == 4 else None
    url = "http://%s/metrics" % sys.argv[1]
    interval = float(sys.argv[2])
    signal.signal(signal.SIGINT, on_int)
    signal.signal(signal.SIGTERM, on_int)
    first = last = None
    limits, inflight = [], []
    while not stop:
        v = scrape(url)
        if v is not None:
            if first is None:
                first = v
            last = v
            limits.append(pick(v, "sluice_gateway_upstream_limit{"))
            inflight.append(pick(v, "sluice_gateway_upstream_in_flight{"))
            if raw:
                raw.write("%.3f %g %g\n" % (time.time(), limits[-1], inflight[-1]))
        time.sleep(interval)
    if not limits:
        print("front: no metrics sampled")
        return
    n = len(limits)
    below = sum(1 for x in limits if x < 2.0) if limits else 0
    hist = collections.Counter(int(x) for x in inflight)
    shed = sheds(last) - sheds(first)
    print(
        "front: upstream limit mean %.2f (below 2 in %d%% of %d samples), in flight mean %.2f (%s); shed %s"
        % (
            sum(limits) / n,
            round(100 * below / n),
            n,
            sum(inflight) / n,
            ", ".join("%d: %d%%" % (k, round(100 * hist[k] / n)) for k in sorted(hist)),
            ", ".join("%s %d" % (k, v) for k, v in shed.most_common() if v > 0) or "none",
        )
    )


if __name__ == "__main__":
    main()
