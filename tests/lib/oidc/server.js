// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// A real OpenID provider for tests/net/test_oidc_upstream.sh: node-oidc-provider (npm,
// pinned in package.json), unchanged but for its configuration: one confidential client
// ("rs") with the client_credentials grant, token introspection on. Every request it
// receives is logged, one JSON line each, to the file named by argv[3], before the provider
// handles it: what the test reads to count what reached it and which headers came along.
//
//   node server.js PORT LOGFILE
'use strict';
const fs = require('fs');
const { default: Provider } = require('oidc-provider');

const port = parseInt(process.argv[2], 10);
const log = fs.openSync(process.argv[3], 'a');
const oidc = new Provider(`http://127.0.0.1:${port}`, {
  clients: [{
    client_id: 'rs',
    client_secret: 'rs-secret',
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
  }],
  features: {
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    devInteractions: { enabled: false },
  },
  cookies: { keys: ['sluice-test-only-cookie-key'] },
});
oidc.use(async (ctx, next) => {
  const h = ctx.request.headers;
  fs.writeSync(log, JSON.stringify({
    method: ctx.method, path: ctx.path, host: h.host || null,
    xff: h['x-forwarded-for'] || null, deadline: h['x-request-deadline-ms'] || null,
    hop: h['x-hop-secret'] || null, te: h.te || null,
  }) + '\n');
  await next();
});
oidc.listen(port, '127.0.0.1', () => process.stdout.write('listening\n'));
