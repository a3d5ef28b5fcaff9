# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# nginx as a real upstream on loopback, for the suites (and bench/proxy.sh) that put sluiced in
# front of a server it did not write. An instance is a directory: nginx_conf writes its
# nginx.conf around the suite's own blocks, nginx_start runs it and returns once it listens,
# nginx_stop (from the suite's cleanup) stops every instance started. nginx runs in the
# foreground (daemon off), a child of the suite's shell, so it is stopped by its PID and
# nothing outlives the suite. Needs bash and ss only (no tap.sh).

NGINX=$(command -v nginx || echo /usr/sbin/nginx)
NGINX_PID=
NGINX_PIDS=()

# nginx_available: whether there is an nginx to run ("scripts/deps.sh test" installs it).
nginx_available() { [ -x "$NGINX" ]; }

# nginx_conf DIR [CONNECTIONS] <<EOF ... EOF: writes DIR/nginx.conf: one worker of CONNECTIONS
# (256), its pid file, error log (DIR/logs/error.log, warn) and temp paths under DIR, no access
# log but where a server asks for one; stdin is what goes inside http { }: the suite's
# log_format, upstream and server blocks. DIR is made and opened to nginx's worker, which is
# not root (what it reads, a htpasswd, and its temp files must be reachable: DIR's parent
# is the caller's to open).
nginx_conf() {
	local d=$1 conns=${2:-256}
	mkdir -p "$d/logs" "$d/tmp"
	chmod 755 "$d"
	{
		cat <<EOF
daemon off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections $conns; }
http {
  access_log off;
  client_body_temp_path $d/tmp/body;
  proxy_temp_path $d/tmp/proxy;
  fastcgi_temp_path $d/tmp/fcgi;
  uwsgi_temp_path $d/tmp/uwsgi;
  scgi_temp_path $d/tmp/scgi;
EOF
		cat
		echo "}"
	} >"$d/nginx.conf"
}

# nginx_wait PID PORT...: 0 once PID listens on every TCP PORT, 1 if it exits first or 5 s
# pass. PID's own listener, not just any: an instance that failed to bind a port another one
# holds must not pass. A listener is enough: nginx's master opens them before it starts the
# worker, and a connection made in between waits in the backlog and is served. Also for the
# suite's own helper servers started beside nginx.
nginx_wait() {
	local pid=$1 p
	shift
	for p in "$@"; do
		for _ in $(seq 1 50); do
			ss -Hltnp "( sport = :$p )" | grep -q "pid=$pid," && break
			kill -0 "$pid" 2>/dev/null || return 1
			sleep 0.1
		done
		ss -Hltnp "( sport = :$p )" | grep -q "pid=$pid," || return 1
	done
	return 0
}

# nginx_start DIR PORT...: nginx on DIR/nginx.conf (its output in DIR/out), its PID in
# NGINX_PID and appended to NGINX_PIDS. Returns once it listens on every PORT; bails out with
# its output and error log if it exits or never does.
nginx_start() {
	local d=$1
	shift
	# -e: the log for what is said before the config is read, else the packaged default
	# (/var/log/nginx/error.log), outside the suite's directory.
	"$NGINX" -e "$d/logs/error.log" -p "$d" -c "$d/nginx.conf" >"$d/out" 2>&1 &
	NGINX_PID=$!
	NGINX_PIDS+=("$NGINX_PID")
	nginx_wait "$NGINX_PID" "$@" && return 0
	sed 's/^/# /' "$d/out" "$d/logs/error.log" 2>/dev/null
	echo "Bail out! nginx did not listen on $* ($d/nginx.conf)"
	exit 1
}

# nginx_stop: every instance nginx_start started, gracefully (SIGQUIT: the worker ends what it
# serves), each waited for up to 5 s, so that the suite can remove its directory after. One
# still there is killed, its worker first: a worker whose master is killed lives on.
nginx_stop() {
	local p
	for p in "${NGINX_PIDS[@]}"; do kill -QUIT "$p" 2>/dev/null; done
	for p in "${NGINX_PIDS[@]}"; do
		for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$p" 2>/dev/null; then
			pkill -KILL -P "$p" 2>/dev/null
			kill -KILL "$p" 2>/dev/null
		fi
		wait "$p" 2>/dev/null
	done
	NGINX_PIDS=()
	NGINX_PID=
}

# nginx_htpasswd FILE ROUNDS USER:PASSWORD...: an auth_basic_user_file, each password
# SHA-512-crypt with ROUNDS rounds (50,000: ~15-30 ms of nginx's CPU a check, like an
# Argon2id), readable by nginx's worker. Needs Python's crypt module.
nginx_htpasswd() {
	local f=$1 rounds=$2
	shift 2
	/usr/bin/python3 -c '
import crypt, sys
for up in sys.argv[2:]:
    u, p = up.split(":", 1)
    print("%s:%s" % (u, crypt.crypt(p, crypt.mksalt(crypt.METHOD_SHA512, rounds=int(sys.argv[1])))))
' "$rounds" "$@" 2>/dev/null >"$f"
	chmod 644 "$f"
}
