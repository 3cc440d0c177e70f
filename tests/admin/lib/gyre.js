// Starts a real gyre process with the admin web interface enabled, for one test
// file. The process handling (free port, config file, health wait, stop) is the
// SDK suite's (tests/sdk/js/lib/server.js); this file only adds the admin config.

import { startServer, signToken, HMAC_SECRET, API_KEY } from '../../sdk/js/lib/server.js';

export { signToken, HMAC_SECRET, API_KEY };

export const ADMIN_PASSWORD = 'gyre-admin-test-password';
export const ADMIN_SECRET = 'gyre-admin-test-secret-0123456789abcdef';
export const NODE_NAME = 'gyre-admin-test-node';

// adminConfig is the configuration every browser test runs against: the admin
// interface with a password and a secret, an HMAC key (so the Tokens page works),
// a "chat" namespace with history and presence, a "private" namespace where a
// subscription needs a token, and "board", whose channels are maps. admin overrides or adds admin.* keys.
//
// GYRE_ADMIN_WEB_PATH=DIR runs the tests against the app built into DIR
// (admin.web_path) instead of the one embedded in the binary.
// hmac false leaves out the HMAC key (no Tokens page); extra replaces or adds
// top-level sections (node, engine).
export function adminConfig(port, admin = {}, { hmac = true, extra = {} } = {}) {
  if (process.env.GYRE_ADMIN_WEB_PATH) admin = { web_path: process.env.GYRE_ADMIN_WEB_PATH, ...admin };
  return {
    ...adminBase(port, admin, hmac),
    ...extra,
  };
}

function adminBase(port, admin, hmac) {
  return {
    http_server: { port },
    log: { level: 'info' },
    node: { name: NODE_NAME },
    admin: { enabled: true, password: ADMIN_PASSWORD, secret: ADMIN_SECRET, ...admin },
    client: { ...(hmac ? { token: { hmac_secret_key: HMAC_SECRET } } : {}), allowed_origins: ['*'] },
    http_api: { key: API_KEY },
    health: { enabled: true },
    channel: {
      without_namespace: { allow_subscribe_for_client: true },
      namespaces: [
        {
          name: 'chat',
          presence: true,
          join_leave: true,
          history_size: 100,
          history_ttl: '300s',
          force_recovery: true,
          allow_subscribe_for_client: true,
          allow_presence_for_subscriber: true,
          allow_history_for_subscriber: true,
        },
        { name: 'private', presence: true },
        { name: 'board', subscription_type: 'map', map: { mode: 'persistent' } },
      ],
    },
  };
}

// startGyre starts gyre with adminConfig (admin keys overridden by admin) and
// returns the SDK suite's server object plus adminUrl, the app's address
// (with the handler prefix, ending in "/").
export async function startGyre({ admin = {}, hmac = true, extra = {} } = {}) {
  const server = await startServer({ config: (port) => adminConfig(port, admin, { hmac, extra }) });
  const prefix = (admin.handler_prefix ?? '').replace(/\/+$/, '');
  server.prefix = prefix;
  server.adminUrl = `${server.httpUrl}${prefix}/`;
  return server;
}
