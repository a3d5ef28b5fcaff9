#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Pieces of the shipped sample configs, for the demo and the suites that must run on them.

tests/net/test_office.sh and scripts/demo.sh run the shipped examples/sluice.conf classes and
the shipped routes unchanged, so a change to a shipped number is what they test. They may
only put their own interfaces, listen addresses, ASN table and paths in; this script copies
the rest out of the files at run time:

  conf_lists.py list FILE NAME            the top-level `NAME = ( ... );` as written
  conf_lists.py group FILE NAME [K=V ...] the top-level `NAME: { ... };`, keys K replaced by
                                          V (V is libconfig text; an empty V drops the key)
  conf_lists.py tenants EDGE GW [LISTEN]  EDGE's tenants (the edge budgets) with each one's
                                          `listen` replaced by LISTEN (libconfig text), and
                                          GW's tenants merged in by name (hosts, reservation)
  conf_lists.py same FILE FILE NAME       exit 0 if both files' NAME lists are the same text,
                                          comments and blanks aside

This is not a libconfig parser: it reads what the samples hold (groups, lists, arrays,
strings, # comments), balancing brackets outside strings and comments.
"""
import re
import sys


def strip_comments(text):
    """The text with # and // comments blanked (not inside strings)."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif c == "#" or text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def balanced(text, start):
    """Index just past the bracket that closes the one at text[start]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack, i, in_str = [], start, False
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                raise SystemExit("conf_lists: unbalanced %r at offset %d" % (c, i))
            if not stack:
                return i + 1
        i += 1
    raise SystemExit("conf_lists: unterminated bracket at offset %d" % start)


def top_level(text, name):
    """(value text with its brackets, 'list'|'group') of a top-level setting."""
    text = strip_comments(text)
    depth, i = 0, 0
    pat = re.compile(r"\b%s\s*[=:]\s*([({])" % re.escape(name))
    for m in pat.finditer(text):
        # top level only: no unclosed bracket before it
        before = text[:m.start()]
        depth = sum(before.count(o) for o in "([{") - sum(before.count(c) for c in ")]}")
        if depth == 0:
            i = m.start(1)
            return text[i:balanced(text, i)], ("list" if text[i] == "(" else "group")
    raise SystemExit("conf_lists: no top-level %s" % name)


def split_top(body, sep):
    """body split at sep outside brackets and strings, pieces stripped, empties dropped."""
    parts, depth, cur, in_str, i = [], 0, [], False, 0
    while i < len(body):
        c = body[i]
        if in_str:
            cur.append(c)
            if c == "\\":
                i += 1
                cur.append(body[i])
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            cur.append(c)
        elif c in "([{":
            depth += 1
            cur.append(c)
        elif c in ")]}":
            depth -= 1
            cur.append(c)
        elif c == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def settings(group):
    """[(key, value text)] of a `{ k = v; ... }` group, in order."""
    out = []
    for s in split_top(group.strip()[1:-1], ";"):
        k, v = re.split(r"\s*[=:]\s*", s, maxsplit=1)
        out.append((k.strip(), v.strip()))
    return out


def group_text(kv):
    return "{ " + " ".join("%s = %s;" % (k, v) for k, v in kv) + " }"


def main(argv):
    if len(argv) >= 3 and argv[0] == "list":
        value, kind = top_level(open(argv[1]).read(), argv[2])
        if kind != "list":
            raise SystemExit("conf_lists: %s is not a list" % argv[2])
        print("%s = %s;" % (argv[2], value))
    elif len(argv) >= 3 and argv[0] == "group":
        value, kind = top_level(open(argv[1]).read(), argv[2])
        if kind != "group":
            raise SystemExit("conf_lists: %s is not a group" % argv[2])
        kv = settings(value)
        repl = dict(a.split("=", 1) for a in argv[3:])
        out = [(k, repl.get(k, v)) for k, v in kv]
        have = {k for k, _ in kv}
        out += [(k, v) for k, v in repl.items() if k not in have]
        print("%s: %s;" % (argv[2], group_text([(k, v) for k, v in out if v != ""])))
    elif len(argv) >= 3 and argv[0] == "tenants":
        edge = [settings(g) for g in split_top(top_level(open(argv[1]).read(), "tenants")[0][1:-1], ",")]
        gw = [settings(g) for g in split_top(top_level(open(argv[2]).read(), "tenants")[0][1:-1], ",")]
        listen = argv[3] if len(argv) > 3 else None
        name = lambda kv: dict(kv)["name"]
        merged = []
        for kv in edge:
            if listen is not None:
                kv = [(k, listen if k == "listen" else v) for k, v in kv]
            extra = next((g for g in gw if name(g) == name(kv)), [])
            have = {k for k, _ in kv}
            merged.append(kv + [(k, v) for k, v in extra if k not in have])
        names = {name(kv) for kv in merged}
        merged += [g for g in gw if name(g) not in names]
        print("tenants = (\n  " + ",\n  ".join(group_text(kv) for kv in merged) + "\n);")
    elif len(argv) == 4 and argv[0] == "same":
        a = re.sub(r"\s+", "", top_level(open(argv[1]).read(), argv[3])[0])
        b = re.sub(r"\s+", "", top_level(open(argv[2]).read(), argv[3])[0])
        sys.exit(0 if a == b else 1)
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
