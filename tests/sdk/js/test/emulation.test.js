// The bidirectional emulation transports (HTTP streaming, SSE) through the real
// SDK: replies and pushes come on a long HTTP response, commands go to /emulation.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { EventSource } from 'eventsource';

import { baseConfig, freePort, signToken } from '../lib/server.js';
import { builds, newClient, newSub, connected, subscribed, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

const server = useServer({
  config: (port) => ({ ...baseConfig(port), http_stream: { enabled: true }, sse: { enabled: true } }),
});

// SSE carries JSON only: the protobuf build has no SSE.
const cases = [
  { transport: 'http_stream', build: builds[0] },
  { transport: 'http_stream', build: builds[1] },
  { transport: 'sse', build: builds[0] },
];

function endpoint(transport) {
  return { transport, endpoint: `${server().httpUrl}/connection/${transport}` };
}

// emulatedClient connects over the given transports only (Node has fetch and
// ReadableStream; EventSource comes from the eventsource package).
function emulatedClient(build, transports, opts = {}) {
  return newClient(build, server(), {
    url: transports,
    emulationEndpoint: `${server().httpUrl}/emulation`,
    eventsource: EventSource,
    ...opts,
  });
}

for (const { transport, build } of cases) {
  describe(`${transport} (${build.name} build)`, () => {
    it('connects, subscribes, receives, and answers presence and history', async (t) => {
      const c = emulatedClient(build, [endpoint(transport)], { user: 'alice' });
      const other = emulatedClient(build, [endpoint(transport)], { user: 'bob' });
      t.after(() => closeAll([c, other]));
      const ctx = await connected(c);
      assert.equal(ctx.transport, transport);
      const otherCtx = await connected(other);

      const ch = uniqueChannel('chat:emu-');
      const sub = newSub(c, ch);
      await subscribed(sub);
      const since = sub.rec.mark();
      const otherSub = newSub(other, ch);
      await subscribed(otherSub);
      await sub.rec.waitFor('join', { since, match: (j) => j.info?.user === 'bob', what: 'join of bob' });

      const res = await server().publish(ch, { text: 'hello' });
      const pub = await sub.rec.waitFor('publication', { since, match: (p) => p.offset === res.offset });
      assert.deepEqual(build.decode(pub.data), { text: 'hello' });

      // A publication by the client goes out through the emulation endpoint.
      await otherSub.publish(build.encode({ text: 'from bob' }));
      const fromBob = await sub.rec.waitFor('publication', { since, match: (p) => p.info?.user === 'bob' });
      assert.deepEqual(build.decode(fromBob.data), { text: 'from bob' });

      const presence = await sub.presence();
      assert.deepEqual(Object.keys(presence.clients ?? {}).sort(), [ctx.client, otherCtx.client].sort());
      const stats = await sub.presenceStats();
      assert.equal(stats.numClients, 2);

      const history = await sub.history({ limit: 10 });
      assert.deepEqual(history.publications.map((p) => build.decode(p.data)), [{ text: 'hello' }, { text: 'from bob' }]);
      assert.equal(history.offset, fromBob.offset);
    });

    it('recovers the publications missed while disconnected', async (t) => {
      const c = emulatedClient(build, [endpoint(transport)]);
      t.after(() => closeAll([c]));
      await connected(c);
      const ch = uniqueChannel('chat:emu-rec-');
      const sub = newSub(c, ch);
      await subscribed(sub);
      const live = await server().publish(ch, { n: 0 });
      await sub.rec.waitFor('publication', { match: (p) => p.offset === live.offset, what: 'live publication' });

      const since = c.rec.mark();
      c.disconnect();
      await c.rec.waitFor('disconnected', { since });
      for (let n = 1; n <= 3; n++) await server().publish(ch, { n });

      const subSince = sub.rec.mark();
      c.connect();
      const ctx = await sub.rec.waitFor('subscribed', { since: subSince });
      assert.equal(ctx.recovered, true, `subscribed event: ${JSON.stringify(ctx)}`);
      const got = await sub.rec.waitCount('publication', 3, { since: subSince });
      assert.deepEqual(got.map((p) => build.decode(p.data)), [{ n: 1 }, { n: 2 }, { n: 3 }]);
      assert.deepEqual(got.map((p) => p.offset), [live.offset + 1, live.offset + 2, live.offset + 3]);
    });

    it('is disconnected with the code the server sends', async (t) => {
      const c = emulatedClient(build, [endpoint(transport)], { user: 'carol' });
      t.after(() => closeAll([c]));
      const ctx = await connected(c);
      const since = c.rec.mark();
      await server().api('disconnect', { user: 'carol', client: ctx.client, disconnect: { code: 4501, reason: 'go away' } });
      const d = await c.rec.waitFor('disconnected', { since });
      assert.equal(d.code, 4501, `disconnected event: ${JSON.stringify(d)}`);
      assert.equal(c.state, 'disconnected');
    });

    it('stays away with a token of the wrong key', async (t) => {
      const token = signToken({ sub: 'alice' }, 'not-the-server-secret-0123456789abcdef');
      const c = emulatedClient(build, [endpoint(transport)], { token });
      t.after(() => closeAll([c]));
      c.connect();
      const d = await c.rec.waitFor('disconnected');
      assert.equal(d.code, 3500, `disconnected event: ${JSON.stringify(d)}`);
      assert.equal(c.rec.all('connected').length, 0);
    });
  });
}

describe('fallback', () => {
  it('takes http_stream when the WebSocket endpoint is unreachable', async (t) => {
    const deadPort = await freePort();
    const c = emulatedClient(builds[0], [
      { transport: 'websocket', endpoint: `ws://127.0.0.1:${deadPort}/connection/websocket` },
      endpoint('http_stream'),
    ]);
    t.after(() => closeAll([c]));
    const ctx = await connected(c);
    assert.equal(ctx.transport, 'http_stream');
    const ch = uniqueChannel('chat:fallback-');
    const sub = newSub(c, ch);
    await subscribed(sub);
    const res = await server().publish(ch, { ok: true });
    await sub.rec.waitFor('publication', { match: (p) => p.offset === res.offset });
  });

  it('takes sse when neither WebSocket nor http_stream answer', async (t) => {
    const deadPort = await freePort();
    const c = emulatedClient(builds[0], [
      { transport: 'websocket', endpoint: `ws://127.0.0.1:${deadPort}/connection/websocket` },
      { transport: 'http_stream', endpoint: `http://127.0.0.1:${deadPort}/connection/http_stream` },
      endpoint('sse'),
    ]);
    t.after(() => closeAll([c]));
    const ctx = await connected(c);
    assert.equal(ctx.transport, 'sse');
  });
});
