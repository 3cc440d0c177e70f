import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { baseConfig } from '../lib/server.js';
import { builds, newClient, newSub, connected, subscribed, subscribeFails, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

// "prices" allows fossil deltas when the publisher asks for them;
// "ticks" makes every publication a delta candidate (delta_publish).
const server = useServer({
  config: (port) => {
    const cfg = baseConfig(port);
    const common = {
      allow_subscribe_for_client: true,
      allowed_delta_types: ['fossil'],
      history_size: 100,
      history_ttl: '300s',
      force_recovery: true,
    };
    cfg.channel.namespaces.push({ name: 'prices', ...common }, { name: 'ticks', ...common, delta_publish: true });
    return cfg;
  },
});

// doc is a large document of which consecutive versions differ in a few
// values, the shape delta compression is for. Names hold non-ASCII text,
// and the rows that change swap currency signs that share their first two
// UTF-8 bytes (€ ₽ ₤ are E2 82 xx): a delta computed over bytes must not
// split them, or it cannot travel as the JSON string of JSON connections.
const signs = ['€', '₽', '₤'];
function doc(version) {
  const rows = [];
  for (let r = 0; r < 150; r++) {
    const moved = r % 37 === version % 37;
    const sign = moved ? signs[version % 3] : signs[0];
    rows.push({ id: `R${r}`, price: 1000 + r + (moved ? version : 0), name: `Zürich ${sign} instrument ${r}`, open: r % 2 === 0 });
  }
  return { version, rows };
}

const decoder = new TextDecoder();

// wire gives a received payload as the JSON text it decodes from: the
// protobuf build hands over the exact bytes, the JSON build a parsed value.
function wire(build, data) {
  return build.name === 'protobuf' ? decoder.decode(data) : JSON.stringify(data);
}

async function publishDocs(ch, from, to, { delta = true } = {}) {
  const sent = [];
  for (let v = from; v < to; v++) {
    const d = doc(v);
    const body = { channel: ch, data: d };
    if (delta) body.delta = true;
    await server().api('publish', body);
    sent.push(JSON.stringify(d));
  }
  return sent;
}

// expectDecoded waits for the n publications after since and checks that
// each decodes to exactly what was sent, in order.
async function expectDecoded(build, sub, sent, since = 0) {
  const pubs = await sub.rec.waitCount('publication', sent.length, { since, timeoutMs: 10000 });
  const got = pubs.map((p) => wire(build, p.data));
  for (let i = 0; i < sent.length; i++) {
    assert.equal(got[i], sent[i], `publication ${i} of ${sent.length} decodes differently`);
  }
}

async function deltaSubscriber(build, ch, opts = {}) {
  const c = newClient(build, server(), opts);
  await connected(c);
  const sub = newSub(c, ch, { delta: 'fossil' });
  await subscribed(sub);
  return { c, sub };
}

for (const build of builds) {
  describe(`fossil delta (${build.name} build)`, () => {
    it('decodes large similar publications sent as deltas to exactly what was published', async (t) => {
      const ch = uniqueChannel('prices:d-');
      const { c, sub } = await deltaSubscriber(build, ch);
      const other = newClient(build, server(), { user: 'bob' });
      t.after(() => closeAll([c, other]));
      await connected(other);
      const plain = newSub(other, ch);
      await subscribed(plain);

      const sent = await publishDocs(ch, 0, 12);
      await expectDecoded(build, sub, sent);
      await expectDecoded(build, plain, sent);

      const stats = sub.deltaStats();
      assert.equal(stats.numPublications, 12, `deltaStats: ${JSON.stringify(stats)}`);
      assert.equal(stats.numFullPayloads, 1, `only the first comes in full: ${JSON.stringify(stats)}`);
      assert.equal(stats.numDeltaPayloads, 11, `deltaStats: ${JSON.stringify(stats)}`);
      assert.ok(stats.bytesReceived * 3 < stats.bytesDecoded, `deltas should be a fraction of the payloads: ${JSON.stringify(stats)}`);
      assert.equal(plain.deltaStats().numDeltaPayloads, 0, 'a subscriber without delta gets full payloads');
    });

    it('makes every publication a delta where the namespace sets delta_publish', async (t) => {
      const ch = uniqueChannel('ticks:d-');
      const { c, sub } = await deltaSubscriber(build, ch);
      t.after(() => closeAll([c]));
      const sent = await publishDocs(ch, 0, 5, { delta: false });
      await expectDecoded(build, sub, sent);
      const stats = sub.deltaStats();
      assert.equal(stats.numDeltaPayloads, 4, `deltaStats: ${JSON.stringify(stats)}`);
    });

    it('sends publications not marked for delta in full to a delta subscriber', async (t) => {
      const ch = uniqueChannel('prices:d-');
      const { c, sub } = await deltaSubscriber(build, ch);
      t.after(() => closeAll([c]));
      const sent = await publishDocs(ch, 0, 3, { delta: false });
      // A delta after a full-only publication chains on it.
      sent.push(...(await publishDocs(ch, 3, 6)));
      await expectDecoded(build, sub, sent);
      const stats = sub.deltaStats();
      assert.equal(stats.numFullPayloads, 3, `deltaStats: ${JSON.stringify(stats)}`);
      assert.equal(stats.numDeltaPayloads, 3, `deltaStats: ${JSON.stringify(stats)}`);
    });

    it('recovers missed publications in full after a reconnect, then decodes deltas against them', async (t) => {
      const ch = uniqueChannel('prices:d-');
      const { c, sub } = await deltaSubscriber(build, ch);
      t.after(() => closeAll([c]));
      const sent = await publishDocs(ch, 0, 3);
      await expectDecoded(build, sub, sent);

      const since = c.rec.mark();
      c.disconnect();
      await c.rec.waitFor('disconnected', { since });
      const missed = await publishDocs(ch, 3, 6);
      const subSince = sub.rec.mark();
      c.connect();
      const ctx = await sub.rec.waitFor('subscribed', { since: subSince });
      assert.equal(ctx.recovered, true, `subscribed: ${JSON.stringify(ctx)}`);
      await expectDecoded(build, sub, missed, subSince);

      const live = await publishDocs(ch, 6, 9);
      await expectDecoded(build, sub, [...missed, ...live], subSince);
      assert.ok(sub.deltaStats().numDeltaPayloads >= 2 + 2, `deltaStats: ${JSON.stringify(sub.deltaStats())}`);
    });

    it('refuses delta where the namespace does not allow it', async (t) => {
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      const ctx = await subscribeFails(newSub(c, uniqueChannel('chat:d-'), { delta: 'fossil' }));
      assert.equal(ctx.code, 107, `unsubscribed: ${JSON.stringify(ctx)}`);
    });
  });
}
