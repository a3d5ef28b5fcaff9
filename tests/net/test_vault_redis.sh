#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The vault shared through Redis (issue 15, item 4): two gateway nodes (two sluiced on
# loopback ports) on one redis-server on a Unix socket, the same config and session key, each
# with its own "log" delivery (so the test reads which node sent what).
#
#   - a code sent through node A verifies on node B, once: a second use on either node fails;
#   - wrong codes spend the account's attempts across the nodes, not per node;
#   - a sign-in link issued by A is consumed on B, once; a sign-up link likewise;
#   - a refresh token rotates A -> B -> A; a spent generation replayed on B ends the chain for
#     both nodes (the live token fails on A too);
#   - a password reset's link consumed on B ends the account's earlier tokens on A and B (the
#     revocation is in Redis), while the link's new token counts on both;
#   - floods: twenty codes for one account leave one key (each replaced the one before),
#     five resets five links, a forged refresh token is refused on both nodes and ends
#     nothing, one chain per client;
#   - nothing in Redis (every key and value, by SCAN) holds an account name, a code, a link's
#     secret or a token;
#   - Redis not answering (stopped with SIGSTOP, then killed): the vault's endpoints answer 503
#     with Retry-After within the timeout and the floor, on both nodes; nothing hangs.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/gateway.sh"
gw_redis_suite vault
cleanup() {
	redis_resume 2>/dev/null
	gw_nodes_stop
	redis_stop
	suite_rm_dir "$NT_DIR"
}
trap cleanup EXIT
redis_start || { echo "Bail out! redis-server did not start"; exit 1; }

hash_of() { $PY -c 'import hashlib,sys; print("blake2b256:" + hashlib.blake2b(sys.argv[1].encode(), digest_size=32).hexdigest())' "$1"; }
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$NT_DIR/session.key"
chmod 600 "$NT_DIR/session.key"
: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
TIMEOUT_MS=200
FLOOR_MS=100

write_conf() { # node port metrics-port
	cat >"$NT_DIR/$1.conf" <<EOF
tenants = ( { name = "default"; reservation = 0.0; },
            { name = "acme"; hosts = ["acme.test"]; reservation = 3000.0; } );
routes = (
  { name = "login"; method = "POST"; path = "/login"; cpu = 10.0; },
  { name = "token"; method = "POST"; path = "/token"; cpu = 10.0; },
  { name = "validate"; method = "GET"; path = "/token/validate"; cpu = 1.0; },
  { name = "mfa_send"; method = "POST"; path = "/mfa/send"; cpu = 5.0; },
  { name = "mfa_verify"; method = "POST"; path = "/mfa/verify"; cpu = 2.0; },
  { name = "reset"; method = "POST"; path = "/password-reset"; cpu = 10.0; },
  { name = "register"; method = "POST"; path = "/register"; cpu = 10.0; },
  { name = "magic_page"; method = "GET"; path = "/magic/"; cpu = 1.0; },
  { name = "magic_confirm"; method = "POST"; path = "/magic/"; cpu = 10.0; }
);
gateway: {
  listen = "127.0.0.1:$2";
  credentials = "$NT_DIR/creds.txt";
  session_key = "$NT_DIR/session.key";
  capacity = { cpu = 100000.0; db = 4.0; };
  argon2 = { m_cost_kib = 256; t_cost = 1; parallelism = 1; memory_budget_mib = 1; };
  trusted_hops = 1;
  reject_floor_ms = $FLOOR_MS;
  delivery = "log";
  delivery_log = "$NT_DIR/$1.outbox";
  link_base = "https://acme.test";
  clients = ( { id = "ci-bot"; tenant = "acme"; secret_hash = "$(hash_of ci-bot-secret)"; } );
};
redis: { address = "unix:$REDIS_SOCK"; timeout_ms = $TIMEOUT_MS; breaker_open_ms = 300; };
cluster: { node = "$1"; nodes = 2; };
counters: {
  mfa_attempts = { rate = 0.001; burst = 5.0; };
  user = { rate = 0.001; burst = 20.0; };
  token_client = { rate = 1000.0; burst = 1000.0; };
  tenant_tokens = { rate = 1000.0; burst = 1000.0; };
  # Budgets that hold while Redis is away, so what answers then is the vault's fail mode.
  mfa_sends = { rate = 1000.0; burst = 1000.0; };
  reset_account = { rate = 1000.0; burst = 1000.0; };
  reset_prefix = { rate = 1000.0; burst = 1000.0; };
  outbound = { rate = 1000.0; burst = 1000.0; static_rate = 100.0; static_burst = 100.0; };
  reset_tenant = { rate = 1000.0; burst = 1000.0; static_rate = 100.0; static_burst = 100.0; };
};
stream: { enabled = false; };
daemon: { control_socket = "$NT_DIR/$1.sock"; metrics_listen = "127.0.0.1:$3"; };
EOF
}
ctl() { "$BUILD/sluicectl" -c "$NT_DIR/$1.conf" "${@:2}"; }
PA=$(free_port); MA=$(free_port)
write_conf a "$PA" "$MA"
PB=$(free_port); MB=$(free_port)
write_conf b "$PB" "$MB"
for who in "alice pw-alice-1" "bob pw-bob-22" "carol pw-carol-333"; do
	set -- $who
	echo "$2" | ctl a user add acme "$1" >/dev/null || { echo "Bail out! user add $1"; exit 1; }
done
gw_nodes_start a b

cat >"$NT_DIR/drive.py" <<'PYEOF'
import http.client, json, re, sys, time
from urllib.parse import urlencode
PORTS = {"a": int(sys.argv[1]), "b": int(sys.argv[2])}
DIR = sys.argv[3]
CMD = sys.argv[4]
ARGS = sys.argv[5:]

def req(node, path, body=None, headers=None, method="POST", xff="192.0.2.10"):
    h = {"Host": "acme.test", "X-Forwarded-For": xff}
    if body is not None:
        h["Content-Type"] = "application/x-www-form-urlencoded"
    h.update(headers or {})
    c = http.client.HTTPConnection("127.0.0.1", PORTS[node], timeout=10)
    t0 = time.monotonic()
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read().decode("utf-8", "replace")
    ms = (time.monotonic() - t0) * 1000
    out = {"status": r.status, "retry_after": r.getheader("Retry-After"), "body": data,
           "ms": round(ms, 1)}
    c.close()
    return out

def outbox(node, kind, to):
    try:
        text = open("%s/%s.outbox" % (DIR, node)).read()
    except OSError:
        return ""
    lines = [l for l in text.splitlines() if " kind=%s " % kind in l and " to=%s " % to in l]
    return lines[-1] if lines else ""

def code_of(node, to):
    m = re.search(r"code=(\d{6})", outbox(node, "otp", to))
    return m.group(1) if m else ""

def link_of(node, kind, to):
    m = re.search(r"/magic/([A-Za-z0-9_-]+)", outbox(node, kind, to))
    return m.group(1) if m else ""

def body(r, k):
    try:
        return json.loads(r["body"]).get(k, "")
    except ValueError:
        return ""

def login(node, user, pw):
    return body(req(node, "/login", urlencode({"username": user, "password": pw})),
                "access_token")

def send(node, tok):
    return req(node, "/mfa/send", "", {"Authorization": "Bearer " + tok})

def verify(node, tok, code):
    return req(node, "/mfa/verify", urlencode({"code": code}),
               {"Authorization": "Bearer " + tok})

def cc(node):
    return req(node, "/token", urlencode({"grant_type": "client_credentials",
                                          "client_id": "ci-bot",
                                          "client_secret": "ci-bot-secret"}))

def validate(node, tok):
    return req(node, "/token/validate", method="GET",
               headers={"Authorization": "Bearer " + tok})["status"]

def refresh(node, rt):
    return req(node, "/token", urlencode({"grant_type": "refresh_token", "client_id": "ci-bot",
                                          "client_secret": "ci-bot-secret",
                                          "refresh_token": rt}))

out = {}
if CMD == "mfa":
    tok = login("a", "alice", "pw-alice-1")
    out["login"] = bool(tok)
    out["send_a"] = send("a", tok)["status"]
    code = code_of("a", "alice")
    out["code_in_a"] = bool(code)
    out["code_in_b"] = bool(code_of("b", "alice"))
    v = verify("b", tok, code)
    out["verify_b"] = v["status"]
    out["amr"] = body(v, "access_token") != ""
    out["again_a"] = verify("a", tok, code)["status"]
    out["again_b"] = verify("b", tok, code)["status"]
    out["secrets"] = [code, tok, body(v, "access_token")]
elif CMD == "attempts":
    tok = login("b", "bob", "pw-bob-22")
    out["send_b"] = send("b", tok)["status"]
    code = code_of("b", "bob")
    wrong = "%06d" % ((int(code) + 1) % 1000000)
    out["wrong"] = [verify(n, tok, wrong)["status"] for n in "ababa"]
    # the sixth attempt of the account, the right code, on either node: refused
    out["right_a"] = verify("a", tok, code)["status"]
    out["right_b"] = verify("b", tok, code)["status"]
    out["secrets"] = [code, tok]
elif CMD == "link":
    old = login("a", "carol", "pw-carol-333")
    out["old_valid"] = [validate("a", old), validate("b", old)]
    time.sleep(0.01)
    r = req("a", "/password-reset", urlencode({"username": "carol"}))
    out["reset_a"] = r["status"]
    link = link_of("a", "reset_link", "carol")
    out["link_in_a"] = bool(link)
    page = req("b", "/magic/" + link, method="GET")
    out["page_b"] = [page["status"], "Continue signing in" in page["body"]]
    p = req("b", "/magic/" + link, "")
    out["post_b"] = p["status"]
    out["post_b_token"] = body(p, "access_token") != ""
    new = body(p, "access_token")
    # the reset on B ended carol's earlier tokens on both nodes; the new one counts
    out["old_after"] = [validate("a", old), validate("b", old), send("a", old)["status"]]
    out["new_after"] = [validate("a", new), validate("b", new)]
    out["again_a"] = req("a", "/magic/" + link, "")["status"]
    out["again_b"] = req("b", "/magic/" + link, "")["status"]
    forged = link[:-2] + ("AA" if link[-2:] != "AA" else "BB")
    out["forged"] = req("b", "/magic/" + forged, "")["status"]
    r = req("a", "/register", urlencode({"username": "erin"}))
    out["register_a"] = r["status"]
    reg = link_of("a", "register_link", "erin")
    out["reg_in_a"] = bool(reg)
    s = req("b", "/magic/" + reg, urlencode({"password": "erin-pw-4444"}))
    out["signup_b"] = s["status"]
    out["signup_again_a"] = req("a", "/magic/" + reg, urlencode({"password": "other-pw-55"}))["status"]
    out["secrets"] = [link, reg, new, old, body(s, "access_token")]
elif CMD == "refresh":
    r0 = cc("a")
    rt0 = body(r0, "refresh_token")
    out["cc_a"] = [r0["status"], bool(rt0)]
    r1 = refresh("b", rt0)
    rt1 = body(r1, "refresh_token")
    out["rot_b"] = [r1["status"], bool(rt1) and rt1 != rt0]
    r2 = refresh("a", rt1)
    rt2 = body(r2, "refresh_token")
    out["rot_a"] = [r2["status"], bool(rt2) and rt2 not in (rt0, rt1)]
    out["replay_b"] = refresh("b", rt1)["status"]
    out["live_after_a"] = refresh("a", rt2)["status"]
    out["live_after_b"] = refresh("b", rt2)["status"]
    r3 = cc("b")
    out["new_chain_b"] = [r3["status"], refresh("a", body(r3, "refresh_token"))["status"]]
    out["secrets"] = [rt0, rt1, rt2, body(r0, "access_token")]
elif CMD == "down":
    # Redis does not answer: every vault operation is a 503 with Retry-After, soon.
    tok = ARGS[0]
    rt = ARGS[1]
    res = {}
    res["send_a"] = send("a", tok)
    res["verify_b"] = verify("b", tok, "123456")
    res["reset_a"] = req("a", "/password-reset", urlencode({"username": "carol"}))
    res["magic_b"] = req("b", "/magic/" + "x" * 43, "")
    res["refresh_a"] = refresh("a", rt)
    res["cc_b"] = cc("b")
    v = req("a", "/token/validate", method="GET", headers={"Authorization": "Bearer " + tok})
    res["validate_a"] = v
    out = {k: [v["status"], v["retry_after"], v["ms"]] for k, v in res.items()}
elif CMD == "flood":
    # the careless client and the attacker: twenty codes for one account, twenty resets of
    # one account, forged and replayed refresh tokens
    tok = login("a", "alice", "pw-alice-1")
    out["sends"] = sorted(set(send("ab"[i % 2], tok)["status"] for i in range(20)))
    out["resets"] = sorted(set(req("ab"[i % 2], "/password-reset",
                                   urlencode({"username": "alice"}))["status"]
                               for i in range(5)))
    rt = body(cc("a"), "refresh_token")
    forged = rt[:-3] + ("AAA" if rt[-3:] != "AAA" else "BBB")
    out["forged"] = [refresh(n, forged)["status"] for n in "ab"]
    out["live"] = refresh("b", rt)["status"]
    out["secrets"] = [tok, rt, code_of("a", "alice"), code_of("b", "alice"),
                      link_of("a", "reset_link", "alice"), link_of("b", "reset_link", "alice")]
elif CMD == "prep":
    out["tok"] = login("a", "alice", "pw-alice-1")
    out["rt"] = body(cc("a"), "refresh_token")
print(json.dumps(out))
PYEOF
drive() { $PY "$NT_DIR/drive.py" "$PA" "$PB" "$NT_DIR" "$@"; }
SECRETS=()

# ---- a code sent by A verifies on B, once ----------------------------------------------------
r=$(drive mfa)
expect_eq "alice signs in on A and A sends her a code" "$(jget "$r" login) $(jget "$r" send_a) $(jget "$r" code_in_a)" "true 202 true"
expect_eq "  ... through A's delivery only" "$(jget "$r" code_in_b)" false
expect_eq "the code sent by A verifies on B (an MFA token)" "$(jget "$r" verify_b) $(jget "$r" amr)" "200 true"
expect_eq "a second use fails on A and on B" "$(jget "$r" again_a) $(jget "$r" again_b)" "401 401"
SECRETS+=($($PY -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["secrets"]))' "$r"))

# ---- wrong codes spend the account's attempts across the nodes -----------------------------
r=$(drive attempts)
expect_eq "five wrong codes, alternating nodes, are refused" "$(jget "$r" wrong)" "[401, 401, 401, 401, 401]"
expect_eq "  ... and then the right code is refused on both: five attempts per account, not per node" \
	"$(jget "$r" right_a) $(jget "$r" right_b)" "401 401"
SECRETS+=($($PY -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["secrets"]))' "$r"))

# ---- links ------------------------------------------------------------------------------------
r=$(drive link)
expect_eq "A sends carol a reset link" "$(jget "$r" reset_a) $(jget "$r" link_in_a)" "202 true"
expect_eq "  ... B shows its page (GET spends nothing)" "$(jget "$r" page_b)" "[200, true]"
expect_eq "  ... B consumes it and signs carol in" "$(jget "$r" post_b) $(jget "$r" post_b_token)" "200 true"
expect_eq "carol's password token from before validates on A and B" "$(jget "$r" old_valid)" "[200, 200]"
expect_eq "  ... the reset consumed on B ends it on A and B (validate, and as a first factor)" \
	"$(jget "$r" old_after)" "[401, 401, 401]"
expect_eq "  ... while the link's new token validates on both" "$(jget "$r" new_after)" "[200, 200]"
expect_eq "  ... once: a second POST fails on A and on B" "$(jget "$r" again_a) $(jget "$r" again_b)" "401 401"
expect_eq "a forged link fails" "$(jget "$r" forged)" 401
expect_eq "A sends a sign-up link for erin" "$(jget "$r" register_a) $(jget "$r" reg_in_a)" "202 true"
expect_eq "  ... B makes the account with it (201)" "$(jget "$r" signup_b)" 201
expect_eq "  ... once: the same link with another password on A fails" "$(jget "$r" signup_again_a)" 401
expect_eq "  ... erin's line is in the credentials file, once" "$(grep -c '^acme,erin,' "$NT_DIR/creds.txt")" 1
SECRETS+=($($PY -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["secrets"]))' "$r"))

# ---- refresh chains --------------------------------------------------------------------------
r=$(drive refresh)
expect_eq "A starts a chain (client_credentials with a refresh token)" "$(jget "$r" cc_a)" "[200, true]"
expect_eq "  ... it rotates on B" "$(jget "$r" rot_b)" "[200, true]"
expect_eq "  ... and again on A" "$(jget "$r" rot_a)" "[200, true]"
expect_eq "the spent generation replayed on B is refused" "$(jget "$r" replay_b)" 400
expect_eq "  ... and has ended the chain: the live token fails on A and on B" \
	"$(jget "$r" live_after_a) $(jget "$r" live_after_b)" "400 400"
expect_eq "the client's secret starts a new chain on B, which rotates on A" "$(jget "$r" new_chain_b)" "[200, 200]"
SECRETS+=($($PY -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["secrets"]))' "$r"))
reuse=$(curl -s "http://127.0.0.1:$MB/metrics" | awk '/^sluice_gateway_refresh_reuse_total/ {print $2}')
[ -n "$reuse" ] && expect_eq "  ... B counted the reuse" "$reuse" 1

# ---- floods: one code per account, one chain per client --------------------------------------
otp0=$(redis-cli -s "$REDIS_SOCK" --scan --pattern 'sluice:{acme}:vault:otp:*' | wc -l)
chain0=$(redis-cli -s "$REDIS_SOCK" --scan --pattern 'sluice:{acme}:vault:chain:*' | wc -l)
link0=$(redis-cli -s "$REDIS_SOCK" --scan --pattern 'sluice:{acme}:vault:link:*' | wc -l)
r=$(drive flood)
expect_eq "twenty codes for alice over both nodes are sent" "$(jget "$r" sends)" "[202]"
expect_eq "  ... and Redis holds one code for her: each replaced the one before" \
	"$(( $(redis-cli -s "$REDIS_SOCK" --scan --pattern 'sluice:{acme}:vault:otp:*' | wc -l) - otp0 ))" 1
expect_eq "five resets of alice: one link each (the reset counters bound them)" \
	"$(jget "$r" resets) $(( $(redis-cli -s "$REDIS_SOCK" --scan --pattern 'sluice:{acme}:vault:link:*' | wc -l) - link0 ))" "[202] 5"
expect_eq "a forged refresh token is refused on both nodes" "$(jget "$r" forged)" "[400, 400]"
expect_eq "  ... and ends nothing: the live one still rotates" "$(jget "$r" live)" 200
expect_eq "  ... one chain per client in Redis (the new one replaced the old)" \
	"$(redis-cli -s "$REDIS_SOCK" --scan --pattern 'sluice:{acme}:vault:chain:*' | wc -l)" "$chain0"
SECRETS+=($($PY -c 'import json,sys; print(" ".join(s for s in json.loads(sys.argv[1])["secrets"] if s))' "$r"))
for kind in otp link chain revoked; do
	k=$(redis-cli -s "$REDIS_SOCK" --scan --pattern "sluice:{acme}:vault:$kind:*" | head -1)
	[ -n "$k" ] && tap_diag "memory usage of a $kind entry: $(redis-cli -s "$REDIS_SOCK" memory usage "$k") bytes"
done

# ---- nothing in Redis names anyone or holds a secret ----------------------------------------
keys=$(redis-cli -s "$REDIS_SOCK" --scan)
vkeys=$(echo "$keys" | grep -c ':vault:')
expect_ge "Redis holds vault keys (bob's unused code, the live chain)" "$vkeys" 2
expect_eq "  ... each under its tenant's hash tag" "$(echo "$keys" | grep ':vault:' | grep -vc '^sluice:{acme}:vault:')" 0
dump="$NT_DIR/dump.txt"
: >"$dump"
while read -r k; do
	[ -n "$k" ] || continue
	echo "$k" >>"$dump"
	t=$(redis-cli -s "$REDIS_SOCK" type "$k")
	case "$t" in
	string) redis-cli -s "$REDIS_SOCK" get "$k" >>"$dump" ;;
	hash) redis-cli -s "$REDIS_SOCK" hgetall "$k" >>"$dump" ;;
	zset) redis-cli -s "$REDIS_SOCK" zrange "$k" 0 -1 withscores >>"$dump" ;;
	*) redis-cli -s "$REDIS_SOCK" dump "$k" >>"$dump" ;;
	esac
done <<<"$keys"
found=0
for s in alice bob carol erin ci-bot "${SECRETS[@]}"; do
	[ ${#s} -ge 4 ] || continue
	grep -qF -- "$s" "$dump" && { found=$((found + 1)); tap_diag "in Redis: ${s:0:12}..."; }
done
expect_eq "no account name, client id, code, link secret or token in any key or value" "$found" 0
expect_ge "  ... (of $(wc -l <"$dump") lines looked at, ${#SECRETS[@]} secrets looked for)" "${#SECRETS[@]}" 10
ttl=$(redis-cli -s "$REDIS_SOCK" --scan --pattern '*:vault:chain:*' | head -1 | xargs -r redis-cli -s "$REDIS_SOCK" ttl)
expect_ge "a chain's key has a lifetime (refresh_ttl_s)" "${ttl:-0}" 1
ttl=$(redis-cli -s "$REDIS_SOCK" --scan --pattern 'sluice:{acme}:vault:revoked:*' | head -1 | xargs -r redis-cli -s "$REDIS_SOCK" ttl)
expect_ge "carol's revocation is in Redis, kept as long as a token lives" "${ttl:-0}" 60

# ---- Redis not answering ---------------------------------------------------------------------
p=$(drive prep)
tok=$(jget "$p" tok)
rt=$(jget "$p" rt)
sent_before=$(cat "$NT_DIR"/a.outbox "$NT_DIR"/b.outbox | wc -l)
redis_pause
r=$(drive down "$tok" "$rt")
redis_resume
bad=$($PY -c '
import json, sys
r = json.loads(sys.argv[1]); lim = float(sys.argv[2])
print(" ".join(k for k, v in r.items() if v[0] != 503 or not v[1] or v[2] > lim) or "none")' \
	"$r" "$((3 * TIMEOUT_MS + FLOOR_MS + 300))")
expect_eq "Redis stopped: send, verify, reset, link, refresh, a new chain and a person's token's validation answer 503 with Retry-After in time, on both nodes" "$bad" none
tap_diag "stopped: $r"
redis_stop
sleep 0.3
r=$(drive down "$tok" "$rt")
bad=$($PY -c '
import json, sys
r = json.loads(sys.argv[1]); lim = float(sys.argv[2])
print(" ".join(k for k, v in r.items() if v[0] != 503 or not v[1] or v[2] > lim) or "none")' \
	"$r" "$((3 * TIMEOUT_MS + FLOOR_MS + 300))")
expect_eq "Redis gone: the same 503s, nothing hangs" "$bad" none
tap_diag "gone: $r"
expect_eq "  ... and no code or link went out meanwhile" "$(cat "$NT_DIR"/a.outbox "$NT_DIR"/b.outbox | wc -l)" "$sent_before"
for n in a b; do
	kill -0 "${PIDS[$([ $n = a ] && echo 0 || echo 1)]}" 2>/dev/null
	expect_eq "node $n is still running" "$?" 0
done
tap_done
