// Proxies to the application backend through centrifuge-js: a backend written
// here in Node answers gyre's HTTP proxy calls the way a Centrifugo backend
// would. The client connects without a token (the connect proxy names its
// user), subscribes through the subscribe proxy, publishes through the publish
// proxy (the backend rewrites the data; another subscriber gets the rewritten
// publication) and calls rpc.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { startBackend } from '../lib/backend.js';
import { baseConfig } from '../lib/server.js';
import { builds, newClient, newSub, connected, subscribed, subscribeFails, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

// answer is what the backend says to each hook.
function answer(hook, req) {
  switch (hook) {
    case 'connect':
      // The client's connect data names the user; no token is involved.
      return { result: { user: req.data.user, data: { welcome: req.data.user }, meta: { plan: 'pro' } } };
    case 'subscribe':
      if (req.channel.endsWith(':forbidden')) return { error: { code: 403, message: 'forbidden' } };
      return { result: { data: { joined: req.channel, plan: req.meta?.plan } } };
    case 'publish':
      return { result: { data: { text: String(req.data.text).toUpperCase(), by: req.user } } };
    case 'rpc':
      return { result: { data: { method: req.method, sum: req.data.a + req.data.b } } };
  }
  return null;
}

const { url: backendURL, calls } = await startBackend(answer, ['connect', 'subscribe', 'publish', 'rpc']);

function withProxies(port) {
  const cfg = baseConfig(port);
  const proxy = (hook) => ({ endpoint: `${backendURL}/${hook}`, timeout: '2s', include_connection_meta: true });
  cfg.client.proxy = { connect: { enabled: true, ...proxy('connect') } };
  cfg.channel.proxy = { subscribe: proxy('subscribe'), publish: proxy('publish') };
  cfg.channel.namespaces.push({ name: 'px', subscribe_proxy_enabled: true, publish_proxy_enabled: true });
  cfg.rpc = { proxy: proxy('rpc'), without_namespace: { proxy_enabled: true } };
  return cfg;
}

const server = useServer({ config: withProxies });

for (const build of builds) {
  describe(`proxies (${build.name} build)`, () => {
    it('connects without a token, subscribes, publishes rewritten data and calls rpc through the backend', async (t) => {
      const opts = (user) => ({ token: '', data: build.encode({ user }) });
      const alice = newClient(build, server(), opts('alice'));
      const bob = newClient(build, server(), opts('bob'));
      t.after(() => closeAll([alice, bob]));

      const ctx = await connected(alice);
      assert.deepEqual(build.decode(ctx.data), { welcome: 'alice' });
      await connected(bob);
      const conn = calls.connect.find((c) => c.client === ctx.client);
      assert.ok(conn, 'the backend got the connect call');
      assert.equal(conn.transport, 'websocket');
      assert.equal(conn.protocol, build.name);

      const ch = uniqueChannel('px:room-');
      const aliceSub = newSub(alice, ch);
      const sctx = await subscribed(aliceSub);
      // The connect result's meta travels to the subscribe call.
      assert.deepEqual(build.decode(sctx.data), { joined: ch, plan: 'pro' });
      const bobSub = newSub(bob, ch);
      await subscribed(bobSub);

      await aliceSub.publish(build.encode({ text: 'hello' }));
      const pub = await bobSub.rec.waitFor('publication', { what: 'the rewritten publication' });
      assert.deepEqual(build.decode(pub.data), { text: 'HELLO', by: 'alice' });
      assert.equal(pub.info?.user, 'alice');

      const rpc = await alice.rpc('sum', build.encode({ a: 2, b: 3 }));
      assert.deepEqual(build.decode(rpc.data), { method: 'sum', sum: 5 });
    });

    it('gets the backend refusal of a subscription', async (t) => {
      const c = newClient(build, server(), { token: '', data: build.encode({ user: 'carol' }) });
      t.after(() => closeAll([c]));
      await connected(c);
      const un = await subscribeFails(newSub(c, uniqueChannel('px:') + ':forbidden'));
      assert.equal(un.code, 403, `unsubscribed: ${JSON.stringify(un)}`);
    });
  });
}
