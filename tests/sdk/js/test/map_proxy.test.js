// Map publish and remove proxies through centrifuge-js: a backend written
// here answers gyre's HTTP proxy calls. It keys each client's write by its
// user and stamps the value with the writer; it refuses to remove keys
// marked locked. Other subscribers see what the backend decided.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { startBackend } from '../lib/backend.js';
import { MapView, mapsConfig, stateOf } from '../lib/maps.js';
import { builds, newClient, connected, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

function answer(hook, req) {
  switch (hook) {
    case 'map_publish': {
      const value = req.data ?? JSON.parse(Buffer.from(req.b64data ?? '', 'base64').toString('utf8') || 'null');
      return { result: { key: `${req.user}:${req.key}`, data: { ...value, by: req.user }, tags: { writer: req.user } } };
    }
    case 'map_remove':
      if (req.key.includes('locked')) return { error: { code: 4403, message: 'locked' } };
      return { result: {} };
  }
  return null;
}

const { url: backendURL, calls } = await startBackend(answer, ['map_publish', 'map_remove']);

const server = useServer({ config: (port) => mapsConfig(port, { proxyUrl: backendURL }) });

for (const build of builds) {
  describe(`map proxies (${build.name} build)`, () => {
    it('writes what the backend decided, and refuses the removals it refuses', async (t) => {
      const ch = uniqueChannel('guarded:board-');
      const alice = newClient(build, server(), { user: 'alice' });
      const bob = newClient(build, server(), { user: 'bob' });
      t.after(() => closeAll([alice, bob]));
      await connected(alice);
      await connected(bob);
      const av = new MapView(alice, ch, build);
      const bv = new MapView(bob, ch, build);
      await av.subscribe();
      await bv.subscribe();

      await av.sub.publish('note', build.encode({ text: 'hi' }));
      await bv.waitUntil((v) => v.entries.has('alice:note'), 'the key the backend chose');
      assert.deepEqual(bv.values(), { 'alice:note': { text: 'hi', by: 'alice' } });
      const call = calls.map_publish.find((c) => c.channel === ch);
      assert.ok(call, 'the backend got the map publish call');
      assert.equal(call.user, 'alice');
      assert.equal(call.key, 'note');

      await av.sub.publish('locked-note', build.encode({ text: 'keep' }));
      await bv.waitUntil((v) => v.entries.has('alice:locked-note'), 'the locked key');
      await assert.rejects(bv.sub.remove('alice:locked-note'), (e) => e.code === 4403);
      await bv.sub.remove('alice:note');
      await av.waitUntil((v) => !v.entries.has('alice:note'), 'the removal');
      assert.deepEqual(Object.keys(await stateOf(server(), ch)), ['alice:locked-note']);
    });
  });
}
