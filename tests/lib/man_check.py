#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Check that the man pages document what the binaries and the parser accept.

The pages are written by hand (sluiced.8, sluicectl.8) or generated from the reference
(sluice.conf.5); either way they drift when someone adds a command, an option or a key and
forgets the page. This reads the truth mechanically and prints one line per thing missing:

  man_check.py help PAGE HELP_FILE
      Every command of the help's "Commands:" block (its first one or two words, e.g.
      "prefix show") must start the tag of a .TP paragraph; every option the help names
      (-x and --long, anywhere in it) must appear in some .TP tag; every signal of its
      "Signals:" paragraph must be a tag, as SIGNAME.
  man_check.py conf PAGE CONFIG_C SAMPLE_CONF
      Every key of every check_keys() table in the parser must appear in bold (dotted
      names count: queue.target_wait_ms for target_wait_ms, capacity.cpu for capacity, as
      clients[].id does for clients); every top-level group the parser
      accepts, and every one the sample config sets, must be a subsection heading.

Exits 1 when anything is missing, 0 otherwise.
"""
import re
import sys


def norm(s):
    """A roff line as text: fonts dropped, escaped hyphens and zero-width marks resolved."""
    s = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", s)
    s = s.replace(r"\-", "-").replace(r"\&", "").replace(r"\e", "\\")
    s = re.sub(r'^\.(B|I|R|BR|RB|BI|IB|IR|RI|SM|SB)\s+', "", s)
    return " ".join(s.replace('"', " ").split())


def tags(page):
    """The tag line of every .TP paragraph, as text."""
    lines = page.splitlines()
    return [norm(lines[i + 1]) for i, ln in enumerate(lines[:-1]) if ln.startswith(".TP")]


def help_items(text):
    cmds, sigs = [], []
    block = None
    for ln in text.splitlines():
        if re.match(r"^\S.*:\s*$", ln) or re.match(r"^Signals:", ln):
            block = ln.split(":")[0].strip()
        if block == "Commands":
            m = re.match(r"^  ([a-z][\w-]*)(?: ([a-z][\w-]*))?(?=\s|$)", ln)
            if m:
                cmds.append(" ".join(g for g in m.groups() if g))
        if block == "Signals":
            sigs += re.findall(r"\b(HUP|TERM|INT|QUIT|USR1|USR2|ALRM|CHLD|PIPE)\b", ln)
    opts = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))
    opts |= set(re.findall(r"(?<![\w-])(-[A-Za-z])(?=[ ,])", text))
    return cmds, sorted(opts), sorted(set(sigs))


def check_help(page_path, help_path):
    page = open(page_path, encoding="utf-8").read()
    text = open(help_path, encoding="utf-8").read()
    t = tags(page)
    cmds, opts, sigs = help_items(text)
    missing = []
    for c in cmds:
        if not any(x == c or x.startswith(c + " ") for x in t):
            missing.append("command '%s' has no .TP entry" % c)
    for o in opts:
        pat = re.compile(r"(?<![\w-])%s(?![\w-])" % re.escape(o))
        if not any(pat.search(x) for x in t):
            missing.append("option '%s' is in no .TP tag" % o)
    for s in sigs:
        if not any(re.search(r"\bSIG%s\b" % s, x) for x in t):
            missing.append("signal SIG%s has no .TP entry" % s)
    return missing, "%d commands, %d options, %d signals" % (len(cmds), len(opts), len(sigs))


# The parser's known-key tables: NULL-terminated string arrays handed to check_keys().
TABLE = re.compile(r"static\s+const\s+char\s*\*\s*const\s+(\w+)\s*\[\s*\w*\s*\]\s*=\s*\{(.*?)\};",
                   re.S)
CALL = re.compile(r"check_keys\s*\([^;]*?,\s*(\w+)\s*\)\s*;")


def check_conf(page_path, config_c, sample):
    page = open(page_path, encoding="utf-8").read()
    src = open(config_c, encoding="utf-8").read()
    keys, top = set(), set()
    used = set(CALL.findall(src))
    if not used:
        return ["no check_keys() call found in %s" % config_c], "nothing"
    for name, body in TABLE.findall(src):
        if name not in used:
            continue
        words = re.findall(r'"([^"]+)"', body)
        keys |= set(words)
        if name == "top_keys":
            top |= set(words)
    for ln in open(sample, encoding="utf-8"):
        m = re.match(r"^([A-Za-z_]\w*)\s*[:=]", ln)
        if m:
            top.add(m.group(1))
    flat = page.replace(r"\-", "-")
    heads = {norm(ln[4:]) for ln in page.splitlines() if ln.startswith(".SS ")}
    missing = []
    for k in sorted(keys):
        if not re.search(r"\\fB([\w\[\].-]*\.)?%s(\[\])?(\.[\w\[\].-]+)?\\f[RP]" % re.escape(k),
                         flat):
            missing.append("key '%s' is not in bold anywhere" % k)
    for g in sorted(top):
        if g not in heads:
            missing.append("group '%s' has no .SS heading" % g)
    return missing, "%d keys, %d groups" % (len(keys), len(top))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "help":
        missing, what = check_help(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "conf":
        missing, what = check_conf(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
    for m in missing:
        print(m)
    print("checked %s" % what, file=sys.stderr)
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
