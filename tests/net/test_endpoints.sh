#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The endpoints beyond /login, end to end over loopback: sluiced with a gateway-only config
# in a temp dir, the in-process counter store, the "log" delivery writing codes and links
# to a file this script reads. Client prefixes come from X-Forwarded-For (one trusted hop).
# Checks:
#  - POST /token: both grants, rotation and reuse detection of refresh tokens, client tokens
#    validate and introspect (for a client that authenticates: HTTP Basic or
#    client_secret_post, else 401 invalid_client); a flood of garbage for someone else's
#    client_id from another
#    prefix is refused (429 + RateLimit fields) while the real client still gets tokens; a
#    refresh flood with valid credentials stops at the client's own limit, and a client
#    within its own stops at its tenant's;
#  - MFA: a resend invalidates the old code and a code works once; with resends as good as
#    unlimited, an attacker gets exactly the per-account attempt cap of guesses (5), after
#    which even the right code fails, with the one failure body behind the floor;
#  - enumeration: reset, registration and login answer byte-identical responses for an
#    existing, a missing and a throttled account, all within the floor;
#  - magic links: three GETs neither spend nor consume the link, one POST does, a second
#    POST fails; a sign-up link and a password create an account that can log in;
#  - tokens end with a password reset (the account's password and MFA tokens from before
#    it stop validating and introspect inactive, the one the reset link gave works) and
#    with a password change (a new hash in the credential file, reloaded);
#  - `sluicectl limits` and `--json`: floor, reservation, ceiling per tenant, per-principal
#    limits per user and per client; a tenant at its ceiling is shed;
#  - account names (issue 14, item 7): folded where they enter (user add, login, reset), and
#    the issue's forged outbox record (an anonymous reset whose name holds spaces, U+2028,
#    U+0085 or a newline and a fake "reset link for dave") refused, so the outbox reader
#    still returns dave's own link, which signs dave in;
#  - no delivery to the daemon's log (item 8): no link or code in it; a config that routes
#    /password-reset without gateway.delivery_log is refused by --check-config, at start and
#    on reload (the running delivery stays); one that routes nothing that sends starts;
#  - with Redis (skipped without redis-server): two nodes count together, so the
#    (client_id, prefix) pair and an account's MFA attempts are capped across the cluster.
# SL_DEBUG=1 leaves the directory and the daemon's log in place.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY=/usr/bin/python3

if ! $PY -c 'import http.client, hashlib' 2>/dev/null; then
	echo "1..0 # SKIP /usr/bin/python3 missing"
	exit 0
fi
if [ ! -x "$BUILD/sluiced" ] || [ ! -x "$BUILD/sluicectl" ]; then
	echo "Bail out! build sluiced and sluicectl first (make)"
	exit 1
fi

DIR=$(mktemp -d /tmp/sluice-ep.XXXXXX)
NT_DIR=$DIR
. "$HERE/../lib/redis.sh"
SLUICED_PID=
NODE_PIDS=()
cleanup() {
	local p
	[ -n "$SLUICED_PID" ] && kill -TERM "$SLUICED_PID" 2>/dev/null && wait "$SLUICED_PID" 2>/dev/null
	for p in "${NODE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	redis_stop
	if [ "${SL_DEBUG:-0}" = 1 ]; then
		echo "# SL_DEBUG=1: left $DIR" >&2
	else
		rm -rf "$DIR"
	fi
}
trap cleanup EXIT

PORT=$(free_port)
MPORT=$(free_port)
FLOOR_MS=300
hash_of() { $PY -c 'import hashlib,sys; print("blake2b256:" + hashlib.blake2b(sys.argv[1].encode(), digest_size=32).hexdigest())' "$1"; }

cat >"$DIR/gw.conf" <<EOF
tenants = (
  { name = "default"; reservation = 0.0; },
  { name = "acme"; hosts = ["acme.test"]; reservation = 3000.0; },
  { name = "other"; hosts = ["other.test"]; reservation = 2000.0; },
  { name = "capped"; hosts = ["capped.test"]; reservation = 0.0; }
);
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 450.0; },
  { name = "validate"; method = "GET"; path = "/token/validate"; cpu = 1.0; },
  { name = "introspect"; method = "POST"; path = "/introspect"; cpu = 1.0; },
  { name = "token"; method = "POST"; path = "/token"; cpu = 40.0; },
  { name = "mfa_send"; method = "POST"; path = "/mfa/send"; cpu = 5.0; },
  { name = "mfa_verify"; method = "POST"; path = "/mfa/verify"; cpu = 2.0; },
  { name = "reset"; method = "POST"; path = "/password-reset"; cpu = 10.0; },
  { name = "register"; method = "POST"; path = "/register"; cpu = 10.0; },
  { name = "magic_page"; method = "GET"; path = "/magic/"; cpu = 1.0; },
  { name = "magic_confirm"; method = "POST"; path = "/magic/"; cpu = 450.0; }
);
gateway: {
  listen = "127.0.0.1:$PORT";
  credentials = "$DIR/creds.txt";
  capacity = { cpu = 10000.0; };
  argon2 = { m_cost_kib = 1024; t_cost = 2; parallelism = 1; memory_budget_mib = 2; };
  trusted_hops = 1;
  reject_floor_ms = $FLOOR_MS;
  delivery = "log";
  delivery_log = "$DIR/outbox.log";
  link_base = "https://acme.test";
  ceilings = ( { tenant = "acme"; cpu = 8000.0; }, { tenant = "capped"; cpu = 1.0; } );
  clients = (
    { id = "ci-bot"; tenant = "acme"; secret_hash = "$(hash_of ci-bot-secret)"; },
    { id = "flaky"; tenant = "acme"; secret_hash = "$(hash_of flaky-secret)";
      rate = 1.0; burst = 5.0; },
    { id = "batch"; tenant = "other"; secret_hash = "$(hash_of batch-secret)";
      grants = ["client_credentials"]; rate = 100.0; burst = 100.0; }
  );
};
counters: {
  login_failures = { rate = 0.001; burst = 3.0; };
  token_failures = { rate = 0.001; burst = 5.0; };
  tenant_tokens = { rate = 0.001; burst = 12.0; };
  mfa_attempts = { rate = 0.001; burst = 5.0; };
  mfa_sends = { rate = 0.001; burst = 20.0; };
  reset_account = { rate = 0.001; burst = 3.0; };
  register_account = { rate = 0.001; burst = 3.0; };
  magic_prefix = { rate = 0.001; burst = 2.0; };
  user = { rate = 0.001; burst = 2.0; };
};
stream: { enabled = false; };
daemon: { control_socket = "$DIR/ctl.sock"; metrics_listen = "127.0.0.1:$MPORT"; };
EOF

ctl() { "$BUILD/sluicectl" -c "$DIR/gw.conf" "$@"; }

cat >"$DIR/probe.py" <<'PYEOF'
import http.client, json, re, sys, time

PORT = int(sys.argv[1])
OUTBOX = sys.argv[2]
CMD = sys.argv[3]
ARGS = sys.argv[4:]

def req(host, path, body=None, headers=None, method="POST", xff="192.0.2.10"):
    h = {"Host": host, "X-Forwarded-For": xff}
    if body is not None:
        h["Content-Type"] = "application/x-www-form-urlencoded"
    h.update(headers or {})
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    t0 = time.monotonic()
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    ms = (time.monotonic() - t0) * 1000
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return {"status": r.status, "reason": r.reason, "headers": hdrs,
            "body": data.decode("utf-8", "replace"), "ms": ms}

def shape(r):
    """What a client sees, but the Date: status line, headers and body bytes."""
    h = sorted((k, v) for k, v in r["headers"].items() if k != "date")
    return json.dumps([r["status"], r["reason"], h, r["body"]])

def outbox(kind, to):
    try:
        text = open(OUTBOX).read()
    except OSError:
        return ""
    lines = [l for l in text.splitlines() if " kind=%s " % kind in l and " to=%s " % to in l]
    return lines[-1] if lines else ""

def last_code(to):
    m = re.search(r"code=(\d{6})", outbox("otp", to))
    return m.group(1) if m else ""

def last_link(kind, to):
    m = re.search(r"/magic/([A-Za-z0-9_-]+)", outbox(kind, to))
    return m.group(1) if m else ""

def form(**kw):
    from urllib.parse import urlencode
    return urlencode(kw)

def token(host, xff="192.0.2.10", **kw):
    return req(host, "/token", form(**kw), xff=xff)

out = {}
if CMD == "one":
    host, path, method = ARGS[0], ARGS[1], ARGS[2]
    body = ARGS[3] if len(ARGS) > 3 and ARGS[3] != "-" else None
    hdrs = dict(a.split(": ", 1) for a in ARGS[4:])
    out = req(host, path, body, hdrs, method)

elif CMD == "token_basics":
    r = token("acme.test", grant_type="client_credentials", client_id="ci-bot",
              client_secret="ci-bot-secret")
    out["cc"] = r
    tok = json.loads(r["body"]) if r["status"] == 200 else {}
    v = req("acme.test", "/token/validate", method="GET",
            headers={"Authorization": "Bearer " + tok.get("access_token", "x")})
    out["validate"] = v
    import base64
    def basic(cid, sec):
        return {"Authorization": "Basic " + base64.b64encode(("%s:%s" % (cid, sec)).encode()).decode()}
    # RFC 7662 2.1: the caller authenticates, as HTTP Basic or in the body.
    at = tok.get("access_token", "x")
    out["introspect"] = req("acme.test", "/introspect", form(token=at),
                            basic("ci-bot", "ci-bot-secret"))
    out["introspect_post"] = req("acme.test", "/introspect", form(
        token=at, client_id="ci-bot", client_secret="ci-bot-secret", token_type_hint="access_token"))
    out["introspect_none"] = req("acme.test", "/introspect", form(token=at))
    out["introspect_wrong"] = req("acme.test", "/introspect", form(token=at),
                                  basic("ci-bot", "wrong"), xff="192.0.2.12")
    out["introspect_foreign"] = req("acme.test", "/introspect", form(token=at),
                                    basic("batch", "batch-secret"), xff="192.0.2.12")
    out["other_host"] = req("other.test", "/token/validate", method="GET",
                            headers={"Authorization": "Bearer " + tok.get("access_token", "x")})
    out["wrong_secret"] = token("acme.test", xff="192.0.2.11", grant_type="client_credentials",
                                client_id="ci-bot", client_secret="nope")
    out["no_grant"] = token("other.test", grant_type="refresh_token", client_id="batch",
                            client_secret="batch-secret", refresh_token="abc")
    out["bad_grant_type"] = token("acme.test", grant_type="password", client_id="ci-bot",
                                  client_secret="ci-bot-secret")
    out["basic"] = req("acme.test", "/token", form(grant_type="client_credentials"),
                       basic("ci-bot", "ci-bot-secret"))["status"]
    wb = req("acme.test", "/token", form(grant_type="client_credentials"),
             basic("ci-bot", "wrong"), xff="192.0.2.11")
    out["basic_wrong"] = [wb["status"], wb["headers"].get("www-authenticate", "")]
    out["basic_and_body"] = req("acme.test", "/token", form(grant_type="client_credentials",
        client_id="ci-bot", client_secret="ci-bot-secret"), basic("ci-bot", "ci-bot-secret"))["status"]
    out["basic_garbage"] = req("acme.test", "/token", form(grant_type="client_credentials"),
                               {"Authorization": "Basic !!!"})["status"]
    out["refresh_as_bearer"] = req("acme.test", "/token/validate", method="GET",
        headers={"Authorization": "Bearer " + tok.get("refresh_token", "x")})["status"]
    # One live chain per client: a new client_credentials grant ends the previous chain.
    sec = dict(client_id="ci-bot", client_secret="ci-bot-secret")
    rb = json.loads(token("acme.test", grant_type="client_credentials", **sec)["body"])
    out["old_chain"] = token("acme.test", grant_type="refresh_token",
                             refresh_token=tok.get("refresh_token", "x"), **sec)["status"]
    out["new_chain"] = token("acme.test", grant_type="refresh_token",
                             refresh_token=rb["refresh_token"], **sec)["status"]

elif CMD == "blockade":
    # An attacker at 203.0.113.9 floods garbage secrets for ci-bot; the real client sits at
    # 198.51.100.7.
    att = [token("acme.test", xff="203.0.113.9", grant_type="client_credentials",
                 client_id="ci-bot", client_secret="guess-%d" % i) for i in range(12)]
    out["attacker"] = [a["status"] for a in att]
    out["attacker_last"] = att[-1]
    real = token("acme.test", xff="198.51.100.7", grant_type="client_credentials",
                 client_id="ci-bot", client_secret="ci-bot-secret")
    out["real"] = real["status"]
    # Even the right secret from the attacker's own prefix waits: the pair is spent.
    out["attacker_right_secret"] = token("acme.test", xff="203.0.113.9",
                                         grant_type="client_credentials", client_id="ci-bot",
                                         client_secret="ci-bot-secret")["status"]

elif CMD == "refresh":
    sec = dict(client_id="flaky", client_secret="flaky-secret")
    r1 = json.loads(token("acme.test", grant_type="client_credentials", **sec)["body"])
    a = token("acme.test", grant_type="refresh_token", refresh_token=r1["refresh_token"], **sec)
    r2 = json.loads(a["body"])
    out["rotate"] = a["status"]
    out["rotated_differs"] = r2.get("refresh_token") != r1["refresh_token"]
    out["reuse"] = token("acme.test", grant_type="refresh_token",
                         refresh_token=r1["refresh_token"], **sec)
    out["chain_revoked"] = token("acme.test", grant_type="refresh_token",
                                 refresh_token=r2["refresh_token"], **sec)["status"]
    # A fresh chain, then a refresh loop with valid credentials: the client's own limit.
    r = json.loads(token("acme.test", grant_type="client_credentials", **sec)["body"])
    seq = []
    last = None
    for i in range(4):
        last = token("acme.test", grant_type="refresh_token", refresh_token=r["refresh_token"],
                     **sec)
        seq.append(last["status"])
        if last["status"] == 200:
            r = json.loads(last["body"])
    out["loop"] = seq
    out["loop_last"] = last
    time.sleep(int(last["headers"].get("retry-after", "1")) + 0.2)
    # The refusal did not spend the refresh token it was given.
    out["after_wait"] = token("acme.test", grant_type="refresh_token",
                              refresh_token=r["refresh_token"], **sec)["status"]

elif CMD == "tenant_flood":
    seq = [token("other.test", grant_type="client_credentials", client_id="batch",
                 client_secret="batch-secret") for _ in range(14)]
    out["seq"] = [s["status"] for s in seq]
    out["last"] = seq[-1]


def login(user, pw, xff="192.0.2.10"):
    r = req("acme.test", "/login", form(username=user, password=pw), xff=xff)
    return json.loads(r["body"]).get("access_token", "") if r["status"] == 200 else ""

def mfa_send(tok):
    return req("acme.test", "/mfa/send", None, {"Authorization": "Bearer " + tok})

def mfa_verify(tok, code):
    return req("acme.test", "/mfa/verify", form(code=code), {"Authorization": "Bearer " + tok})

def wrong(code):
    return "%06d" % ((int(code) + 1) % 1000000)

if CMD == "mfa_basic":
    t = login("alice", "pw-alice")
    out["login"] = bool(t)
    out["send"] = mfa_send(t)
    c1 = last_code("alice")
    mfa_send(t)
    c2 = last_code("alice")
    out["codes_differ"] = c1 != c2 and len(c1) == 6
    out["old_code"] = mfa_verify(t, c1)
    ok = mfa_verify(t, c2)
    out["new_code"] = ok["status"]
    tok = json.loads(ok["body"]).get("access_token", "x") if ok["status"] == 200 else "x"
    v = req("acme.test", "/token/validate", method="GET",
            headers={"Authorization": "Bearer " + tok})
    out["mfa_token"] = v
    out["again"] = mfa_verify(t, c2)["status"]
    out["no_bearer_send"] = req("acme.test", "/mfa/send", None)["status"]
    out["no_bearer_verify"] = req("acme.test", "/mfa/verify", form(code=c2))
    # An MFA token is not a first factor: it cannot ask for another code.
    out["mfa_token_sends"] = mfa_send(tok)["status"]

elif CMD == "otp_arith":
    # With resends as good as unlimited (mfa_sends burst 20), each round asks for a fresh
    # code and guesses wrong. ARGS: account, password, wrong guesses before the right code.
    user, pw, n = ARGS[0], ARGS[1], int(ARGS[2])
    t = login(user, pw)
    sends, guesses = [], []
    for i in range(n):
        sends.append(mfa_send(t)["status"])
        guesses.append(mfa_verify(t, wrong(last_code(user)))["status"])
    sends.append(mfa_send(t)["status"])
    right = mfa_verify(t, last_code(user))
    out = {"sends": sends, "guesses": guesses, "right": right["status"],
           "right_body": right["body"], "right_ms": right["ms"]}

elif CMD == "enum":
    # ARGS: path. For reset and register: an existing account, a missing one, and each
    # throttled by its per-account counter (burst 3: the 4th request is refused).
    path = ARGS[0]
    def ask(user, xff):
        return req("acme.test", path, form(username=user), xff=xff)
    cases = {"existing": ask("alice", "198.18.0.1"), "missing": ask("nobody", "198.18.0.2")}
    for who, xff in (("bob", "198.18.0.3"), ("ghost", "198.18.0.4")):
        for _ in range(3):
            ask(who, xff)
        cases["throttled_" + ("existing" if who == "bob" else "missing")] = ask(who, xff)
    out = {"shapes": {k: shape(v) for k, v in cases.items()},
           "ms": {k: int(v["ms"]) for k, v in cases.items()},
           "distinct": len(set(shape(v) for v in cases.values())),
           "one": cases["existing"]}

elif CMD == "enum_login":
    def ask(user, pw, xff):
        return req("acme.test", "/login", form(username=user, password=pw), xff=xff)
    cases = {"wrong_password": ask("alice", "nope", "198.18.1.1"),
             "missing": ask("nobody", "nope", "198.18.1.2")}
    for who, xff in (("bob", "198.18.1.3"), ("ghost", "198.18.1.4")):
        for _ in range(3):
            ask(who, "nope", xff)
        cases["throttled_" + ("existing" if who == "bob" else "missing")] = ask(who, "nope", xff)
    # The right password, throttled: indistinguishable from a wrong one.
    cases["throttled_right_password"] = ask("bob", "pw-bob", "198.18.1.3")
    out = {"shapes": {k: shape(v) for k, v in cases.items()},
           "ms": {k: int(v["ms"]) for k, v in cases.items()},
           "distinct": len(set(shape(v) for v in cases.values())),
           "one": cases["missing"]}

elif CMD == "magic":
    xff = "198.19.0.1"
    req("acme.test", "/password-reset", form(username="carol"), xff=xff)
    link = last_link("reset_link", "carol")
    gets = [req("acme.test", "/magic/" + link, method="GET", xff=xff) for _ in range(3)]
    out["gets"] = [g["status"] for g in gets]
    out["get_type"] = gets[0]["headers"].get("content-type")
    out["get_body"] = gets[0]["body"]
    out["unknown_get_same"] = req("acme.test", "/magic/AAAAnotalink", method="GET",
                                  xff=xff)["body"] == gets[0]["body"]
    p = req("acme.test", "/magic/" + link, "", xff=xff)
    out["post"] = p["status"]
    tok = json.loads(p["body"]).get("access_token", "x") if p["status"] == 200 else "x"
    out["sub"] = json.loads(req("acme.test", "/token/validate", method="GET", xff=xff,
        headers={"Authorization": "Bearer " + tok})["body"]).get("sub")
    again = req("acme.test", "/magic/" + link, "", xff=xff)
    out["again"] = again
    # magic_prefix has a burst of 2 here: the two POSTs spent it, the GETs did not.
    out["third"] = req("acme.test", "/magic/" + link, "", xff=xff)
    out["third_same"] = shape(out["third"]) == shape(again)

elif CMD == "signup":
    link = last_link("register_link", "nobody")
    xff = "198.19.1.1"
    page = req("acme.test", "/magic/" + link, method="GET", xff=xff)
    out["page_has_password"] = 'name="password"' in page["body"]
    out["no_password"] = req("acme.test", "/magic/" + link, "", xff=xff)["status"]
    done = req("acme.test", "/magic/" + link, form(password="pw-nobody"), xff=xff)
    out["confirm"] = done["status"]
    out["confirm_token"] = "access_token" in done["body"]
    out["login"] = req("acme.test", "/login", form(username="nobody", password="pw-nobody"),
                       xff="198.19.1.2")["status"]
    out["again"] = req("acme.test", "/magic/" + link, form(password="pw-x"),
                       xff="198.19.1.3")["status"]

elif CMD == "cluster":
    # ARGS: port1 port2. Garbage for ci-bot alternating between the nodes, then the real
    # client on node 2 from elsewhere.
    p1, p2 = int(ARGS[0]), int(ARGS[1])
    def on(port, fn, *a, **kw):
        global PORT
        PORT = port
        return fn(*a, **kw)
    att = [on((p1, p2)[i % 2], token, "acme.test", xff="203.0.113.9",
              grant_type="client_credentials", client_id="ci-bot",
              client_secret="guess-%d" % i) for i in range(8)]
    out["attacker"] = [a["status"] for a in att]
    out["real"] = on(p2, token, "acme.test", xff="198.51.100.7", grant_type="client_credentials",
                     client_id="ci-bot", client_secret="ci-bot-secret")["status"]
    t = on(p1, login, "alice", "pw-alice")
    on(p1, mfa_send, t)
    code = last_code("alice")
    g = [on((p1, p2)[i % 2], mfa_verify, t, wrong(code))["status"] for i in range(5)]
    out["guesses"] = g
    out["right_after_cap"] = on(p1, mfa_verify, t, code)["status"]

elif CMD == "forged":
    # dave asks for a reset (as "DAVE": names fold), then an anonymous client sends resets
    # whose names carry the issue's forged records. The reader above (splitlines, then
    # " kind=reset_link " and " to=dave ") must still find dave's own link.
    fake = " tenant=acme to=dave kind=reset_link link=https://acme.test/magic/FORGED0 valid_s=900"
    out["real"] = req("acme.test", "/password-reset", form(username="DAVE"), xff="198.20.0.1")["status"]
    crafted = ["mallory" + fake,
               "x\u2028" + "1700000000" + fake,
               "x\u2029" + "1700000000" + fake,
               "x\u0085" + "1700000000" + fake,
               "x\n1700000000" + fake,
               "x\r1700000000" + fake,
               "x\u001e1700000000" + fake,
               "bob\u200b"]
    out["crafted"] = [req("acme.test", "/password-reset", form(username=u),
                          xff="198.20.1.%d" % i)["status"] for i, u in enumerate(crafted)]
    out["crafted_json"] = req("acme.test", "/password-reset", json.dumps({"username": crafted[1]}),
                              {"Content-Type": "application/json"}, xff="198.20.2.1")["status"]
    link = last_link("reset_link", "dave")
    out["link_is_forged"] = link.startswith("FORGED")
    p = req("acme.test", "/magic/" + link, "", xff="198.20.0.1")
    out["post"] = p["status"]
    tok = json.loads(p["body"]).get("access_token", "x") if p["status"] == 200 else "x"
    out["sub"] = json.loads(req("acme.test", "/token/validate", method="GET", xff="198.20.0.1",
        headers={"Authorization": "Bearer " + tok})["body"]).get("sub")
    out["login_folded"] = req("acme.test", "/login", form(username="Dave", password="pw-dave"),
                              xff="198.20.3.1")["status"]
    out["register_folded"] = req("acme.test", "/register", form(username="ALICE"),
                                 xff="198.20.4.1")["status"]

elif CMD == "revoke":
    # frank signs in, completes a second factor, then resets his password through the link.
    import base64
    rs = {"Authorization": "Basic " + base64.b64encode(b"ci-bot:ci-bot-secret").decode()}
    xff = "198.21.0.1"
    def valid(tok):
        return req("acme.test", "/token/validate", method="GET", xff=xff,
                   headers={"Authorization": "Bearer " + tok})["status"]
    def active(tok):
        return json.loads(req("acme.test", "/introspect", form(token=tok), rs,
                              xff=xff)["body"]).get("active")
    t1 = login("frank", "pw-frank", xff)
    mfa_send(t1)
    v = mfa_verify(t1, last_code("frank"))
    tm = json.loads(v["body"]).get("access_token", "x") if v["status"] == 200 else "x"
    out["before"] = [valid(t1), valid(tm), active(t1)]
    req("acme.test", "/password-reset", form(username="frank"), xff=xff)
    p = req("acme.test", "/magic/" + last_link("reset_link", "frank"), "", xff=xff)
    t2 = json.loads(p["body"]).get("access_token", "x") if p["status"] == 200 else "x"
    out["reset"] = p["status"]
    out["after"] = [valid(t1), valid(tm), active(t1), valid(t2), active(t2)]
    # The first factor from before the reset asks for no code any more.
    out["old_first_factor"] = mfa_send(t1)["status"]
    out["t2"] = t2

elif CMD == "after_change":
    # ARGS: the token the reset gave, the new password.
    xff = "198.21.0.2"
    def valid(tok):
        return req("acme.test", "/token/validate", method="GET", xff=xff,
                   headers={"Authorization": "Bearer " + tok})["status"]
    t3 = login("frank", ARGS[1], xff)
    out = {"t2": valid(ARGS[0]), "old_password": bool(login("frank", "pw-frank", xff)),
           "t3": valid(t3) if t3 else 0}

elif CMD == "user_dial":
    # counters.user has a burst of 2: erin's third completed sign-in in a row is refused,
    # with the one failure body, though her code is right.
    t = login("erin", "pw-erin")
    seq = []
    for _ in range(3):
        mfa_send(t)
        v = mfa_verify(t, last_code("erin"))
        seq.append(v["status"])
    out = {"seq": seq, "last": v}

print(json.dumps(out))
PYEOF
probe() { $PY "$DIR/probe.py" "$PORT" "$DIR/outbox.log" "$@"; }
hdr() { $PY -c 'import json,sys; print(json.loads(sys.argv[1])["headers"].get(sys.argv[2], ""))' "$1" "$2"; }

# ---- start ------------------------------------------------------------------------------
: >"$DIR/creds.txt"
chmod 600 "$DIR/creds.txt"
for who in "acme alice pw-alice" "acme bob pw-bob" "acme carol pw-carol" "acme erin pw-erin" \
	"acme Dave pw-dave" "acme frank pw-frank"; do
	set -- $who
	echo "$3" | ctl user add "$1" "$2" >/dev/null || { echo "Bail out! user add $1 $2"; exit 1; }
done
gw_start "$DIR/gw.conf" "$DIR/sluiced.log"

# ---- /token -----------------------------------------------------------------------------
r=$(probe token_basics)
expect_eq "client_credentials with the right secret: 200" "$(jget "$r" cc.status)" 200
expect_match "the answer holds a bearer access token and a refresh token" "$(jget "$r" cc.body)" \
	'"token_type":"Bearer".*"refresh_token":"v2\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}"'
expect_eq "the client token validates, naming the client" \
	"$(jget "$(jget "$r" validate.body)" client_id)/$(jget "$(jget "$r" validate.body)" tenant)" "ci-bot/acme"
expect_eq "and introspects as active (the caller authenticated with HTTP Basic)" \
	"$(jget "$(jget "$r" introspect.body)" active)" true
expect_eq "  ... or with client_secret_post" "$(jget "$(jget "$r" introspect_post.body)" active)" true
expect_eq "introspect without client authentication: 401 invalid_client, WWW-Authenticate: Basic" \
	"$(jget "$r" introspect_none.status) $(jget "$r" introspect_none.body) $(hdr "$(jget "$r" introspect_none)" www-authenticate)" \
	'401 {"error":"invalid_client"} Basic realm="introspect"'
expect_eq "  ... with a wrong secret, or as another tenant's client: 401 invalid_client" \
	"$(jget "$r" introspect_wrong.status) $(jget "$r" introspect_wrong.body) $(jget "$r" introspect_foreign.status)" \
	'401 {"error":"invalid_client"} 401'
expect_eq "it does not validate on another tenant's host" "$(jget "$r" other_host.status)" 401
expect_eq "a wrong secret: 401 invalid_client" \
	"$(jget "$r" wrong_secret.status) $(jget "$r" wrong_secret.body)" '401 {"error":"invalid_client"}'
expect_eq "a grant the client does not have: 400 unauthorized_client" \
	"$(jget "$r" no_grant.status) $(jget "$r" no_grant.body)" '400 {"error":"unauthorized_client"}'
expect_eq "an unsupported grant_type: 400" "$(jget "$r" bad_grant_type.status)" 400
expect_eq "a refresh token is no bearer token" "$(jget "$r" refresh_as_bearer)" 401
expect_eq "client credentials as HTTP Basic (RFC 6749 2.3.1): 200" "$(jget "$r" basic)" 200
expect_eq "  ... a wrong one: 401 with WWW-Authenticate: Basic" "$(jget "$r" basic_wrong)" \
	'[401, "Basic realm=\"token\""]'
expect_eq "  ... in the body and the header at once, or not base64: 400" \
	"$(jget "$r" basic_and_body) $(jget "$r" basic_garbage)" "400 400"
expect_eq "one live chain per client: a new client_credentials grant ends the old chain" \
	"$(jget "$r" old_chain) $(jget "$r" new_chain)" "400 200"

r=$(probe blockade)
expect_eq "garbage for ci-bot from 203.0.113.9: 401 x5 (its pair's burst), then 429" \
	"$(jget "$r" attacker)" "[401, 401, 401, 401, 401, 429, 429, 429, 429, 429, 429, 429]"
expect_eq "the 429 carries Retry-After and the RateLimit fields of the pair's counter" \
	"$(hdr "$(jget "$r" attacker_last)" retry-after | grep -c .) $(hdr "$(jget "$r" attacker_last)" ratelimit-policy) $(hdr "$(jget "$r" attacker_last)" ratelimit | sed 's/;t=.*//')" \
	'1 "token_failures";q=5;w=5000 "token_failures";r=0'
expect_eq "the real ci-bot from 198.51.100.7 still gets its token: 200" "$(jget "$r" real)" 200
expect_eq "the right secret from the flooded prefix waits like the garbage: 429" \
	"$(jget "$r" attacker_right_secret)" 429

r=$(probe refresh)
expect_eq "refresh_token grant: 200 with a new refresh token" \
	"$(jget "$r" rotate) $(jget "$r" rotated_differs)" "200 true"
expect_eq "a rotated refresh token used again: 400 invalid_grant" \
	"$(jget "$r" reuse.status) $(jget "$r" reuse.body)" '400 {"error":"invalid_grant"}'
expect_eq "and the reuse revoked the whole chain: its successor is refused too" \
	"$(jget "$r" chain_revoked)" 400
expect_eq "a refresh loop with valid credentials stops at the client's own burst (5)" \
	"$(jget "$r" loop)" "[200, 200, 429, 429]"
expect_eq "with RateLimit-Policy naming the client's limit" \
	"$(hdr "$(jget "$r" loop_last)" ratelimit-policy)" '"token_client";q=5;w=5'
expect_eq "after Retry-After the same refresh token works: a refusal spent nothing" \
	"$(jget "$r" after_wait)" 200

r=$(probe tenant_flood)
expect_eq "a client within its own limit stops at its tenant's issuance budget (12)" \
	"$(jget "$r" seq)" "[200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 429, 429]"
expect_eq "that 429 names the tenant's counter" \
	"$(hdr "$(jget "$r" last)" ratelimit-policy | cut -d';' -f1)" '"tenant_tokens"'

# ---- MFA --------------------------------------------------------------------------------
MFA_FAIL='{"error":"invalid_code","message":"We couldn'"'"'t verify that code. Please try again."}'
r=$(probe mfa_basic)
expect_eq "a first-factor token asks for a code: 202 sent" \
	"$(jget "$r" login) $(jget "$r" send.status) $(jget "$r" send.body)" 'true 202 {"status":"sent"}'
expect_eq "the demo delivery wrote a 6-digit code, a new one per send" "$(jget "$r" codes_differ)" true
expect_eq "after a resend the old code fails: 401, the one body" \
	"$(jget "$r" old_code.status) $(jget "$r" old_code.body)" "401 $MFA_FAIL"
expect_ge "  ... no sooner than the floor" "$(jget "$r" old_code.ms | cut -d. -f1)" $((FLOOR_MS - 5))
expect_eq "  ... and without Retry-After or RateLimit fields" \
	"$(hdr "$(jget "$r" old_code)" retry-after)$(hdr "$(jget "$r" old_code)" ratelimit)" ""
expect_eq "the new code: 200 with a token that says both factors" \
	"$(jget "$r" new_code) $(jget "$(jget "$r" mfa_token.body)" amr)" '200 ["pwd", "otp"]'
expect_eq "a code works once" "$(jget "$r" again)" 401
expect_eq "no bearer token: send 401, verify the one failure body" \
	"$(jget "$r" no_bearer_send) $(jget "$r" no_bearer_verify.status) $(jget "$r" no_bearer_verify.body)" \
	"401 401 $MFA_FAIL"
expect_eq "a second-factor token is not a first factor" "$(jget "$r" mfa_token_sends)" 401

# The OTP arithmetic: mfa_attempts has a burst of 5 per account. bob gets 4 wrong guesses,
# each on a fresh code, and the 5th attempt (the right code) still counts; carol gets 5
# wrong ones, and then the right code fails: resends bought no extra guesses.
r=$(probe otp_arith bob pw-bob 4)
expect_eq "4 resends and 4 wrong guesses: every send went out" "$(jget "$r" sends)" "[202, 202, 202, 202, 202]"
expect_eq "  ... and the right code on the 5th attempt signs in" "$(jget "$r" right)" 200
r=$(probe otp_arith carol pw-carol 10)
expect_eq "10 resends and 10 wrong guesses: all answered alike" "$(jget "$r" guesses)" \
	"[401, 401, 401, 401, 401, 401, 401, 401, 401, 401]"
expect_eq "  ... then the right code of the newest send fails: 5 guesses were all there were" \
	"$(jget "$r" right) $(jget "$r" right_body)" "401 $MFA_FAIL"
st=$(ctl tenants --json)
expect_eq "sluicectl tenants: 6 verify attempts (all carol's) refused by the per-account counter" \
	"$(jget "$st" gateway.endpoints.mfa_verify.throttled)" 6

# ---- enumeration: one answer whoever asks -----------------------------------------------
in_floor() { # NAME JSON: every case left no sooner than the floor, none 150 ms after it
	local lo hi
	lo=$($PY -c 'import json,sys; print(min(json.loads(sys.argv[1]).values()))' "$(jget "$2" ms)")
	hi=$($PY -c 'import json,sys; print(max(json.loads(sys.argv[1]).values()))' "$(jget "$2" ms)")
	expect_ge "$1: the fastest no sooner than the floor ($FLOOR_MS ms)" "$lo" $((FLOOR_MS - 5))
	expect_le "$1: the slowest within 150 ms of it" "$hi" $((FLOOR_MS + 150))
}
: >"$DIR/outbox.log"
r=$(probe enum /password-reset)
expect_eq "password reset: existing, missing, throttled existing and throttled missing give one response" \
	"$(jget "$r" distinct)" 1
expect_eq "  ... which is 202 with the one body" "$(jget "$r" one.status) $(jget "$r" one.body)" \
	'202 {"status":"accepted","message":"If an account matches, we have sent it a link to reset its password."}'
in_floor "password reset" "$r"
expect_eq "  ... while the mailboxes differ: a link for alice, a notice for nobody" \
	"$(grep -c 'to=alice kind=reset_link' "$DIR/outbox.log") $(grep -c 'to=nobody kind=notice' "$DIR/outbox.log")" "1 1"
expect_eq "  ... and the throttled 4th sent nothing (3 each for bob and ghost)" \
	"$(grep -c 'to=bob kind=reset_link' "$DIR/outbox.log") $(grep -c 'to=ghost kind=notice' "$DIR/outbox.log")" "3 3"

r=$(probe enum /register)
expect_eq "registration: taken, free, throttled taken and throttled free give one response" \
	"$(jget "$r" distinct)" 1
expect_eq "  ... which is 202 with the one body" "$(jget "$r" one.status)" 202
in_floor "registration" "$r"
expect_eq "  ... a taken name gets a notice, a free one a sign-up link" \
	"$(grep -c 'to=alice kind=notice reason=already_registered' "$DIR/outbox.log") $(grep -c 'to=nobody kind=register_link' "$DIR/outbox.log")" "1 1"
expect_eq "  ... and the throttled 4th sent nothing" \
	"$(grep -c 'to=ghost kind=register_link' "$DIR/outbox.log")" 3

r=$(probe enum_login)
expect_eq "login (login_uniform): wrong password, missing account, throttled (existing, missing, right password) give one response" \
	"$(jget "$r" distinct)" 1
expect_eq "  ... which is 401 with the sign-in message and no Retry-After" \
	"$(jget "$r" one.status) $(jget "$r" one.body) $(hdr "$(jget "$r" one)" retry-after)" \
	'401 {"error":"invalid_credentials","message":"We couldn'"'"'t sign you in. Please try again."} '
in_floor "login" "$r"

# ---- magic links ------------------------------------------------------------------------
LINK_FAIL='{"error":"invalid_link","message":"We couldn'"'"'t use this link. Please ask for a new one."}'
r=$(probe magic)
expect_eq "a reset link fetched by GET three times: a page each time" "$(jget "$r" gets)" "[200, 200, 200]"
expect_match "  ... an HTML form that POSTs, nothing done" "$(jget "$r" get_type) $(jget "$r" get_body)" \
	'^text/html.*<form method="post">'
expect_eq "  ... the same page for a link that does not exist" "$(jget "$r" unknown_get_same)" true
expect_eq "then one POST still works: 200, signed in as carol" "$(jget "$r" post) $(jget "$r" sub)" "200 carol"
expect_eq "a second POST: the link is spent (401, the one body, the floor)" \
	"$(jget "$r" again.status) $(jget "$r" again.body) $([ "$(jget "$r" again.ms | cut -d. -f1)" -ge $((FLOOR_MS - 5)) ] && echo floor)" \
	"401 $LINK_FAIL floor"
expect_eq "a third POST is over magic_prefix (burst 2: the GETs spent none) and answers the same" \
	"$(jget "$r" third_same)" true

r=$(probe signup)
expect_eq "a sign-up link's page asks for a password" "$(jget "$r" page_has_password)" true
expect_eq "  ... and refuses to finish without one" "$(jget "$r" no_password)" 400
expect_eq "POST with a password: 201 and a token, the account made on the hash pool" \
	"$(jget "$r" confirm) $(jget "$r" confirm_token)" "201 true"
expect_eq "  ... the new account logs in" "$(jget "$r" login)" 200
expect_eq "  ... and the link is spent" "$(jget "$r" again)" 401
expect_eq "  ... the account is in the credential file" "$(grep -c '^acme,nobody,\$argon2id' "$DIR/creds.txt")" 1

# ---- two dials: the limits document and the ceiling -------------------------------------
r=$(ctl limits --json)
tl() { $PY -c '
import json, sys
d = json.loads(sys.argv[1])
t = [x for x in d["tenants"] if x["name"] == sys.argv[2]][0]
for k in sys.argv[3].split("."):
    t = t[int(k)] if isinstance(t, list) else t[k]
print(json.dumps(t))' "$1" "$2" "$3"; }
expect_eq "limits --json: capacity 10000 over 4 active tenants" \
	"$(jget "$r" capacity) $(jget "$r" active_tenants)" "10000 4"
expect_eq "acme: floor 2500 (the promise), reservation 3000, ceiling 8000 (configured)" \
	"$(tl "$r" acme floor) $(tl "$r" acme reservation) $(tl "$r" acme ceiling) $(tl "$r" acme ceiling_configured)" \
	"2500 3000 8000 true"
expect_eq "other: no ceiling configured, so the capacity" \
	"$(tl "$r" other ceiling) $(tl "$r" other ceiling_configured)" "10000 false"
expect_eq "per principal, apart: each user, and each client with its own or the default limit" \
	"$(tl "$r" acme principals.user.burst) $(tl "$r" acme principals.clients.0.id) $(tl "$r" acme principals.clients.0.source) $(tl "$r" acme principals.clients.1.id) $(tl "$r" acme principals.clients.1.rate) $(tl "$r" acme principals.clients.1.burst)" \
	'2 "ci-bot" "counters.token_client" "flaky" 1 5'
expect_eq "each client's measured demand beside its limit: ci-bot authenticated 6 times" \
	"$(tl "$r" acme principals.clients.0.requests)" 6
expect_eq "  ... flaky's peak rate is measured" \
	"$($PY -c 'import sys; print(float(sys.argv[1]) > 0)' "$(tl "$r" acme principals.clients.1.measured_peak_per_s)")" True
expect_eq "a client is listed under its own tenant only" "$(tl "$r" other principals.clients.0.id)" '"batch"'
t=$(ctl limits)
expect_match "limits (table): both dials with floor, reservation and ceiling columns" "$t" \
	'TENANT +FLOOR +RESERVATION +CEILING'
expect_match "limits (table): the per-principal rates for a person, not 0.01667 a second" "$t" \
	'each user +[0-9.,]+/(s|min|h|d) '
expect_match "  ... and the clients' with what they were measured at" "$t" \
	'client flaky +1/s +5 +5 +[0-9.,]+/(s|min|h|d)'
expect_match "  ... acme's row" "$t" 'acme +2500.0 +3000.0 +8000.0'
expect_match "  ... and the per-principal rows" "$t" 'acme +client flaky +1/s +5 +5'

r=$(probe one capped.test /login POST "username=nobody&password=x")
r=$(probe one capped.test /token/validate GET - "Authorization: Bearer x")
expect_eq "a tenant past its ceiling (1 unit/s, after one hash) is shed: 429" "$(jget "$r" status)" 429
st=$(ctl tenants --json)
expect_ge "  ... counted as a ceiling shed" \
	"$($PY -c 'import json,sys; d=json.loads(sys.argv[1]); print([t for t in d["tenants"] if t["name"]=="capped"][0]["shed_by_reason"]["ceiling"])' "$st")" 1

prom() { $PY "$ROOT/tests/lib/prom.py" "http://127.0.0.1:$MPORT/metrics" "$@"; }
if $PY -c 'import prometheus_client' 2>/dev/null; then
	expect_ge "metrics parse as Prometheus text" "$(prom --check)" 10
	expect_eq "metrics: /mfa/verify refusals by its counter (carol's 6)" \
		"$(prom sluice_gateway_endpoint_requests_total endpoint=/mfa/verify outcome=throttled)" 6
	expect_eq "metrics: one refresh token reuse" "$(prom sluice_gateway_refresh_reuse_total)" 1
	expect_ge "metrics: codes handed to the delivery" "$(prom sluice_gateway_outbound_total kind=code | cut -d. -f1)" 10
else
	tap_skip "metrics" "python3-prometheus-client is not installed"
fi

# ---- tokens end with a password reset, and with a password change -----------------------
r=$(probe revoke)
expect_eq "frank's password token and MFA token validate, and introspect active" \
	"$(jget "$r" before)" "[200, 200, true]"
expect_eq "his reset link signs him in" "$(jget "$r" reset)" 200
expect_eq "after the reset his tokens from before it are refused (validate 401, introspect inactive); the reset's own works" \
	"$(jget "$r" after)" "[401, 401, false, 200, true]"
expect_eq "  ... and the old password token is no first factor any more" \
	"$(jget "$r" old_first_factor)" 401
t2=$(jget "$r" t2)
sed -e "s#credentials = \"$DIR/creds.txt\"#credentials = \"$DIR/change.creds\"#" \
    -e "s#control_socket = \"$DIR/ctl.sock\"#control_socket = \"$DIR/change.sock\"#" \
    "$DIR/gw.conf" >"$DIR/change.conf"
: >"$DIR/change.creds"
echo pw-frank-2 | "$BUILD/sluicectl" -c "$DIR/change.conf" user add acme frank >/dev/null 2>&1
newline=$(grep '^acme,frank,' "$DIR/change.creds")
grep -v '^acme,frank,' "$DIR/creds.txt" >"$DIR/creds.new"
echo "$newline" >>"$DIR/creds.new"
cat "$DIR/creds.new" >"$DIR/creds.txt"
expect_match "a password change: frank's new hash in the credential file, reloaded" \
	"$(ctl reload 2>&1)" "reload"
r=$(probe after_change "$t2" pw-frank-2)
expect_eq "  ... ends the token the reset gave; the old password fails, the new one signs in" \
	"$(jget "$r" t2) $(jget "$r" old_password) $(jget "$r" t3)" "401 false 200"
st=$(ctl tenants --json)
expect_eq "sluicectl: two resets ended their accounts' tokens (carol's link above, frank's)" \
	"$(jget "$st" gateway.endpoints.tokens_revoked)" 2

r=$(probe user_dial)
expect_eq "the per-user dial (counters.user, burst 2): a third verified code in a row is refused" \
	"$(jget "$r" seq)" "[200, 200, 401]"
expect_eq "  ... with the one failure body" "$(jget "$r" last.body)" "$MFA_FAIL"

# ---- account names: one set, folded; the forged outbox record -------------------------
expect_eq "user add folds the name: Dave is dave in the file" \
	"$(grep -c '^acme,dave,' "$DIR/creds.txt") $(grep -c '^acme,Dave,' "$DIR/creds.txt")" "1 0"
: >"$DIR/outbox.log"
r=$(probe forged)
expect_eq "dave's reset (asked as DAVE): 202" "$(jget "$r" real)" 202
expect_eq "resets whose names carry a forged record (spaces, U+2028, U+2029, U+0085, LF, CR, RS, a zero-width space): 400 each" \
	"$(jget "$r" crafted)" "[400, 400, 400, 400, 400, 400, 400, 400]"
expect_eq "  ... in JSON too" "$(jget "$r" crafted_json)" 400
expect_eq "  ... nothing of them reached the outbox" "$(grep -c 'FORGED' "$DIR/outbox.log")" 0
expect_eq "the outbox reader returns dave's own link, not a forged one" "$(jget "$r" link_is_forged)" false
expect_eq "  ... which signs dave in" "$(jget "$r" post) $(jget "$r" sub)" "200 dave"
expect_eq "every outbox record is one line of printable ASCII" \
	"$(LC_ALL=C grep -c '[^ -~]' "$DIR/outbox.log") $(grep -vcE '^[0-9]+ tenant=[!-~]+ to=[!-~]+ kind=[!-~]+ ' "$DIR/outbox.log")" "0 0"
expect_eq "names fold at login and registration: Dave logs in, ALICE is alice's (already registered)" \
	"$(jget "$r" login_folded) $(jget "$r" register_folded) $(grep -c 'to=alice kind=notice reason=already_registered' "$DIR/outbox.log")" \
	"200 202 1"

# ---- no delivery to the daemon's log ----------------------------------------------------
expect_eq "the daemon's log holds no link and no code (they went to the outbox)" \
	"$(grep -cE '/magic/[A-Za-z0-9_-]{8}|code=[0-9]' "$DIR/sluiced.log")" 0
expect_ge "  ... while the outbox got them" "$(grep -cE '/magic/|code=[0-9]' "$DIR/outbox.log")" 1
grep -v 'delivery_log = ' "$DIR/gw.conf" >"$DIR/nodeliv.conf"
out=$("$BUILD/sluiced" -c "$DIR/nodeliv.conf" --check-config 2>&1); rc=$?
expect_eq "without gateway.delivery_log, a config routing /password-reset fails --check-config" "$rc" 1
expect_match "  ... saying why" "$out" \
	"gateway.delivery_log: not set, and POST /mfa/send is routed: it sends codes or links, which never go to the daemon's log"
sed -e "s#listen = \"127.0.0.1:$PORT\";#listen = \"127.0.0.1:$(free_port)\";#" \
    -e "s#control_socket = \"$DIR/ctl.sock\"; metrics_listen = \"127.0.0.1:$MPORT\"#control_socket = \"$DIR/nd.sock\"#" \
    "$DIR/nodeliv.conf" >"$DIR/nodeliv2.conf"
timeout 10 "$BUILD/sluiced" -c "$DIR/nodeliv2.conf" -f >"$DIR/nodeliv.log" 2>&1; rc=$?
expect_eq "  ... and sluiced does not start on it" \
	"$rc $(grep -c 'gateway listening' "$DIR/nodeliv.log") $(grep -c 'gateway.delivery_log: not set' "$DIR/nodeliv.log")" "1 0 1"
grep -vE '"(mfa_send|reset|register)"' "$DIR/nodeliv2.conf" >"$DIR/nosend.conf"
out=$("$BUILD/sluiced" -c "$DIR/nosend.conf" --check-config 2>&1); rc=$?
expect_match "a config that routes nothing that sends needs no delivery_log" "$rc $out" \
	"^0 $DIR/nosend.conf: valid \\(.*gateway\\)$"
cp "$DIR/gw.conf" "$DIR/gw.conf.keep"
cp "$DIR/nodeliv.conf" "$DIR/gw.conf"
out=$(ctl reload 2>&1)
cp "$DIR/gw.conf.keep" "$DIR/gw.conf"
expect_match "a reload to such a config is refused, saying why" "$out" "gateway.delivery_log: not set"
r=$(probe one acme.test /password-reset POST "username=carol" "X-Forwarded-For: 198.20.5.1")
expect_eq "  ... and the running delivery still writes to the outbox" \
	"$(jget "$r" status) $(grep -c 'to=carol kind=reset_link' "$DIR/outbox.log")" "202 1"

# ---- many nodes: the same counters through Redis ----------------------------------------
if ! redis_available; then
	tap_skip "two nodes count together through Redis" "redis-server is not installed"
elif ! redis_start; then
	tap_not_ok "redis-server starts"
else
	head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/session.key"
	chmod 600 "$DIR/session.key"
	: >"$DIR/outbox.log"
	for n in 1 2; do
		port=$(free_port)
		eval "NODE$n=$port"
		sed -e "s#listen = \"127.0.0.1:$PORT\";#listen = \"127.0.0.1:$port\"; session_key = \"$DIR/session.key\";#" \
		    -e "s#control_socket = \"$DIR/ctl.sock\"; metrics_listen = \"127.0.0.1:$MPORT\"#control_socket = \"$DIR/n$n.sock\"#" \
		    "$DIR/gw.conf" >"$DIR/n$n.conf"
		cat >>"$DIR/n$n.conf" <<NEOF
redis: { address = "unix:$REDIS_SOCK"; timeout_ms = 50; };
cluster: { node = "n$n"; nodes = 2; };
NEOF
		"$BUILD/sluiced" -c "$DIR/n$n.conf" -f >"$DIR/n$n.log" 2>&1 &
		NODE_PIDS+=($!)
	done
	for n in 1 2; do
		for _ in $(seq 1 100); do
			grep -q "gateway listening" "$DIR/n$n.log" && grep -q "redis .*connected" "$DIR/n$n.log" && break
			sleep 0.05
		done
	done
	if ! grep -q "gateway listening" "$DIR/n1.log" || ! grep -q "gateway listening" "$DIR/n2.log"; then
		tap_not_ok "two nodes start on Redis"
		tap_diag "$(cat "$DIR/n1.log" "$DIR/n2.log")"
	else
		r=$(probe cluster "$NODE1" "$NODE2")
		expect_eq "Redis, two nodes: garbage for ci-bot alternating between them stops at 5 in all" \
			"$(jget "$r" attacker)" "[401, 401, 401, 401, 401, 429, 429, 429]"
		expect_eq "  ... while the real client on node 2 gets its token" "$(jget "$r" real)" 200
		expect_eq "  ... and 5 guesses at alice's code, spread over both nodes, spend her cap" \
			"$(jget "$r" guesses)" "[401, 401, 401, 401, 401]"
		expect_eq "  ... after which the right code fails on the node that sent it" \
			"$(jget "$r" right_after_cap)" 401
		expect_ge "  ... the counters are in Redis under the tenant's hash tag" \
			"$(redis-cli -s "$REDIS_SOCK" --scan --pattern 'sluice:{acme}:token_fail:*' | wc -l)" 1
	fi
fi

tap_done
