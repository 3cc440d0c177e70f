import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { baseConfig } from '../lib/server.js';
import { builds, newClient, newSub, connected, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

// "small" keeps two publications: a client that missed five cannot recover.
const server = useServer({
  config: (port) => {
    const cfg = baseConfig(port);
    cfg.channel.namespaces.push({
      name: 'small', history_size: 2, history_ttl: '300s', force_recovery: true, allow_subscribe_for_client: true,
    });
    return cfg;
  },
});

// streamTop reads a channel's stream position through the API, as an
// application's getState does before it loads its own state.
async function streamTop(ch) {
  const res = await server().api('history', { channel: ch, limit: 0 });
  return { offset: res.offset ?? 0, epoch: res.epoch ?? '' };
}

for (const build of builds) {
  describe(`getState (${build.name} build)`, () => {
    it('a first subscribe from the zero position recovers the stream from its start', async (t) => {
      const ch = uniqueChannel('chat:state-');
      for (let n = 1; n <= 3; n++) await server().publish(ch, { n });
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      let calls = 0;
      const sub = newSub(c, ch, { getState: async () => { calls++; return { offset: 0, epoch: '' }; } });
      sub.subscribe();
      const ctx = await sub.rec.waitFor('subscribed');
      assert.equal(ctx.recovered, true, `subscribed event: ${JSON.stringify(ctx)}`);
      const pubs = await sub.rec.waitCount('publication', 3);
      assert.deepEqual(pubs.map((p) => build.decode(p.data)), [{ n: 1 }, { n: 2 }, { n: 3 }]);
      assert.deepEqual(pubs.map((p) => p.offset), [1, 2, 3]);
      assert.equal(calls, 1);
    });

    it('a position the history no longer covers is refused with 112 and getState is called again', async (t) => {
      const ch = uniqueChannel('small:state-');
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      let calls = 0;
      const sub = newSub(c, ch, {
        minResubscribeDelay: 50,
        maxResubscribeDelay: 50,
        getState: async () => { calls++; return streamTop(ch); },
      });
      sub.subscribe();
      await sub.rec.waitFor('subscribed');
      assert.equal(calls, 1);

      c.disconnect();
      for (let n = 1; n <= 5; n++) await server().publish(ch, { n });
      const since = sub.rec.mark();
      c.connect();
      const ctx = await sub.rec.waitFor('subscribed', { since });
      assert.equal(calls, 2, 'getState not called again after an unrecoverable position');
      assert.equal(ctx.streamPosition.offset, 5, `subscribed event: ${JSON.stringify(ctx)}`);
      // Nothing from before the new state reached the application.
      assert.equal(sub.rec.all('publication', since).length, 0);

      const live = await server().publish(ch, { n: 'live' });
      const pub = await sub.rec.waitFor('publication', { since, match: (p) => p.offset === live.offset, what: 'live publication' });
      assert.deepEqual(build.decode(pub.data), { n: 'live' });
    });
  });
}
