#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The audit log read as a SIEM would: every line of the files given, parsed as one JSON object,
checked for every field and for a time that is ISO 8601 with its date, UTC, milliseconds, and
within ten minutes of now. Prints one JSON summary: lines, bad_json, missing (a field absent),
bad_time, dropped_sum (what the lines say was dropped), first_bad, and the records.
Used by tests/net/test_audit.sh, test_gateway.sh and test_edge.sh.

  audit_check.py FILE...
"""
import datetime, json, re, sys
FIELDS = ["time", "node", "event", "source", "tenant", "route", "account", "prefix", "reason",
          "decision", "operator", "detail", "dropped"]
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
now = datetime.datetime.now(datetime.timezone.utc)
out = {"lines": 0, "bad_json": 0, "missing": 0, "bad_time": 0, "dropped_sum": 0,
       "first_bad": "", "records": []}
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        for raw in f:
            out["lines"] += 1
            try:
                r = json.loads(raw.decode("utf-8"))
                assert isinstance(r, dict)
            except Exception:
                out["bad_json"] += 1
                out["first_bad"] = out["first_bad"] or raw.decode("utf-8", "replace")
                continue
            if any(k not in r for k in FIELDS):
                out["missing"] += 1
                out["first_bad"] = out["first_bad"] or raw.decode()
            t = r.get("time") or ""
            ok = bool(ISO.match(t))
            if ok:
                when = datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                    tzinfo=datetime.timezone.utc)
                ok = abs((now - when).total_seconds()) < 600
            if not ok:
                out["bad_time"] += 1
            out["dropped_sum"] += int(r.get("dropped") or 0)
            out["records"].append(r)
print(json.dumps(out))
