// Two gyre nodes on one Redis (engine.type "redis"): a centrifuge-js client
// connected to node A receives what the HTTP API of node B publishes, and
// sees presence and join/leave of a client connected to node B.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { builds, newClient, newSub, connected, subscribed, closeAll, uniqueChannel } from '../lib/sdk.js';
import { baseConfig, startServer } from '../lib/server.js';
import { redisMissing, startRedis } from '../lib/redis.js';

const missing = redisMissing();
const skip = missing && process.env.GYRE_SKIP_REDIS === '1' ? missing : false;

// nodeConfig is the shared test configuration on the Redis engine.
function nodeConfig(name, addr) {
  return (port) => ({
    ...baseConfig(port),
    node: { name },
    engine: { type: 'redis', redis: { address: [addr] } },
  });
}

describe('two nodes on one Redis', { skip }, () => {
  let redis = null;
  let nodeA = null;
  let nodeB = null;

  before(async () => {
    if (missing) throw new Error(missing);
    redis = await startRedis();
    nodeA = await startServer({ config: nodeConfig('A', redis.addr) });
    nodeB = await startServer({ config: nodeConfig('B', redis.addr) });
  });

  after(async () => {
    for (const n of [nodeA, nodeB]) if (n) await n.stop();
    if (redis) await redis.stop();
  });

  for (const build of builds) {
    describe(`${build.name} build`, () => {
      it('receives on node A what the API of node B publishes, with offsets', async (t) => {
        const c = newClient(build, nodeA);
        t.after(() => closeAll([c]));
        await connected(c);
        const ch = uniqueChannel('chat:cross-');
        const sub = newSub(c, ch);
        await subscribed(sub);

        const sent = [];
        for (let i = 0; i < 5; i += 1) {
          const data = { i, text: `from B ${i}` };
          sent.push(data);
          const res = await nodeB.publish(ch, data);
          assert.equal(res.offset, i + 1, `publish result: ${JSON.stringify(res)}`);
        }
        const pubs = await sub.rec.waitCount('publication', sent.length);
        // centrifuge-js may reorder publications that arrive in separate
        // frames (see protocol.md), so compare as sets, with offsets.
        const got = pubs.map((p) => ({ offset: p.offset, data: build.decode(p.data) }));
        got.sort((x, y) => x.offset - y.offset);
        assert.deepEqual(got, sent.map((data, i) => ({ offset: i + 1, data })));
      });

      it('sees presence and join/leave of a client on node B', async (t) => {
        const alice = newClient(build, nodeA, { user: 'alice' });
        const bob = newClient(build, nodeB, { user: 'bob' });
        t.after(() => closeAll([alice, bob]));
        const aliceConn = await connected(alice);
        const bobConn = await connected(bob);

        const ch = uniqueChannel('chat:room-');
        const subA = newSub(alice, ch);
        await subscribed(subA);
        const since = subA.rec.mark();
        const subB = newSub(bob, ch);
        await subscribed(subB);
        const join = await subA.rec.waitFor('join', { since, match: (j) => j.info?.user === 'bob', what: 'join of bob' });
        assert.equal(join.info.client, bobConn.client);

        const presence = await subA.presence();
        assert.deepEqual(
          Object.keys(presence.clients ?? {}).sort(),
          [aliceConn.client, bobConn.client].sort(),
          `presence seen from node A: ${JSON.stringify(presence)}`,
        );

        subB.unsubscribe();
        const leave = await subA.rec.waitFor('leave', { since, match: (l) => l.info?.user === 'bob', what: 'leave of bob' });
        assert.equal(leave.info.client, bobConn.client);
      });
    });
  }
});
