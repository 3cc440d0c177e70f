// Steps of the recovery scenarios: a client sees one publication live, misses
// three, and must get exactly those back when it subscribes again. pub is the
// server whose API publishes: the client's own, or another node.

import assert from 'node:assert/strict';

import { newSub, subscribed, uniqueChannel } from './sdk.js';

// subscribeWithLive subscribes c to a fresh channel of "chat" (with history)
// and sees one publication live, so that the position the client later
// recovers from is not zero.
export async function subscribeWithLive(pub, c) {
  const ch = uniqueChannel('chat:rec-');
  const sub = newSub(c, ch);
  const first = await subscribed(sub);
  assert.equal(first.recoverable, true, `subscribe to a history channel: ${JSON.stringify(first)}`);
  const live = await pub.publish(ch, { n: 0 });
  await sub.rec.waitFor('publication', { match: (p) => p.offset === live.offset, what: 'live publication' });
  return { ch, sub, live };
}

// publishMissed publishes {n: 1} to {n: 3} and returns their offsets, which
// follow live's.
export async function publishMissed(pub, { ch, live }) {
  const missed = [];
  for (let n = 1; n <= 3; n++) {
    const res = await pub.publish(ch, { n });
    assert.equal(res.epoch, live.epoch, 'the epoch changed between publishes');
    missed.push(res.offset);
  }
  assert.deepEqual(missed, [live.offset + 1, live.offset + 2, live.offset + 3], 'offsets from the API');
  return missed;
}

// expectRecovered checks the resubscription after since: recovered, and the
// missed publications delivered once each in offset order.
export async function expectRecovered(build, pub, { ch, sub }, since, missed) {
  const ctx = await sub.rec.waitFor('subscribed', { since });
  assert.equal(ctx.wasRecovering, true, `subscribed event: ${JSON.stringify(ctx)}`);
  assert.equal(ctx.recovered, true, `subscribed event: ${JSON.stringify(ctx)}`);

  // The recovered publications come in the subscribe reply, delivered together;
  // a marker published afterwards shows that nothing more was queued before it.
  await sub.rec.waitCount('publication', 3, { since });
  const marker = await pub.publish(ch, { n: 'marker' });
  await sub.rec.waitFor('publication', { since, match: (p) => p.offset === marker.offset, what: 'marker publication' });

  const got = sub.rec.all('publication', since);
  const recovered = got.filter((p) => p.offset !== marker.offset);
  assert.deepEqual(recovered.map((p) => p.offset), missed, 'recovered offsets (order, duplicates)');
  assert.deepEqual(recovered.map((p) => build.decode(p.data)), [{ n: 1 }, { n: 2 }, { n: 3 }]);
  assert.equal(got.length, 4, `publications after reconnect: ${got.map((p) => p.offset)}`);
}

// recoversAfterDisconnect disconnects c, has pub publish three publications
// into the channel of state (from subscribeWithLive), connects c again and
// checks that its subscription recovers them.
export async function recoversAfterDisconnect(build, pub, c, state) {
  const since = c.rec.mark();
  c.disconnect();
  await c.rec.waitFor('disconnected', { since });
  const missed = await publishMissed(pub, state);

  const subSince = state.sub.rec.mark();
  c.connect();
  await expectRecovered(build, pub, state, subSince, missed);
}
