// Wildcard subscriptions through centrifuge-js: a subscription to a pattern
// receives what the API publishes into every matching channel, on one node
// and, on Redis, from another node. On the wire the push names the pattern and
// the publication the concrete channel (Publication.channel, field 10).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

import { baseConfig, startServer } from '../lib/server.js';
import { redisMissing, startRedis } from '../lib/redis.js';
import { builds, newClient, newSub, connected, subscribed, subscribeFails, closeAll, useServer, uniqueChannel, spyingSocket, jsonPushes } from '../lib/sdk.js';

// wildConfig adds "geo", a namespace with wildcard subscriptions.
function wildConfig(port) {
  const cfg = baseConfig(port);
  cfg.channel.namespaces.push({
    name: 'geo',
    allow_subscribe_for_client: true,
    allow_wildcard_subscriptions: true,
    allow_tags_filter: true,
    history_size: 10,
    history_ttl: '300s',
    allowed_delta_types: ['fossil'],
  });
  return cfg;
}

const server = useServer({ config: wildConfig });

for (const build of builds) {
  describe(`wildcard subscriptions (${build.name} build)`, () => {
    it('delivers publications of every matching channel, in order per channel', async (t) => {
      const frames = [];
      const c = newClient(build, server(), { websocket: spyingSocket(frames) });
      t.after(() => closeAll([c]));
      await connected(c);
      const base = uniqueChannel('geo:t');
      const pattern = `${base}.*`;
      const sub = newSub(c, pattern);
      const ctx = await subscribed(sub);
      assert.ok(!ctx.recoverable, `subscribed context ${JSON.stringify(ctx)}: a pattern is not recoverable`);

      const sent = [];
      for (let i = 0; i < 6; i += 1) {
        const ch = `${base}.${i % 2 ? 'b' : 'a'}`;
        sent.push({ ch, i });
        await server().publish(ch, { i });
      }
      await server().publish(`${base}.a.deeper`, { i: 99 });
      await server().publish(`${base}x.a`, { i: 98 });
      const pubs = await sub.rec.waitCount('publication', sent.length);
      for (const p of pubs) assert.equal(p.channel, pattern);
      // centrifuge-js may reorder publications of separate frames (see
      // protocol.md): compare as a set, and check per-channel order on the wire.
      const got = pubs.map((p) => build.decode(p.data).i).sort((x, y) => x - y);
      assert.deepEqual(got, sent.map((s) => s.i));

      if (build.name === 'json') {
        const pushes = jsonPushes(frames).filter((p) => p.pub);
        assert.equal(pushes.length, sent.length, `publication pushes on the wire: ${JSON.stringify(pushes)}`);
        for (const [k, p] of pushes.entries()) {
          assert.equal(p.channel, pattern);
          assert.equal(p.pub.channel, sent[k].ch, `push ${k}: ${JSON.stringify(p)}`);
          assert.equal(p.pub.data.i, sent[k].i);
          assert.equal(p.pub.offset, undefined, 'a pattern subscription carries no offsets');
        }
      }
    });

    it('applies a tags filter and refuses delta compression on a pattern', async (t) => {
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      const base = uniqueChannel('geo:f');
      const filtered = newSub(c, `${base}.>`, { tagsFilter: { key: 'kind', cmp: 'eq', val: 'bus' } });
      await subscribed(filtered);
      await server().api('publish', { channel: `${base}.x`, data: { n: 1 }, tags: { kind: 'tram' } });
      await server().api('publish', { channel: `${base}.y.z`, data: { n: 2 }, tags: { kind: 'bus' } });
      const pub = await filtered.rec.waitFor('publication');
      assert.deepEqual(build.decode(pub.data), { n: 2 });
      assert.deepEqual(pub.tags, { kind: 'bus' });

      const delta = newSub(c, `${base}.*`, { delta: 'fossil' });
      const refused = await subscribeFails(delta);
      assert.equal(refused.code, 107, `unsubscribed context: ${JSON.stringify(refused)}`);
    });
  });
}

for (const build of builds) {
  describe(`wildcard subscriptions and recovery (${build.name} build)`, () => {
    it('answers a pattern subscribe that asks to recover with a failed recovery, never silence', async (t) => {
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      const pattern = `${uniqueChannel('geo:r')}.*`;
      // since makes the SDK send recover: true with that position.
      const sub = newSub(c, pattern, { since: { offset: 0, epoch: '' } });
      const ctx = await subscribed(sub);
      assert.equal(ctx.wasRecovering, true, `subscribed context ${JSON.stringify(ctx)}`);
      assert.equal(ctx.recovered, false, `subscribed context ${JSON.stringify(ctx)}`);
      assert.ok(!ctx.recoverable, `subscribed context ${JSON.stringify(ctx)}`);
    });
  });
}

const missing = redisMissing();
const skip = missing && process.env.GYRE_SKIP_REDIS === '1' ? missing : false;

describe('wildcard subscriptions across two nodes on Redis', { skip }, () => {
  let redis = null;
  let nodeA = null;
  let nodeB = null;
  const nodeConfig = (name) => (port) => ({ ...wildConfig(port), node: { name }, engine: { type: 'redis', redis: { address: [redis.addr] } } });

  before(async () => {
    if (missing) throw new Error(missing);
    redis = await startRedis();
    nodeA = await startServer({ config: nodeConfig('A') });
    nodeB = await startServer({ config: nodeConfig('B') });
  });

  after(async () => {
    for (const n of [nodeA, nodeB]) if (n) await n.stop();
    if (redis) await redis.stop();
  });

  for (const build of builds) {
    it(`a pattern subscriber on node A receives what node B publishes (${build.name} build)`, async (t) => {
      const c = newClient(build, nodeA);
      t.after(() => closeAll([c]));
      await connected(c);
      const base = uniqueChannel('geo:x');
      const sub = newSub(c, `${base}.*.pos`);
      await subscribed(sub);
      for (let i = 0; i < 4; i += 1) await nodeB.publish(`${base}.v${i}.pos`, { i });
      await nodeB.publish(`${base}.v0.speed`, { i: 9 });
      const pubs = await sub.rec.waitCount('publication', 4);
      assert.deepEqual(pubs.map((p) => build.decode(p.data).i).sort(), [0, 1, 2, 3]);
    });

    it(`a pattern subscriber is told (2500) when node A's pub/sub to Redis breaks, and resubscribes (${build.name} build)`, async (t) => {
      const c = newClient(build, nodeA);
      t.after(() => closeAll([c]));
      await connected(c);
      const base = uniqueChannel('geo:k');
      const sub = newSub(c, `${base}.*`);
      await subscribed(sub);
      await nodeB.publish(`${base}.a`, { i: 0 });
      await sub.rec.waitCount('publication', 1);

      const since = sub.rec.mark();
      const [port] = redis.addr.split(':').slice(-1);
      const kill = spawnSync('redis-cli', ['-p', port, 'client', 'kill', 'type', 'pubsub'], { encoding: 'utf8' });
      assert.equal(kill.status, 0, `redis-cli: ${kill.stderr}`);
      const told = await sub.rec.waitFor('subscribing', { since, what: 'subscribing after the pub/sub loss' });
      assert.deepEqual([told.code, told.reason], [2500, 'insufficient state']);
      await sub.rec.waitFor('subscribed', { since, what: 'subscribed again' });
      // What node B publishes from now on arrives again.
      const after = sub.rec.mark();
      await nodeB.publish(`${base}.b`, { i: 1 });
      const [p] = await sub.rec.waitCount('publication', 1, { since: after });
      assert.equal(build.decode(p.data).i, 1);
    });
  }
});
