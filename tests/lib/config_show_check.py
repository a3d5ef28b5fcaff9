#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Check that `sluicectl config show` can write every key the config parser accepts.

The parser's key tables are read as tests/lib/config_keys_check.py reads them; the writer
(user/lib/config_show.c) names every key it writes as a string literal ("url", "login"...).
A key the parser takes that the writer never names is a setting `config show` would leave
out of "the effective config": one line per such key ("group: key"), exit 1 when any.

  config_show_check.py [CONFIG_C [CONFIG_SHOW_C]]
"""
import importlib.util
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("ck", os.path.join(here, "config_keys_check.py"))
ck = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ck)

src = open(sys.argv[1] if len(sys.argv) > 1 else "user/lib/config.c").read()
show = open(sys.argv[2] if len(sys.argv) > 2 else "user/lib/config_show.c").read()
named = set(re.findall(r'"([A-Za-z_][\w]*)"', show))
# The counters and the stream job's detectors are written by a loop over every one of them
# by its table's name (sl_counter_name, the detector table), not by literals: their own keys
# (rate, burst, mode...) are literals and are checked.
LOOPED = {"counters", "stream"}
# Read at load into another key, which is shown: redis.password_file into redis.password
# (written "(redacted)").
FOLDED = {("redis", "password_file")}
missing = sorted({(g or "top", k) for g, k in ck.parser_keys(src)
                  if k not in named and (g or "top") not in LOOPED and (g, k) not in FOLDED})
for g, k in missing:
    print("%s: %s" % (g, k))
sys.exit(1 if missing else 0)
