// Presence as map subscriptions, with centrifuge-js 5.8 on the memory engine
// and on Redis (the observer on one node, the members on the other): the
// subscribers of a stream channel of "room:" are the keys of
// "clients:room:..." (one per connection, keyed by client id, with its info)
// and of "users:room:..." (one per user). A member who joins costs each
// observer one update, not a new sync.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { engines, engineSkip, startNodes } from '../lib/engines.js';
import { MapView, mapsConfig } from '../lib/maps.js';
import { builds, newClient, newSub, connected, subscribed, closeAll, uniqueChannel } from '../lib/sdk.js';

for (const engine of engines) {
  describe(`map presence on the ${engine} engine`, { skip: engineSkip(engine) }, () => {
    let nodes;
    before(async () => {
      nodes = await startNodes(engine, (port) => mapsConfig(port));
    });
    after(async () => {
      if (nodes) await nodes.stop();
    });

    for (const build of builds) {
      it(`lists each connection and each user of a channel (${build.name} build)`, async (t) => {
        const room = uniqueChannel('room:');
        const observer = newClient(build, nodes.sub, { user: 'observer' });
        const bob1 = newClient(build, nodes.pub, { user: 'bob' });
        const bob2 = newClient(build, nodes.pub, { user: 'bob' });
        t.after(() => closeAll([observer, bob1, bob2]));
        const [, c1, c2] = await Promise.all([connected(observer), connected(bob1), connected(bob2)]);

        const clients = new MapView(observer, `clients:${room}`, build, { kind: 'clients' });
        const users = new MapView(observer, `users:${room}`, build, { kind: 'users' });
        await clients.subscribe();
        await users.subscribe();
        await clients.waitUntil((v) => v.syncs === 1, 'first sync of clients');
        assert.equal(clients.entries.size, 0);

        const s1 = newSub(bob1, room);
        const s2 = newSub(bob2, room);
        await subscribed(s1);
        await subscribed(s2);
        await clients.waitUntil((v) => v.entries.size === 2, 'both connections of bob');
        await users.waitUntil((v) => v.entries.has('bob'), 'bob among users');
        assert.deepEqual([...clients.entries.keys()].sort(), [c1.client, c2.client].sort());
        for (const e of clients.entries.values()) assert.equal(e.info?.user, 'bob', `entry: ${JSON.stringify(e)}`);
        assert.equal(users.entries.size, 1);
        assert.equal(clients.syncs, 1, 'joins came as updates, not as a new sync');

        s1.unsubscribe();
        await clients.waitUntil((v) => v.entries.size === 1, 'one connection left');
        assert.ok(!clients.entries.has(c1.client), 'the connection that left is gone');
        assert.ok(users.entries.has('bob'), 'bob is still there through his other connection');
        bob2.disconnect();
        await clients.waitUntil((v) => v.entries.size === 0, 'nobody left');
      });
    }
  });
}
