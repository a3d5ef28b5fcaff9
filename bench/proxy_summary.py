#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bench/proxy.sh's overhead table: the medians of its wrk runs (one JSON line each, labelled
"ROUTE cN TARGET"), each proxy's p50, p99 and requests/s as a ratio to going direct. The table
goes to stderr, one JSON line of every median and ratio to stdout."""
import collections
import json
import statistics
import sys

runs = collections.defaultdict(list)
targets = []  # the proxies, in the order they ran: nginx, sluice, then bench/proxy.sh's ALSO
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs[r["label"]].append(r)
    t = r["label"].split()[-1]
    if t != "direct" and t not in targets:
        targets.append(t)


def med(label, key):
    return statistics.median(x[key] for x in runs[label])


out = {"label": "overhead", "rounds": len(runs.get("static c1 direct", []))}
for route in ("static", "check"):
    for c in (1, 16):
        d = "%s c%d direct" % (route, c)
        if d not in runs:
            continue
        for k in ("p50_ms", "p99_ms", "rps"):
            out["%s_c%d_direct_%s" % (route, c, k)] = round(med(d, k), 3)
        for target in targets:
            t = "%s c%d %s" % (route, c, target)
            if t not in runs:
                continue
            for k in ("p50_ms", "p99_ms", "rps"):
                out["%s_c%d_%s_%s" % (route, c, target, k)] = round(med(t, k), 3)
                out["%s_c%d_%s_%s_ratio" % (route, c, target, k)] = round(med(t, k) / med(d, k), 2)
            cpu = med(t, "proxy_cpu_us_per_req")
            out["%s_c%d_%s_cpu_us_per_req" % (route, c, target)] = cpu
            print("%-6s %2d conn  %-6s p50 %6.3f ms (direct %6.3f) = %5.2fx   p99 %6.3f ms "
                  "(direct %6.3f) = %5.2fx   %7.0f req/s (direct %7.0f) = %4.2fx   "
                  "proxy CPU %5.1f us/req   non-2xx %d"
                  % (route, c, target, med(t, "p50_ms"), med(d, "p50_ms"),
                     med(t, "p50_ms") / med(d, "p50_ms"), med(t, "p99_ms"), med(d, "p99_ms"),
                     med(t, "p99_ms") / med(d, "p99_ms"), med(t, "rps"), med(d, "rps"),
                     med(t, "rps") / med(d, "rps"), cpu, sum(x["non_2xx"] for x in runs[t])),
                  file=sys.stderr)
print(json.dumps(out))
