import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { startRelay } from '../lib/proxy.js';
import { builds, newClient, newSub, connected, subscribed, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

const server = useServer();

// subscribeWithLive subscribes to a fresh history channel and sees one publication
// live, so that the position the client later recovers from is not zero.
async function subscribeWithLive(c) {
  const ch = uniqueChannel('chat:rec-');
  const sub = newSub(c, ch);
  const first = await subscribed(sub);
  assert.equal(first.recoverable, true, `subscribe to a history channel: ${JSON.stringify(first)}`);
  const live = await server().publish(ch, { n: 0 });
  await sub.rec.waitFor('publication', { match: (p) => p.offset === live.offset, what: 'live publication' });
  return { ch, sub, live };
}

async function publishMissed(ch, live) {
  const missed = [];
  for (let n = 1; n <= 3; n++) {
    const res = await server().publish(ch, { n });
    assert.equal(res.epoch, live.epoch, 'the epoch changed between publishes');
    missed.push(res.offset);
  }
  assert.deepEqual(missed, [live.offset + 1, live.offset + 2, live.offset + 3], 'offsets from the API');
  return missed;
}

// expectRecovered checks the resubscription after since: recovered, and the
// missed publications delivered once each in offset order.
async function expectRecovered(build, { ch, sub }, since, missed) {
  const ctx = await sub.rec.waitFor('subscribed', { since });
  assert.equal(ctx.wasRecovering, true, `subscribed event: ${JSON.stringify(ctx)}`);
  assert.equal(ctx.recovered, true, `subscribed event: ${JSON.stringify(ctx)}`);

  // The recovered publications come in the subscribe reply, delivered together;
  // a marker published afterwards shows that nothing more was queued before it.
  await sub.rec.waitCount('publication', 3, { since });
  const marker = await server().publish(ch, { n: 'marker' });
  await sub.rec.waitFor('publication', { since, match: (p) => p.offset === marker.offset, what: 'marker publication' });

  const got = sub.rec.all('publication', since);
  const recovered = got.filter((p) => p.offset !== marker.offset);
  assert.deepEqual(recovered.map((p) => p.offset), missed, 'recovered offsets (order, duplicates)');
  assert.deepEqual(recovered.map((p) => build.decode(p.data)), [{ n: 1 }, { n: 2 }, { n: 3 }]);
  assert.equal(got.length, 4, `publications after reconnect: ${got.map((p) => p.offset)}`);
}

for (const build of builds) {
  describe(`recovery (${build.name} build)`, () => {
    it('recovers the publications missed while disconnected, in offset order, once each', async (t) => {
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      const state = await subscribeWithLive(c);

      const since = c.rec.mark();
      c.disconnect();
      await c.rec.waitFor('disconnected', { since });
      const missed = await publishMissed(state.ch, state.live);

      const subSince = state.sub.rec.mark();
      c.connect();
      await expectRecovered(build, state, subSince, missed);
    });

    it('recovers after the network drops the connection', async (t) => {
      const relay = await startRelay(server().port);
      const c = newClient(build, server(), { url: relay.wsUrl });
      t.after(async () => {
        closeAll([c]);
        await relay.close();
      });
      await connected(c);
      const state = await subscribeWithLive(c);

      const since = c.rec.mark();
      relay.cut();
      await c.rec.waitFor('connecting', { since, what: 'connecting after the drop' });
      const missed = await publishMissed(state.ch, state.live);

      const subSince = state.sub.rec.mark();
      relay.restore();
      await expectRecovered(build, state, subSince, missed);
    });
  });
}
