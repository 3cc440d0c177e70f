// presence of a channel nobody is in: centrifuge-js hands the wire's map
// to the application as clients, so the JSON reply must carry it also when
// it is empty ({"presence":{"presence":{}}}); application code that does
// Object.keys(p.clients) when a room empties must not throw.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { builds, newClient, connected, closeAll, uniqueChannel } from '../lib/sdk.js';
import { baseConfig } from '../lib/server.js';
import { useServer } from '../lib/sdk.js';

// A namespace whose presence any client may ask for, subscribed or not.
const server = useServer({
  config: (port) => {
    const cfg = baseConfig(port);
    cfg.channel.namespaces.push({ name: 'lobby', presence: true, allow_presence_for_client: true, allow_subscribe_for_client: true });
    return cfg;
  },
});

for (const build of builds) {
  describe(`presence of an empty channel (${build.name} build)`, () => {
    it('gives clients as an empty object, before anyone joins and after everyone left', async (t) => {
      const alice = newClient(build, server(), { user: 'alice' });
      t.after(() => closeAll([alice]));
      await connected(alice);
      const ch = uniqueChannel('lobby:room-');

      const before = await alice.presence(ch);
      assert.deepEqual(before.clients, {}, `presence before anyone joined: ${JSON.stringify(before)}`);
      assert.equal(Object.keys(before.clients).length, 0);

      const sub = alice.newSubscription(ch);
      const subscribed = new Promise((resolve) => sub.once('subscribed', resolve));
      sub.subscribe();
      await subscribed;
      const during = await alice.presence(ch);
      assert.equal(Object.keys(during.clients).length, 1);

      sub.unsubscribe();
      const after = await alice.presence(ch);
      assert.deepEqual(after.clients, {}, `presence after the last one left: ${JSON.stringify(after)}`);
    });
  });
}
