#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# A service a load balancer and systemd can drive (issue 15, item 5). sluiced with the edge
# on a veth (in a namespace the test makes) and the gateway on the server's address, driven
# as a load balancer and systemd would:
#  - GET /healthz and /readyz answer on any Host, cost nothing, refuse other methods, and tell
#    a client nothing but the status;
#  - /readyz goes 503 when the edge program is taken off the interface (by someone else);
#  - the readiness protocol (sd_notify, $NOTIFY_SOCKET: a datagram socket this test binds as
#    systemd would): READY=1 only once the gateway accepts; RELOADING=1 then READY=1 around a
#    reload; a config that cannot start sends no READY=1 and exits non-zero (so
#    `systemctl start` fails); STOPPING=1 at a stop;
#  - the drain on SIGTERM: no new connection is accepted, idle keep-alives are closed at
#    once, every queued login is answered (200 or 401, never a 503) before the exit, and a
#    client dripping a request byte by byte cannot hold the exit past gateway.drain_ms;
#  - with more queued than drain_ms can serve, the exit comes at the bound and what is left
#    gets 503 with Retry-After; nothing hangs; a second SIGTERM stops at once.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/../lib/netns.sh"

nt_require
nt_setup || { echo "Bail out! cannot build the namespaces"; exit 1; }
GW=10.200.0.2
GWPORT=8080

# Argon2id m=1 MiB, t=60 on one worker: ~45 ms a hash here, so a queue is cheap to make.
write_conf() { # DRAIN_MS
	cat >"$NT_DIR/sluice.conf" <<EOF
edge: {
  interfaces = ["vs"];
  xdp_mode = "generic";
  ports = ( { port = 80; action = "reply"; cost = 1; } );
  state_entries = 4096;
  pin_path = "$PIN";
};
classes = ( { name = "unknown"; rate = 1000.0; burst = 1000.0; parent_rate = 10000.0;
              parent_burst = 10000.0; } );
tenants = ( { name = "default"; reservation = 0.0; } );
routes = ( { name = "login"; method = "POST"; path = "/login"; cpu = 450.0; } );
gateway: {
  listen = "$GW:$GWPORT";
  credentials = "$NT_DIR/creds.txt";
  capacity = { cpu = 100000.0; };
  argon2 = { m_cost_kib = 1024; t_cost = 60; parallelism = 1; memory_budget_mib = 1; };
  queue = { default_deadline_ms = 10000; max_deadline_ms = 10000; target_wait_ms = 10000; };
  reject_floor_ms = 0;
  drain_ms = $1;
};
counters: { login_failures = { enabled = false; }; login_successes = { enabled = false; };
            login_parent = { enabled = false; }; };
daemon: { control_socket = "$SOCK"; };
EOF
}

: >"$NT_DIR/creds.txt"
chmod 600 "$NT_DIR/creds.txt"
write_conf 5000
echo "pw-alice" | sluicectl user add default alice >/dev/null ||
	{ echo "Bail out! user add"; exit 1; }

# ---- the service manager's side: a datagram socket, as systemd binds for Type=notify --------
# Each datagram is one line of notify.log: "<ms since start> <fields joined by |>". At
# READY=1 it tries the gateway's port at once and notes whether it accepted.
cat >"$NT_DIR/notify.py" <<'PYEOF'
import os, socket, sys, time
path, log, host, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
t0 = time.monotonic()
with open(log, "a", buffering=1) as f:
    while True:
        m = s.recv(4096).decode("utf-8", "replace")
        fields = m.strip().split("\n")
        extra = ""
        if "READY=1" in fields:
            c = socket.socket()
            c.settimeout(1)
            try:
                c.connect((host, port))
                extra = " accepted=1"
            except OSError:
                extra = " accepted=0"
            c.close()
        f.write("%d %s%s\n" % ((time.monotonic() - t0) * 1000, "|".join(fields), extra))
PYEOF
NOTIFY_SOCK=$NT_DIR/notify.sock
nsenter --net="/run/netns/$NS_S" $PY "$NT_DIR/notify.py" "$NOTIFY_SOCK" "$NT_DIR/notify.log" \
	"$GW" "$GWPORT" &
NOTIFY_PID=$!
for _ in $(seq 1 50); do [ -S "$NOTIFY_SOCK" ] && break; sleep 0.05; done
trap 'kill $NOTIFY_PID 2>/dev/null; nt_teardown' EXIT

start() { # start sluiced under NOTIFY_SOCKET; waits for "running"
	NOTIFY_SOCKET=$NOTIFY_SOCK nt_start_sluiced
}
# The client: requests from the client namespace (tests/lib/rawhttp.py-style, inline).
cat >"$NT_DIR/client.py" <<'PYEOF'
import json, socket, sys, threading, time
host, port, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def req(method, path, hdrs="", body=b"", sock=None, timeout=10):
    own = sock is None
    s = sock or socket.create_connection((host, port), timeout=timeout)
    s.settimeout(timeout)
    head = "%s %s HTTP/1.1\r\nHost: whoever.example\r\n%sContent-Length: %d\r\n\r\n" % (
        method, path, hdrs, len(body))
    s.sendall(head.encode() + body)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
        h, _, rest = data.partition(b"\r\n\r\n")
        lines = h.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1]) if lines and " " in lines[0] else 0
        hd = {}
        for l in lines[1:]:
            k, _, v = l.partition(":")
            hd[k.strip().lower()] = v.strip()
        n = int(hd.get("content-length", "0") or 0)
        while len(rest) < n:
            d = s.recv(65536)
            if not d:
                break
            rest += d
        return {"status": status, "headers": hd, "body": rest.decode("utf-8", "replace")}
    except socket.timeout:
        return {"status": "timeout"}
    except OSError as e:
        return {"status": "error", "why": str(e)}
    finally:
        if own:
            s.close()

LOGIN = b"username=alice&password=pw-alice"
FORM = "Content-Type: application/x-www-form-urlencoded\r\n"
if cmd == "get":          # get METHOD PATH
    print(json.dumps(req(sys.argv[4], sys.argv[5])))
elif cmd == "logins":     # logins N: N logins at once, then one line of JSON per answer
    n = int(sys.argv[4])
    out = [None] * n
    def one(i):
        t0 = time.monotonic()
        r = req("POST", "/login", FORM, LOGIN if i % 2 == 0 else b"username=alice&password=no")
        r["ms"] = round((time.monotonic() - t0) * 1000)
        r["at"] = time.time()
        r.pop("body", None)
        out[i] = r
    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
        time.sleep(0.002)
    open(sys.argv[5], "w").write("started\n")
    for t in ts:
        t.join()
    print(json.dumps(out))
elif cmd == "idle":       # idle FILE: one request on a keep-alive, then wait for the close
    s = socket.create_connection((host, port), timeout=30)
    r = req("GET", "/healthz", sock=s)
    open(sys.argv[4], "w").write("answered %s\n" % r["status"])
    s.settimeout(30)
    try:
        d = s.recv(1)
        print(json.dumps({"closed": d == b"", "at": time.time()}))
    except OSError as e:
        print(json.dumps({"closed": True, "at": time.time(), "error": str(e)}))
elif cmd == "drip":       # drip FILE: a request one byte a second, for as long as it can
    s = socket.create_connection((host, port), timeout=30)
    open(sys.argv[4], "w").write("connected\n")
    sent = 0
    for b in b"POST /login HTTP/1.1\r\nHost: whoever.example\r\nContent-Length: 100\r\n\r\n":
        try:
            s.send(bytes([b]))
            sent += 1
        except OSError:
            break
        time.sleep(0.2)
    print(json.dumps({"sent": sent}))
elif cmd == "connect":    # connect: does the port accept?
    try:
        socket.create_connection((host, port), timeout=1).close()
        print("accepted")
    except OSError as e:
        print("refused" if "refused" in str(e).lower() else "error: %s" % e)
PYEOF
client() { ip netns exec "$NS_C" $PY "$NT_DIR/client.py" "$GW" "$GWPORT" "$@"; }

start || { echo "Bail out! sluiced did not start"; exit 1; }
for _ in $(seq 1 40); do grep -q "READY=1" "$NT_DIR/notify.log" 2>/dev/null && break; sleep 0.05; done

# ---- readiness to systemd -----------------------------------------------------------------
r=$(grep -m1 "READY=1" "$NT_DIR/notify.log")
tap_diag "notify: $r"
expect_match "READY=1 reached the manager's socket, with MAINPID" "$r" "READY=1\|MAINPID=$SLUICED_PID"
expect_match "  ... and the gateway was accepting when it came" "$r" "accepted=1"

# ---- the probes -----------------------------------------------------------------------------
r=$(client get GET /healthz)
expect_eq "GET /healthz: 200" "$(jget "$r" status)" 200
expect_eq "  ... body {\"status\":\"alive\"}" "$(jget "$r" body)" '{"status":"alive"}'
r=$(client get GET /readyz)
expect_eq "GET /readyz: 200 (any Host; no tenant named whoever.example)" "$(jget "$r" status)" 200
expect_eq "  ... body {\"status\":\"ready\"}" "$(jget "$r" body)" '{"status":"ready"}'
r=$(client get HEAD /readyz)
expect_eq "HEAD /readyz: 200" "$(jget "$r" status)" 200
r=$(client get POST /readyz)
expect_eq "POST /readyz: 405" "$(jget "$r" status)" 405
expect_eq "  ... with Allow: GET, HEAD" "$(jget "$r" headers.allow)" "GET, HEAD"
r=$(client get GET /readyz/x)
expect_eq "GET /readyz/x is not a probe: 404" "$(jget "$r" status)" 404
adm() { local t; t=$(sluicectl tenants --json); echo "$(jget "$t" tenants.0.admitted.reserved) $(jget "$t" tenants.0.admitted.burst) $(jget "$t" hashes)"; }
h0=$(adm)
for _ in $(seq 1 50); do client get GET /healthz >/dev/null; done
h1=$(adm)
expect_eq "50 probes admitted nothing through the tenant's scheduler and hashed nothing" "$h1" "$h0"

# Someone takes the program off the interface: the node must not be sent traffic.
ip -n "$NS_S" link set dev vs xdpgeneric off 2>/dev/null
ip -n "$NS_S" link set dev vs xdp off 2>/dev/null
xdp_attached && tap_diag "XDP still attached after the detach: $(ip -n "$NS_S" -d link show vs)"
sleep 1.1 # readiness re-checks the attachment at most once a second
r=$(client get GET /readyz)
expect_eq "edge program removed from vs: /readyz 503" "$(jget "$r" status)" 503
expect_eq "  ... and tells the client only that" "$(jget "$r" body)" '{"status":"not ready"}'
expect_eq "  ... /healthz still 200 (alive, just not ready)" "$(jget "$(client get GET /healthz)" status)" 200
expect_match "  ... the reason is in the daemon's log" "$(cat "$NT_DIR/sluiced.log")" \
	"not ready .GET /readyz answers 503.: the edge program is not attached to vs"

# ---- reload, then a failing start -----------------------------------------------------------
nt_stop_sluiced TERM
: >"$NT_DIR/notify.log"
start || { echo "Bail out! sluiced did not restart"; exit 1; }
for _ in $(seq 1 40); do grep -q "READY=1" "$NT_DIR/notify.log" && break; sleep 0.05; done
kill -HUP "$SLUICED_PID"
for _ in $(seq 1 60); do [ "$(grep -c READY=1 "$NT_DIR/notify.log")" -ge 2 ] && break; sleep 0.05; done
seq_=$(awk '{print $2}' "$NT_DIR/notify.log" | sed 's/|.*//' | tr '\n' ' ')
tap_diag "notify sequence: $seq_"
expect_match "a reload: READY=1, then RELOADING=1, then READY=1 again" "$seq_" "^READY=1 RELOADING=1 READY=1"
expect_match "  ... RELOADING=1 carries MONOTONIC_USEC" "$(grep RELOADING "$NT_DIR/notify.log")" "MONOTONIC_USEC=[0-9]"
nt_stop_sluiced TERM
expect_match "a stop: STOPPING=1" "$(tail -1 "$NT_DIR/notify.log")" "STOPPING=1"

cp "$NT_DIR/sluice.conf" "$NT_DIR/good.conf"
sed -i 's/drain_ms = 5000;/drain_ms = -3;/' "$NT_DIR/sluice.conf"
: >"$NT_DIR/notify.log"
NOTIFY_SOCKET=$NOTIFY_SOCK nsenter --net="/run/netns/$NS_S" "$BUILD/sluiced" -c "$NT_DIR/sluice.conf" -f \
	>"$NT_DIR/bad.log" 2>&1
rc=$?
expect_ge "a config that cannot start: sluiced exits non-zero" "$rc" 1
expect_match "  ... naming the line" "$(cat "$NT_DIR/bad.log")" "sluice.conf:[0-9]*:.*drain_ms"
sleep 0.2
expect_eq "  ... and no READY=1 reached the manager" "$(grep -c READY=1 "$NT_DIR/notify.log")" 0
cp "$NT_DIR/good.conf" "$NT_DIR/sluice.conf"

# ---- the drain --------------------------------------------------------------------------------
start || { echo "Bail out! sluiced did not restart"; exit 1; }
client idle "$NT_DIR/idle.ready" >"$NT_DIR/idle.out" &
IDLE=$!
client drip "$NT_DIR/drip.ready" >"$NT_DIR/drip.out" &
DRIP=$!
for _ in $(seq 1 50); do [ -s "$NT_DIR/idle.ready" ] && [ -s "$NT_DIR/drip.ready" ] && break; sleep 0.05; done
rm -f "$NT_DIR/started"
client logins 16 "$NT_DIR/started" >"$NT_DIR/logins.out" &
LOGINS=$!
for _ in $(seq 1 100); do [ -s "$NT_DIR/started" ] && break; sleep 0.02; done
sleep 0.1
t0=$(date +%s%N)
kill -TERM "$SLUICED_PID"
sleep 0.15
after=$(client connect)
drip_alive=$(ip netns exec "$NS_S" ss -Htn state established "( sport = :$GWPORT )" | wc -l)
wait "$SLUICED_PID"
rc=$?
t1=$(date +%s%N)
SLUICED_PID=
wait "$LOGINS"
wait "$IDLE"
wait "$DRIP"
lo=$(cat "$NT_DIR/logins.out")
counts=$($PY -c '
import json, sys, collections
r = json.loads(sys.argv[1])
print(json.dumps(collections.Counter(str(x["status"]) for x in r)))' "$lo")
tap_diag "drain: exit after $(((t1 - t0) / 1000000)) ms; answers by status $counts; idle $(cat "$NT_DIR/idle.out"); drip $(cat "$NT_DIR/drip.out")"
tap_diag "$(grep -i "drain" "$NT_DIR/sluiced.log" | tail -3)"
expect_eq "SIGTERM: a connection tried during the drain is refused" "$after" refused
expect_eq "  ... sluiced exits 0" "$rc" 0
expect_eq "  ... all 16 queued logins answered 200 or 401, none 503 or lost" \
	"$($PY -c 'import json,sys; r=json.loads(sys.argv[1]); print(sum(1 for x in r if x["status"] in (200, 401)))' "$lo")" 16
expect_eq "  ... the right passwords got 200 (8), the wrong ones 401 (8)" \
	"$($PY -c 'import json,sys; r=json.loads(sys.argv[1]); print(sum(1 for x in r[0::2] if x["status"]==200), sum(1 for x in r[1::2] if x["status"]==401))' "$lo")" "8 8"
# How many the drain found outstanding is in its log line; each must be answered after the
# signal. (A fixed "8 of 16 at least 50 ms after it" failed once when the machine hashed
# faster than that: 7, with 9 outstanding at the signal.)
outst=$(sed -n 's/.*gateway: draining: not accepting; \([0-9]*\) requests outstanding.*/\1/p' "$NT_DIR/sluiced.log" | tail -1)
late=$($PY -c 'import json,sys; r=json.loads(sys.argv[1]); t=int(sys.argv[2])/1e9; l=[x for x in r if x["at"] > t]; print(len(l), sum(1 for x in l if x.get("headers",{}).get("connection")=="close"))' "$lo" "$t0")
set -- $late
expect_ge "  ... the drain had queued logins to finish (outstanding at the signal: ${outst:-none logged})" "${outst:-0}" 1
expect_ge "  ... and each was answered after the signal ($1 answered after it)" "$1" "${outst:-1}"
# The signal is sent at t0 and handled a moment later: a login answered in between was not
# the drain's (CI, 2026-12-03: 11 answered after t0, 10 outstanding, 10 with close). Each
# the drain found outstanding carries Connection: close.
expect_ge "  ... each the drain answered with Connection: close ($2 of $1 answered after t0)" "$2" "${outst:-1}"
expect_eq "  ... the idle keep-alive was closed by the server" "$(jget "$(cat "$NT_DIR/idle.out")" closed)" true
expect_le "  ... at once: within 500 ms of the SIGTERM (ms)" \
	"$($PY -c "print(round(($(jget "$(cat "$NT_DIR/idle.out")" at) - $t0 / 1e9) * 1000))")" 500
expect_match "  ... the log says it drained" "$(cat "$NT_DIR/sluiced.log")" "drained in [0-9]* ms: every request answered"
expect_ge "  ... while a client dripping a request (5 bytes a second) was still connected" "$drip_alive" 1
# Held, the drain would have ended at its bound and said so; it ended when the logins were
# answered (a machine's load moves how long that takes, not which of the two it was).
if grep -q "drain_ms (5000) is up" "$NT_DIR/sluiced.log"; then
	tap_not_ok "  ... which did not hold the exit (the drain ended at its 5 s bound)"
else
	tap_ok "  ... which did not hold the exit: the drain ended with the last answer ($(((t1 - t0) / 1000000)) ms), not at drain_ms"
fi

# ---- the bound ----------------------------------------------------------------------------------
write_conf 300
start || { echo "Bail out! sluiced did not restart"; exit 1; }
rm -f "$NT_DIR/started"
client logins 48 "$NT_DIR/started" >"$NT_DIR/logins.out" &
LOGINS=$!
for _ in $(seq 1 100); do [ -s "$NT_DIR/started" ] && break; sleep 0.02; done
sleep 0.1
t0=$(date +%s%N)
kill -TERM "$SLUICED_PID"
wait "$SLUICED_PID"
rc=$?
t1=$(date +%s%N)
SLUICED_PID=
wait "$LOGINS"
lo=$(cat "$NT_DIR/logins.out")
st=$($PY -c '
import json, sys
r = json.loads(sys.argv[1])
ok = sum(1 for x in r if x["status"] in (200, 401))
shed = [x for x in r if x["status"] == 503]
ra = sum(1 for x in shed if x.get("headers", {}).get("retry-after") == "1")
other = len(r) - ok - len(shed)
print(ok, len(shed), ra, other)' "$lo")
set -- $st
tap_diag "bound: exit after $(((t1 - t0) / 1000000)) ms; answered $1, 503 $2 (with Retry-After: 1: $3), other $4"
expect_le "drain_ms = 300 with ~2 s of hashes queued: exit within 300 ms + 700 ms" "$(((t1 - t0) / 1000000))" 1000
expect_eq "  ... sluiced exits 0" "$rc" 0
expect_ge "  ... some logins finished in the drain" "$1" 1
expect_ge "  ... the rest got 503" "$2" 1
expect_eq "  ... every 503 with Retry-After: 1" "$3" "$2"
expect_eq "  ... no client left without an answer (timeout, reset)" "$4" 0
expect_match "  ... the log says the bound was reached" "$(cat "$NT_DIR/sluiced.log")" "drain_ms .300. is up"

# ---- a second SIGTERM ---------------------------------------------------------------------------
write_conf 10000
start || { echo "Bail out! sluiced did not restart"; exit 1; }
rm -f "$NT_DIR/started"
client logins 48 "$NT_DIR/started" >"$NT_DIR/logins.out" &
LOGINS=$!
for _ in $(seq 1 100); do [ -s "$NT_DIR/started" ] && break; sleep 0.02; done
sleep 0.1
t0=$(date +%s%N)
kill -TERM "$SLUICED_PID"
sleep 0.2
kill -TERM "$SLUICED_PID"
wait "$SLUICED_PID"
t1=$(date +%s%N)
SLUICED_PID=
wait "$LOGINS"
tap_diag "second SIGTERM: exit after $(((t1 - t0) / 1000000)) ms"
expect_le "a second SIGTERM stops at once (not at the 10 s bound)" "$(((t1 - t0) / 1000000))" 1500
expect_match "  ... and says so" "$(cat "$NT_DIR/sluiced.log")" "a second signal: stopping now"
expect_eq "  ... no client left without an answer" \
	"$($PY -c 'import json,sys; r=json.loads(sys.argv[1]); print(sum(1 for x in r if x["status"] not in (200, 401, 503)))' "$(cat "$NT_DIR/logins.out")")" 0

tap_done
