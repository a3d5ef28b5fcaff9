#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Check a Grafana dashboard against a live /metrics (loopback only). The exposition is parsed
with the Prometheus client's parser first (it raises on malformed text). Then:

  - every sluice_* series an expression names must be one the daemon exports;
  - the dashboard has the template variables `node` and `tenant`;
  - every query is filtered by node: each sluice_* selector in it is joined to its node by
    `* on(instance, job) group_left(node) sluice_node_info{node=~"$node"}`, so the query
    holds that info selector at least once per other selector (sluice_node_info must be on
    /metrics, once);
  - the labels a query groups by (by/without) or matches on are on its metrics, where those
    have samples here;
  - every selector of a metric that carries a `tenant` label on this /metrics is filtered by
    `tenant=~"$tenant"` (metrics without a tenant dimension, the edge's or the store's, cannot
    be: their panels sit in the per-node row).

Where promtool is installed (PROMTOOL, PATH or /usr/local/lib/sluice/promtool), every query,
its variables replaced by ".*", must also parse as PromQL (`promtool check rules` on them as
recording rules).

Prints each problem on a line and exits 1 when there are any.

  dashboard_check.py DASHBOARD.json URL
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

NODE_JOIN = 'sluice_node_info{node=~"$node"}'
TENANT = 'tenant=~"$tenant"'


def promql_problems(exprs):
    tool = os.environ.get("PROMTOOL") or shutil.which("promtool") or "/usr/local/lib/sluice/promtool"
    if not os.access(tool, os.X_OK):
        return []
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": "dashboard:q%d" % i, "expr": e.replace("$node", ".*").replace("$tenant", ".*")}
        for i, e in enumerate(exprs)]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(rules, f)  # JSON is YAML
        f.flush()
        r = subprocess.run([tool, "check", "rules", f.name], capture_output=True, text=True,
                           timeout=30)
    if r.returncode == 0:
        return []
    return ["promtool: " + l for l in (r.stdout + r.stderr).splitlines() if l.strip()]


def main():
    dash, url = sys.argv[1], sys.argv[2]
    if not url.startswith(("http://127.0.0.1", "http://[::1]")):
        sys.exit("dashboard_check.py: loopback only")
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    labels = {}  # sample name -> label names seen on it
    for fam in text_string_to_metric_families(text):  # raises on a malformed exposition
        for s in fam.samples:
            labels.setdefault(s.name, set()).update(s.labels)
    exported = set()
    for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M):
        name, kind = m.group(1), m.group(2)
        exported.add(name)
        if kind == "histogram":
            exported |= {name + "_bucket", name + "_sum", name + "_count"}
    problems = []
    if len(re.findall(r"^sluice_node_info\{", text, re.M)) != 1:
        problems.append("/metrics: sluice_node_info is not there exactly once")
    d = json.load(open(dash))
    names = {v.get("name") for v in d.get("templating", {}).get("list", [])}
    for v in ("node", "tenant"):
        if v not in names:
            problems.append("templating: no variable %r" % v)
    wanted = set()
    queries = 0
    for p in d["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"]
            queries += 1
            where = "panel %r, %s" % (p.get("title"), t.get("refId", "?"))
            sels = re.findall(r"\b(sluice_[a-z0-9_]+)(\{[^}]*\})?", expr)
            wanted |= {n for n, _ in sels}
            others = [(n, lab) for n, lab in sels if n != "sluice_node_info"]
            joins = expr.count(NODE_JOIN)
            if not others:
                problems.append("%s: no sluice metric in %r" % (where, expr))
            if joins < len(others) or "group_left(node)" not in expr:
                problems.append("%s: not every selector is joined to sluice_node_info and "
                                "filtered by $node (%d selectors, %d joins): %s" %
                                (where, len(others), joins, expr))
            # The labels it groups by or matches on exist on its metrics (a renamed label,
            # class to cost_class, leaves a panel silently empty), when they have samples.
            have = set().union(*(labels.get(n, set()) for n, _ in others)) | {"node", "le"}
            if all(labels.get(n) for n, _ in others):
                used = set()
                for g in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
                    used |= {x.strip() for x in g.split(",") if x.strip()}
                for _, lab in others:
                    used |= set(re.findall(r"([a-z_]+)\s*(?:=~|!~|!=|=)", lab or ""))
                for x in sorted(used - have):
                    problems.append("%s: label %r is on none of its metrics: %s" %
                                    (where, x, expr))
            for n, lab in others:
                if "tenant" in labels.get(n, set()) and TENANT not in lab:
                    problems.append("%s: %s has a tenant label but is not filtered by "
                                    "$tenant: %s" % (where, n, expr))
    problems += promql_problems([t["expr"] for p in d["panels"] for t in p.get("targets", [])])
    for n in sorted(wanted - exported):
        problems.append("not on /metrics: %s" % n)
    if not queries:
        problems.append("the dashboard has no queries")
    print("\n".join(problems))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
