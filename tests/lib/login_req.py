# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# login_req.py PORT,TENANT,USER,PASSWORD,XFF...: one POST /login per spec, in order, each on
# its own connection with Host TENANT.test; prints "status ms" a line (status "error:Kind"
# when the connection failed). Used by the Redis Cluster suites.
import http.client, sys, time
for spec in sys.argv[1:]:
    port, tenant, user, pw, xff = spec.split(",")
    t0 = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
        c.request("POST", "/login", body="username=%s&password=%s" % (user, pw),
                  headers={"Host": tenant + ".test", "X-Forwarded-For": xff,
                           "Content-Type": "application/x-www-form-urlencoded"})
        r = c.getresponse(); r.read(); c.close(); st = r.status
    except Exception as e:
        st = "error:" + type(e).__name__
    print(st, round((time.monotonic() - t0) * 1000, 1), flush=True)
