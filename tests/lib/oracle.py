#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The enumeration attacker of issue 14, against a gateway on loopback with trusted_hops = 1
(every trial its own source address through X-Forwarded-For), and the score of its guesses.

  oracle.py attack PORT PHASE N SEED [--probe] [--load THREADS]
      Runs N trials of each experiment, their order shuffled, and prints one JSON list of
      samples {"exp", "label", "feat": {...}}. Each trial comes from a fresh /24 (10.P.T.1)
      and plays what the issue describes:
        exists:    five junk names with wrong passwords, then a candidate: a real account
                   (label 1) or a name nobody has (label 0), wrong password;
        throttled: five wrong passwords for one name, then the measured attempt: for that
                   same name, its pair now spent (label 1), or for a fresh name (label 0),
                   half of each kind real and half nobody's.
      Features: the candidate's status line, headers but Date and body ("shape"), its time
      in ms; with --probe, a login the client provokes right after from the same address
      (X-Request-Deadline-Ms: 1 while the pool is busy: a 429 for its deadline), its shape,
      Retry-After and time. --load starts THREADS clients that keep the pool busy with
      wrong passwords for fresh names from fresh addresses. Real accounts are k0000.. (each
      used once per run), the probe signs in as the attacker's own account, mallory.
  oracle.py score FILE
      For each experiment: a decision stump (the best single feature and threshold, or
      value table for a categorical one) trained on a random stratified half, scored on the
      other half; prints {"exp": {"accuracy", "n_test", "bound", "feature", "train"}} where
      bound is 0.5 + 3.29 * sqrt(0.25 / n_test), the one-sided 99.95 % binomial bound of
      guessing. An attacker no better than chance stays under it.
"""
import http.client
import json
import math
import random
import sys
import threading
import time

HOST = "idp.test"


def login(port, user, pw, xff, extra=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {"Host": HOST, "X-Forwarded-For": xff,
         "Content-Type": "application/x-www-form-urlencoded"}
    if extra:
        h.update(extra)
    t0 = time.monotonic()
    c.request("POST", "/login", body="username=%s&password=%s" % (user, pw), headers=h)
    r = c.getresponse()
    body = r.read().decode()
    ms = (time.monotonic() - t0) * 1000
    c.close()
    hdrs = sorted((k.lower(), v) for k, v in r.getheaders() if k.lower() != "date")
    return {"status": r.status, "ms": ms, "retry_after": r.getheader("Retry-After") or "",
            "shape": json.dumps([r.status, r.reason, hdrs, body])}


def parallel(port, specs):
    out = [None] * len(specs)

    def one(i, s):
        out[i] = login(port, *s)
    th = [threading.Thread(target=one, args=(i, s)) for i, s in enumerate(specs)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return out


class Names:
    def __init__(self, rnd):
        self.k = 0
        self.rnd = rnd

    def known(self):
        self.k += 1
        return "k%04d" % (self.k - 1)

    def unknown(self):
        return "n%08x" % self.rnd.getrandbits(32)


def load(port, stop, idx):
    i = 0
    while not stop.is_set():
        i += 1
        try:
            login(port, "bg%d-%d" % (idx, i), "x%d" % i,
                  "172.%d.%d.%d" % (16 + idx, (i >> 8) & 255, i & 255 or 1))
        except (OSError, http.client.HTTPException):
            time.sleep(0.01)


def attack(argv):
    port, phase, n, seed = int(argv[0]), int(argv[1]), int(argv[2]), int(argv[3])
    probe = "--probe" in argv
    threads = int(argv[argv.index("--load") + 1]) if "--load" in argv else 0
    rnd = random.Random(seed)
    names = Names(rnd)
    trials = [("exists", lab) for lab in [0, 1] for _ in range(n // 2)]
    trials += [("throttled", lab) for lab in [0, 1] for _ in range(n // 2)]
    rnd.shuffle(trials)
    stop = threading.Event()
    bg = [threading.Thread(target=load, args=(port, stop, i), daemon=True)
          for i in range(threads)]
    for t in bg:
        t.start()
    if threads:
        time.sleep(0.5)
    out = []
    for t, (exp, lab) in enumerate(trials):
        xff = "10.%d.%d.%d" % (phase, t // 250, t % 250 + 1)
        pw = lambda: "w%08x" % rnd.getrandbits(32)
        if exp == "exists":
            parallel(port, [(names.unknown(), pw(), xff) for _ in range(5)])
            cand = names.known() if lab else names.unknown()
        else:
            first = names.known() if rnd.random() < 0.5 else names.unknown()
            parallel(port, [(first, pw(), xff) for _ in range(5)])
            if lab:
                cand = first
            else:
                cand = names.known() if rnd.random() < 0.5 else names.unknown()
        r = login(port, cand, pw(), xff)
        feat = {"shape": r["shape"], "ms": r["ms"]}
        if probe:
            p = login(port, "mallory", pw(), xff, {"X-Request-Deadline-Ms": "1"})
            feat.update({"probe_shape": p["shape"], "probe_status": str(p["status"]),
                         "probe_ra": float(p["retry_after"] or 0), "probe_ms": p["ms"]})
        out.append({"exp": exp, "label": lab, "feat": feat})
    stop.set()
    print(json.dumps(out))


def stump(train):
    """The best single-feature rule on @train: (accuracy, name, predict)."""
    best = (-1.0, None, None)
    for f in train[0]["feat"]:
        vals = [s["feat"][f] for s in train]
        labs = [s["label"] for s in train]
        if isinstance(vals[0], float):
            pts = sorted(set(vals))
            cuts = [(a + b) / 2 for a, b in zip(pts, pts[1:])] or [pts[0]]
            for c in cuts:
                for hi in (0, 1):
                    acc = sum((v > c) == (lab == hi) for v, lab in zip(vals, labs)) / len(vals)
                    if acc > best[0]:
                        best = (acc, "%s > %.2f -> %d" % (f, c, hi),
                                (lambda c, hi, f: lambda s: hi if s[f] > c else 1 - hi)(c, hi, f))
        else:
            count = {}
            for v, lab in zip(vals, labs):
                count.setdefault(v, [0, 0])[lab] += 1
            table = {v: int(c[1] > c[0]) for v, c in count.items()}
            default = int(sum(labs) * 2 > len(labs))
            acc = sum(table[v] == lab for v, lab in zip(vals, labs)) / len(vals)
            if acc > best[0]:
                best = (acc, "%s (%d values)" % (f, len(table)),
                        (lambda t, d, f: lambda s: t.get(s[f], d))(table, default, f))
    return best


def score(path):
    samples = json.load(open(path))
    rnd = random.Random(1)
    res = {}
    for exp in sorted(set(s["exp"] for s in samples)):
        train, test = [], []
        for lab in (0, 1):
            group = [s for s in samples if s["exp"] == exp and s["label"] == lab]
            rnd.shuffle(group)
            train += group[: len(group) // 2]
            test += group[len(group) // 2:]
        acc_tr, name, predict = stump(train)
        acc = sum(predict(s["feat"]) == s["label"] for s in test) / len(test)
        res[exp] = {"accuracy": round(acc, 3), "n_test": len(test), "feature": name,
                    "train": round(acc_tr, 3),
                    "bound": round(0.5 + 3.29 * math.sqrt(0.25 / len(test)), 3)}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "attack":
        attack(sys.argv[2:])
    else:
        score(sys.argv[2])
