import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { baseConfig } from '../lib/server.js';
import { builds, newClient, newSub, connected, subscribed, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

// "latest" recovers in cache mode: a returning subscriber gets only the
// latest publication. Its history is short, so that missing more than it
// holds is cheap to test.
const server = useServer({
  config: (port) => {
    const cfg = baseConfig(port);
    cfg.channel.namespaces.push({
      name: 'latest',
      allow_subscribe_for_client: true,
      history_size: 5,
      history_ttl: '300s',
      force_recovery: true,
      force_recovery_mode: 'cache',
    });
    return cfg;
  },
});

// A case that shows an engine bug not fixed yet runs only with
// GYRE_TEST_KNOWN_BUGS set.

// away subscribes to a fresh channel, sees one publication live and
// disconnects; then publishes missed more. It returns the channel, the
// subscription and the stream position of the last publication.
async function away(build, c, missed) {
  const ch = uniqueChannel('latest:c-');
  const sub = newSub(c, ch);
  const first = await subscribed(sub);
  assert.equal(first.recoverable, true, `subscribe: ${JSON.stringify(first)}`);
  let last = await server().publish(ch, { n: 0 });
  await sub.rec.waitFor('publication', { match: (p) => p.offset === last.offset, what: 'live publication' });

  const since = c.rec.mark();
  c.disconnect();
  await c.rec.waitFor('disconnected', { since });
  for (let n = 1; n <= missed; n++) last = await server().publish(ch, { n });
  return { ch, sub, last };
}

// comeBack reconnects and returns the subscribed event and the data of
// every publication delivered after it, up to a marker published once the
// subscription is back.
async function comeBack(build, c, { ch, sub }) {
  const since = sub.rec.mark();
  c.connect();
  const ctx = await sub.rec.waitFor('subscribed', { since });
  const marker = await server().publish(ch, { n: 'marker' });
  await sub.rec.waitFor('publication', { since, match: (p) => p.offset === marker.offset, what: 'marker publication' });
  const got = sub.rec.all('publication', since).map((p) => ({ offset: p.offset, data: build.decode(p.data) }));
  return { ctx, got, marker };
}

for (const build of builds) {
  describe(`cache recovery (${build.name} build)`, () => {
    const cases = [
      { name: 'gets only the latest of several missed publications', missed: 3 },
      { name: 'gets the latest publication when more were missed than history holds', missed: 9 },
      { name: 'gets nothing again when nothing was missed', missed: 0 },
    ];
    for (const tc of cases) {
      it(tc.name, { skip: tc.skip }, async (t) => {
        const c = newClient(build, server());
        t.after(() => closeAll([c]));
        await connected(c);
        const state = await away(build, c, tc.missed);
        const { ctx, got, marker } = await comeBack(build, c, state);

        assert.equal(ctx.wasRecovering, true, `subscribed: ${JSON.stringify(ctx)}`);
        assert.equal(ctx.recovered, true, `subscribed: ${JSON.stringify(ctx)}`);
        const want = [{ offset: marker.offset, data: { n: 'marker' } }];
        if (tc.missed > 0) want.unshift({ offset: state.last.offset, data: { n: tc.missed } });
        assert.deepEqual(got, want);
      });
    }
  });
}
