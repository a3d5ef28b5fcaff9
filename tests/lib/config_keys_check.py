#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Check that docs/configuration.md documents every key the config parser accepts.

The parser (user/lib/config.c) rejects unknown keys: each group's known keys are a
NULL-terminated `static const char *const NAME[] = { "a", "b", NULL };` table handed to
check_keys(x, GROUP, WHERE, NAME). This script reads those tables straight from the C source,
works out which group each one guards (WHERE is a literal such as "gateway.queue", or a
`where` buffer filled by snprintf just before, such as "classes[%d]"), and looks for every
key in backticks inside that group's `## \`group\`` section of the reference (a dotted name
like `queue.target_wait_ms` counts for `target_wait_ms` and for `queue`). A key of a nested
group (gateway.queue, edge.ports, gateway.clients...) must be named with its group
(`queue.target_wait_ms`, `clients[].id`), or sit in a `###` subsection whose heading names the
group, or appear as `key = ...` in a code span on the group's own table row. A group whose
section it cannot find is looked for in the whole document.

Prints one line per missing key ("group: key") and exits 1 when there are any.

  config_keys_check.py [--list] [CONFIG_C [CONFIG_MD]]

--list prints every key found, with the numeric bounds the parser enforces where they are
literals (for a human to compare with the tables; not asserted).
"""
import re
import sys

TABLE = re.compile(r"static\s+const\s+char\s*\*\s*const\s+(\w+)\s*\[\s*\w*\s*\]\s*=\s*\{(.*?)\};",
                   re.S)
CALL = re.compile(r"check_keys\s*\(\s*[^,]+,\s*[^,]+,\s*([^,]+?)\s*,\s*(\w+)\s*\)")
WHERE_FMT = re.compile(r'snprintf\s*\(\s*where\s*,\s*sizeof\s*\(\s*where\s*\)\s*,\s*"([^"]*)"')
BOUNDS = re.compile(
    r'get_(?:int|num)\s*\(\s*\w+\s*,\s*\w+\s*,\s*([^,]+?)\s*,\s*"(\w+)"\s*,\s*[^,]+,\s*([^,]+?)\s*,'
    r'\s*([^,]+?)\s*,'
    r'|get_u32_or\s*\(\s*\w+\s*,\s*\w+\s*,\s*([^,]+?)\s*,\s*"(\w+)"\s*,\s*([^,]+?)\s*,\s*([^,]+?)\s*,',
    re.S)


def group_of(where_arg, src, pos):
    """The config group a check_keys() call guards, from its WHERE argument."""
    where_arg = where_arg.strip()
    if where_arg.startswith('"'):
        g = where_arg.strip('"')
        return "" if g == "the top level" else g
    # Skip the "class '%s'" renames that follow a successful name lookup.
    fmts = [m for m in WHERE_FMT.finditer(src, 0, pos) if "'" not in m.group(1)]
    if not fmts:
        return None
    fmt = fmts[-1].group(1)                      # the snprintf nearest before the call
    return re.sub(r"\[%d\]|\.%s|%d|%s", "", fmt)  # "classes[%d]" -> "classes"


def parser_keys(src):
    """[(group, key)] for every key table passed to check_keys(), in source order."""
    tables = [(m.start(), m.group(1), re.findall(r'"([^"]+)"', m.group(2)))
              for m in TABLE.finditer(src)]
    out = []
    for call in CALL.finditer(src):
        name = call.group(2)
        defs = [t for t in tables if t[1] == name and t[0] < call.start()]
        if not defs:
            continue
        group = group_of(call.group(1), src, call.start())
        for key in defs[-1][2]:
            out.append((group, key))
    return out


def sections(md):
    """{top-level group: text of its `## \\`group\\`` section}."""
    out = {}
    parts = re.split(r"^(## .*)$", md, flags=re.M)
    for head, body in zip(parts[1::2], parts[2::2]):
        m = re.match(r"## `(\w+)`", head)
        if m:
            out[m.group(1)] = out.get(m.group(1), "") + body
    return out


def documented(key, text):
    # `key`, `group.key`, `edge.ports[].key`, or a group key named by a member: `capacity.cpu`
    return re.search(r"`(?:[\w\[\]]+\.)*" + re.escape(key) + r"(?:\.[\w.]+)?`", text) is not None


def documented_nested(group, key, text):
    """A key of a nested group: named with the group, in the group's subsection, or as
    `... key = ...` on the group's table row."""
    last = re.escape(group.split(".")[-1])
    k = re.escape(key)
    if re.search(r"`(?:[\w\[\]]+\.)*" + last + r"(?:\[\])?\." + k + r"`", text):
        return True
    subs = re.split(r"^(### .*)$", text, flags=re.M)
    for head, body in zip(subs[1::2], subs[2::2]):
        if re.search(r"\b" + last + r"\b", head) and documented(key, body):
            return True
    for line in text.splitlines():
        if re.search(r"`(?:[\w\[\]]+\.)*" + last + r"(?:\[\])?`", line) and \
                re.search(r"`[^`]*\b" + k + r"\s*=[^`]*`", line):
            return True
    return False


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    c_path = args[0] if args else "user/lib/config.c"
    md_path = args[1] if len(args) > 1 else "docs/configuration.md"
    src = open(c_path).read()
    md = open(md_path).read()
    secs = sections(md)
    keys = parser_keys(src)
    if not keys:
        sys.exit("config_keys_check.py: found no check_keys() tables in " + c_path)
    missing = []
    for group, key in keys:
        top = (group or "").split(".")[0]
        if group == "":
            text = md                 # top-level groups: their own headings
        else:
            text = secs.get(top, md)
        nested = group is not None and "." in group
        if not (documented_nested(group, key, text) if nested else documented(key, text)):
            missing.append("%s: %s" % (group if group is not None else "?", key))
    if "--list" in sys.argv:
        bounds = {}
        for m in BOUNDS.finditer(src):
            g = m.groups()
            where, key, lo, hi = g[0:4] if g[1] else g[4:8]
            group = group_of(where, src, m.start())
            bounds.setdefault((group, key), set()).add("%s..%s" % (lo, hi))
        for group, key in keys:
            print("%-28s %-22s %s" % (group or "(top)", key,
                                      " | ".join(sorted(bounds.get((group, key), [])))))
        print("--")
    print("\n".join(missing))
    print("%d keys in %s, %d missing from %s" % (len(keys), c_path, len(missing), md_path),
          file=sys.stderr)
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
