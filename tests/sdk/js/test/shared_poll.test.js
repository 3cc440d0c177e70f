// Shared-poll subscriptions through centrifuge-js (newSharedPollSubscription,
// track, untrack), on both builds, against gyre polling a refresh backend
// written here: the scenarios of centrifuge-js's own shared_poll tests, in our
// words. The backend answers every poll with the current state of the keys
// asked for, as the SDK's mock does; gyre decides what reaches each client.
//
// Where the client would hide a server mistake (it drops versions it already
// has), the JSON build also checks the pushes on the wire.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { startBackend } from '../lib/backend.js';
import { signToken } from '../lib/server.js';
import {
  MAX_KEYS,
  PollStore,
  newPollSub,
  pollConfig,
  signer,
  startGrpcPollBackend,
  trackSignature,
} from '../lib/sharedpoll.js';
import {
  builds,
  closeAll,
  connected,
  newClient,
  spyingSocket,
  subscribed,
  uniqueChannel,
  useServer,
} from '../lib/sdk.js';

// POLL_WAIT bounds a wait for something that takes a poll or two (gyre polls
// every 200 ms here). What must not come is watched for over further polls
// (morePolls), not over a fixed time.
const POLL_WAIT = 10000;
const TEST_TIMEOUT = 60000;

const store = new PollStore();
const { url: refreshUrl } = await startBackend(store.httpAnswer(), ['refresh']);
const grpcBackend = await startGrpcPollBackend(store);
after(() => grpcBackend.close());

const server = useServer({ config: (port) => pollConfig(port, { refreshUrl, grpcAddr: grpcBackend.addr }) });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// waitUntil polls cond every 20 ms until it holds.
async function waitUntil(cond, what, timeoutMs = POLL_WAIT) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(20);
  }
}

// morePolls waits until gyre has polled key of channel n more times (and
// had answers): what must not come would have come by then.
function morePolls(channel, key, n = 2) {
  const mark = store.mark();
  return waitUntil(() => store.polls(channel, { since: mark, key }).filter((p) => !p.failed).length >= n,
    `${n} more polls of ${key}`);
}

// pollClient connects a client without a token (the anonymous user "" the
// signatures name), unless opts give one, and closes it after the test.
async function pollClient(t, build, opts = {}) {
  const c = newClient(build, server(), { token: '', ...opts });
  t.after(() => closeAll([c]));
  await connected(c);
  return c;
}

async function subscribedPollSub(client, channel, opts = {}) {
  const sub = newPollSub(client, channel, opts);
  await subscribed(sub);
  return sub;
}

// view is an update as the application reads it: data decoded from the
// build's form, version a number.
function view(build, u) {
  return {
    channel: u.channel,
    key: u.key,
    data: u.data == null || (u.data instanceof Uint8Array && u.data.length === 0) ? null : build.decode(u.data),
    version: u.version === undefined ? undefined : Number(u.version),
    removed: Boolean(u.removed),
  };
}

// nextUpdate waits for the first update of key recorded at or after since.
function nextUpdate(sub, key, { since = 0, timeoutMs = POLL_WAIT, match = () => true, what } = {}) {
  return sub.rec.waitFor('update', {
    since,
    timeoutMs,
    match: (u) => u.key === key && match(u),
    what: what ?? `update of ${key}`,
  });
}

function updateWithVersion(sub, key, version, opts = {}) {
  return nextUpdate(sub, key, { ...opts, match: (u) => !u.removed && Number(u.version) === version, what: `update of ${key} to version ${version}` });
}

function updatesOf(sub, key, since = 0) {
  return sub.rec.all('update', since).filter((u) => u.key === key);
}

// trackError waits for the error event of a refused track.
function trackError(sub, since = 0, timeoutMs = POLL_WAIT) {
  return sub.rec.waitFor('error', { since, timeoutMs, match: (e) => e.type === 'track', what: 'track error' });
}

// pubsOnWire lists the publications of key the server sent a JSON client
// whose frames were kept: pushes on channel, and items of sub_refresh replies
// (the client has no other subscription in the tests that look).
function pubsOnWire(frames, channel, key) {
  const out = [];
  for (const frame of frames) {
    for (const line of frame.toString('utf8').split('\n')) {
      let msg;
      try { msg = JSON.parse(line); } catch { continue; }
      if (msg.push?.channel === channel && msg.push.pub?.key === key) out.push(msg.push.pub);
      for (const item of msg.sub_refresh?.items ?? []) {
        if (item.key === key) out.push(item);
      }
    }
  }
  return out;
}

for (const build of builds) {
  const isJSON = build.name === 'json';

  describe(`shared poll (${build.name} build)`, () => {
    it('track(keys) signs through getSignature and delivers the backend data with versions', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:keys-');
      store.set(ch, 'k1', { value: 'hello' }, 1);
      store.set(ch, 'k2', { value: 'world' }, 1);
      const c = await pollClient(t, build);
      const sign = signer(ch);
      const sub = await subscribedPollSub(c, ch, { getSignature: sign });
      assert.equal(sub.type, 'shared_poll');

      sub.track(['k1', 'k2']);
      const [u1, u2] = await Promise.all([nextUpdate(sub, 'k1'), nextUpdate(sub, 'k2')]);
      assert.deepEqual(view(build, u1), { channel: ch, key: 'k1', data: { value: 'hello' }, version: 1, removed: false });
      assert.deepEqual(view(build, u2), { channel: ch, key: 'k2', data: { value: 'world' }, version: 1, removed: false });
      assert.deepEqual(sign.calls, [['k1', 'k2']], 'one getSignature call for the keys tracked');
      assert.deepEqual([...sub.trackedKeys()].sort(), ['k1', 'k2']);
      assert.equal(sub._sharedPollTrackedItems.get('k1'), 1, 'the version delivered is the one kept');
      const asked = new Set(store.polls(ch).flatMap((p) => p.items.map((i) => i.key)));
      assert.deepEqual([...asked].sort(), ['k1', 'k2'], 'gyre polled the tracked keys, and only them');
    });

    it('track(items, signature) uses the signature given, and newer versions follow', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:explicit-');
      store.set(ch, 'item1', { score: 42 }, 3);
      const c = await pollClient(t, build);
      const sign = signer(ch);
      const sub = await subscribedPollSub(c, ch, { getSignature: sign });

      sub.track([{ key: 'item1', version: 0 }], trackSignature(ch, ['item1']));
      const first = await nextUpdate(sub, 'item1');
      assert.deepEqual(view(build, first), { channel: ch, key: 'item1', data: { score: 42 }, version: 3, removed: false });

      const since = sub.rec.mark();
      store.set(ch, 'item1', { score: 43 }, 4);
      const second = await nextUpdate(sub, 'item1', { since });
      assert.deepEqual(view(build, second), { channel: ch, key: 'item1', data: { score: 43 }, version: 4, removed: false });
      await morePolls(ch, 'item1');
      assert.deepEqual(updatesOf(sub, 'item1', since).map((u) => Number(u.version)), [4],
        'an unchanged version polled again is not delivered again');
      assert.deepEqual(sign.calls, [], 'getSignature is not called when a signature is given');
    });

    it('a version the client already has is not sent; the next one is', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:filter-');
      store.set(ch, 'k1', { v: 1 }, 5);
      const frames = [];
      const c = await pollClient(t, build, isJSON ? { websocket: spyingSocket(frames) } : {});
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });

      const mark = store.mark();
      sub.track([{ key: 'k1', version: 5 }], trackSignature(ch, ['k1']));
      await waitUntil(() => store.polls(ch, { since: mark, key: 'k1' }).length >= 2, 'two polls of k1 after the track');
      await sleep(300);
      assert.deepEqual(updatesOf(sub, 'k1').map((u) => view(build, u)), [], 'no update for version 5');
      if (isJSON) {
        assert.deepEqual(pubsOnWire(frames, ch, 'k1'), [], 'version 5 was not pushed to a client tracking version 5');
      }

      store.set(ch, 'k1', { v: 2 }, 6);
      const u = await nextUpdate(sub, 'k1');
      assert.deepEqual(view(build, u), { channel: ch, key: 'k1', data: { v: 2 }, version: 6, removed: false });
      if (isJSON) {
        assert.deepEqual(pubsOnWire(frames, ch, 'k1').map((p) => p.version), [6]);
      }
    });

    it('a key the backend removes comes as removed and leaves the poll', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:removal-');
      store.set(ch, 'k1', { v: 1 }, 1);
      store.set(ch, 'k2', { v: 1 }, 1);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });
      sub.track([{ key: 'k1', version: 0 }, { key: 'k2', version: 0 }], trackSignature(ch, ['k1', 'k2']));
      await Promise.all([updateWithVersion(sub, 'k1', 1), updateWithVersion(sub, 'k2', 1)]);

      const since = sub.rec.mark();
      store.remove(ch, 'k1');
      const removal = await nextUpdate(sub, 'k1', { since });
      assert.equal(removal.key, 'k1');
      assert.equal(removal.removed, true);
      assert.equal(removal.channel, ch);
      assert.equal(sub.trackedKeys().has('k1'), false, 'the client stops tracking a removed key');

      await sleep(400);
      const mark = store.mark();
      await morePolls(ch, 'k2', 3);
      assert.deepEqual(store.polls(ch, { since: mark, key: 'k1' }), [], 'gyre stopped polling the removed key');
      assert.equal(sub.trackedKeys().has('k2'), true);
      assert.equal(updatesOf(sub, 'k1', since).length, 1, 'one removal, nothing after it');
    });

    it('untrack stops the updates of that key only', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:untrack-');
      store.set(ch, 'k1', { v: 1 }, 1);
      store.set(ch, 'k2', { v: 1 }, 1);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });
      sub.track([{ key: 'k1', version: 0 }, { key: 'k2', version: 0 }], trackSignature(ch, ['k1', 'k2']));
      await Promise.all([updateWithVersion(sub, 'k1', 1), updateWithVersion(sub, 'k2', 1)]);

      const since = sub.rec.mark();
      sub.untrack(['k1']);
      assert.deepEqual([...sub.trackedKeys()], ['k2']);
      await sleep(300);
      const mark = store.mark();
      store.set(ch, 'k1', { v: 2 }, 2);
      store.set(ch, 'k2', { v: 2 }, 2);
      const u = await updateWithVersion(sub, 'k2', 2, { since });
      assert.deepEqual(view(build, u).data, { v: 2 });
      await morePolls(ch, 'k2');
      assert.deepEqual(updatesOf(sub, 'k1', since), [], 'no update of the untracked key');
      assert.deepEqual(store.polls(ch, { since: mark, key: 'k1' }), [], 'gyre stopped polling the untracked key');
      assert.deepEqual(sub.rec.all('error'), [], 'untrack was accepted');
    });

    it('unsubscribe stops the updates and the polling of its keys', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:unsub-');
      store.set(ch, 'k1', { v: 1 }, 1);
      store.set(ch, 'other', { v: 1 }, 1);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });
      sub.track([{ key: 'k1', version: 0 }], trackSignature(ch, ['k1']));
      await updateWithVersion(sub, 'k1', 1);
      // Another client keeps the channel polled.
      const c2 = await pollClient(t, build);
      const sub2 = await subscribedPollSub(c2, ch, { getSignature: signer(ch) });
      sub2.track([{ key: 'other', version: 0 }], trackSignature(ch, ['other']));
      await updateWithVersion(sub2, 'other', 1);

      const since = sub.rec.mark();
      sub.unsubscribe();
      await sub.rec.waitFor('unsubscribed', { since });
      await sleep(300);
      const mark = store.mark();
      store.set(ch, 'k1', { v: 2 }, 2);
      await morePolls(ch, 'other', 3);
      assert.deepEqual(updatesOf(sub, 'k1', since), [], 'nothing after unsubscribe');
      assert.deepEqual(store.polls(ch, { since: mark, key: 'k1' }), [], 'gyre stopped polling the key nobody tracks');
      assert.deepEqual(sub2.rec.all('update').map((u) => u.key), ['other'], 'the other client got only its key');
    });

    it('two clients tracking one key share its polls and both get every version', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:two-');
      store.set(ch, 'shared', { val: 'one' }, 1);
      const c1 = await pollClient(t, build);
      const c2 = await pollClient(t, build);
      const sub1 = await subscribedPollSub(c1, ch, { getSignature: signer(ch) });
      const sub2 = await subscribedPollSub(c2, ch, { getSignature: signer(ch) });

      sub1.track([{ key: 'shared', version: 0 }], trackSignature(ch, ['shared']));
      sub2.track([{ key: 'shared', version: 0 }], trackSignature(ch, ['shared']));
      const [a, b] = await Promise.all([updateWithVersion(sub1, 'shared', 1), updateWithVersion(sub2, 'shared', 1)]);
      assert.deepEqual(view(build, a).data, { val: 'one' });
      assert.deepEqual(view(build, b).data, { val: 'one' });

      const mark = store.mark();
      store.set(ch, 'shared', { val: 'two' }, 2);
      const [a2, b2] = await Promise.all([updateWithVersion(sub1, 'shared', 2), updateWithVersion(sub2, 'shared', 2)]);
      assert.deepEqual(view(build, a2).data, { val: 'two' });
      assert.deepEqual(view(build, b2).data, { val: 'two' });
      for (const p of store.polls(ch, { since: mark })) {
        assert.equal(p.items.filter((i) => i.key === 'shared').length, 1, `a poll asks for the key once: ${JSON.stringify(p.items)}`);
      }
    });

    it('three clients tracking one by one all get the current value, late trackers included', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:late-');
      store.set(ch, 'mk1', { n: 1 }, 1);
      store.set(ch, 'mk2', { n: 2 }, 1);
      const frames = [];
      const clients = [
        await pollClient(t, build, isJSON ? { websocket: spyingSocket(frames) } : {}),
        await pollClient(t, build),
        await pollClient(t, build),
      ];
      const subs = [];
      for (const c of clients) subs.push(await subscribedPollSub(c, ch, { getSignature: signer(ch) }));

      for (const [i, sub] of subs.entries()) {
        sub.track([{ key: 'mk1', version: 0 }, { key: 'mk2', version: 0 }], trackSignature(ch, ['mk1', 'mk2']));
        const [u1, u2] = await Promise.all([nextUpdate(sub, 'mk1'), nextUpdate(sub, 'mk2')]);
        assert.deepEqual(view(build, u1), { channel: ch, key: 'mk1', data: { n: 1 }, version: 1, removed: false }, `client ${i + 1}`);
        assert.deepEqual(view(build, u2), { channel: ch, key: 'mk2', data: { n: 2 }, version: 1, removed: false }, `client ${i + 1}`);
        await sleep(300);
      }

      store.set(ch, 'mk1', { n: 10 }, 2);
      const latest = await Promise.all(subs.map((s) => updateWithVersion(s, 'mk1', 2)));
      for (const u of latest) assert.deepEqual(view(build, u).data, { n: 10 });
      for (const [i, sub] of subs.entries()) {
        assert.deepEqual(updatesOf(sub, 'mk1').map((u) => Number(u.version)), [1, 2], `client ${i + 1} saw each version once`);
      }
      if (isJSON) {
        assert.deepEqual(pubsOnWire(frames, ch, 'mk1').map((p) => p.version), [1, 2],
          'the first client got no repeat of version 1 when the others tracked');
      }
    });

    it('versionless namespace: an 8-character epoch and synthetic versions above 0', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('pollvl:vl-');
      store.set(ch, 'vk', { val: 'hello' }, 0);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });
      const epoch = sub._sharedPollEpoch;
      assert.equal(typeof epoch, 'string');
      assert.equal(epoch.length, 8, `epoch ${JSON.stringify(epoch)} of the subscribe reply`);

      sub.track([{ key: 'vk', version: 0 }], trackSignature(ch, ['vk']));
      const first = await nextUpdate(sub, 'vk');
      const v1 = Number(first.version);
      assert.deepEqual(view(build, first).data, { val: 'hello' });
      assert.ok(v1 > 0, `synthetic version ${first.version} is above 0`);
      assert.equal(sub._sharedPollTrackedItems.get('vk'), v1, 'the client keeps the synthetic version');

      const since = sub.rec.mark();
      store.set(ch, 'vk', { val: 'changed' }, 0);
      const second = await nextUpdate(sub, 'vk', { since });
      assert.deepEqual(view(build, second).data, { val: 'changed' });
      assert.ok(Number(second.version) > v1, `version ${second.version} follows ${v1}`);
      await morePolls(ch, 'vk');
      assert.equal(updatesOf(sub, 'vk', since).length, 1, 'unchanged data polled again is not delivered again');
      for (const p of store.polls(ch, { key: 'vk' })) {
        assert.deepEqual(p.items.map((i) => i.version), [0], 'a versionless poll sends no version');
      }
    });

    it('versionless namespace: a version the backend does give is used as it is', { timeout: TEST_TIMEOUT }, async (t) => {
      // Centrifugo compares such an item as in a versioned namespace.
      const ch = uniqueChannel('pollvl:given-');
      store.set(ch, 'gk', { n: 1 }, 7);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });
      sub.track([{ key: 'gk', version: 0 }], trackSignature(ch, ['gk']));
      const first = await nextUpdate(sub, 'gk');
      assert.deepEqual(view(build, first), { channel: ch, key: 'gk', data: { n: 1 }, version: 7, removed: false });
      const since = sub.rec.mark();
      store.set(ch, 'gk', { n: 2 }, 8);
      const second = await nextUpdate(sub, 'gk', { since });
      assert.deepEqual(view(build, second), { channel: ch, key: 'gk', data: { n: 2 }, version: 8, removed: false });
    });

    it('versioned namespace: the subscribe reply epoch is empty', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:epoch-');
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });
      assert.equal(sub._sharedPollEpoch, '');
      const vl = await subscribedPollSub(c, uniqueChannel('pollvl:epoch-'), { getSignature: signer(ch) });
      assert.notEqual(vl._sharedPollEpoch, '', 'while a versionless one is not (so the check above can fail)');
    });

    it('a signature that does not verify is refused and the keys dropped', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:badsig-');
      for (const k of ['k1', 'k2', 'a', 'b']) store.set(ch, k, { k }, 1);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });

      const cases = [
        ['garbage', [{ key: 'k1', version: 0 }], 'invalid-signature'],
        ["another user's", [{ key: 'k2', version: 0 }], trackSignature(ch, ['k2'], { user: 'bob' })],
        ['keys in another order', [{ key: 'b', version: 0 }, { key: 'a', version: 0 }], trackSignature(ch, ['a', 'b'])],
      ];
      for (const [what, items, signature] of cases) {
        const since = sub.rec.mark();
        sub.track(items, signature);
        const err = await trackError(sub, since);
        assert.equal(err.error.code, 103, `${what} signature: ${JSON.stringify(err.error)}`);
        for (const { key } of items) {
          const u = await nextUpdate(sub, key, { since, what: `removal of ${key}` });
          assert.equal(u.removed, true, `${what}: ${key} comes back removed`);
        }
      }
      assert.equal(sub.trackedKeys().size, 0);
      await sleep(400);
      assert.deepEqual(store.polls(ch), [], 'keys refused are never polled');
      assert.equal(sub.rec.all('update').filter((u) => !u.removed).length, 0, 'no data for keys refused');
    });

    it('the signature binds the connection user', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:user-');
      store.set(ch, 'k1', { owner: 'alice' }, 1);
      const c = await pollClient(t, build, { token: signToken({ sub: 'alice' }) });
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch, { user: 'alice' }) });

      let since = sub.rec.mark();
      sub.track([{ key: 'k1', version: 0 }], trackSignature(ch, ['k1']));
      const err = await trackError(sub, since);
      assert.equal(err.error.code, 103, 'a signature for the anonymous user is refused to alice');

      since = sub.rec.mark();
      sub.track([{ key: 'k1', version: 0 }], trackSignature(ch, ['k1'], { user: 'alice' }));
      const u = await updateWithVersion(sub, 'k1', 1, { since });
      assert.deepEqual(view(build, u).data, { owner: 'alice' });
    });

    it('an expired signature gets 109, then getSignature is asked and the data comes', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:expired-');
      store.set(ch, 'k1', { v: 1 }, 1);
      const c = await pollClient(t, build);
      const sign = signer(ch);
      const sub = await subscribedPollSub(c, ch, { getSignature: sign });

      sub.track([{ key: 'k1', version: 0 }], trackSignature(ch, ['k1'], { ttl: -60 }));
      const err = await trackError(sub);
      assert.equal(err.error.code, 109, JSON.stringify(err.error));
      const u = await updateWithVersion(sub, 'k1', 1);
      assert.deepEqual(view(build, u).data, { v: 1 });
      assert.deepEqual(sign.calls, [['k1']], 'one consolidating getSignature call');
      assert.equal(sub.trackedKeys().has('k1'), true);
    });

    it('a signature expired less than 5 s ago is still accepted', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:grace-');
      store.set(ch, 'k1', { v: 1 }, 1);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });

      sub.track([{ key: 'k1', version: 0 }], trackSignature(ch, ['k1'], { ttl: -2 }));
      const u = await updateWithVersion(sub, 'k1', 1);
      assert.deepEqual(view(build, u).data, { v: 1 });
      assert.deepEqual(sub.rec.all('error'), [], 'no 109 within the grace');
    });

    it('a signature with 6 s to live is refreshed through getSignature within 10 s', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:refresh-');
      store.set(ch, 'rk', { v: 1 }, 1);
      const c = await pollClient(t, build);
      const sign = signer(ch, { ttl: (n) => (n === 1 ? 6 : 3600) });
      const sub = await subscribedPollSub(c, ch, { getSignature: sign });

      const tracked = Date.now();
      sub.track(['rk']);
      await updateWithVersion(sub, 'rk', 1);
      assert.equal(sign.calls.length, 1);
      const target = sub._sharedPollSignatureRefreshTargetMs;
      assert.ok(target !== null && target - tracked <= 7000 && target - tracked >= 3000,
        `refresh planned ${target === null ? 'never' : `${target - tracked} ms after the track`}: the reply's ttl is about 6 s`);

      await waitUntil(() => sign.calls.length >= 2, 'the refresh getSignature call', 10000 - (Date.now() - tracked));
      assert.deepEqual(sign.calls[1], ['rk']);
      assert.ok(Date.now() - tracked >= 3000, 'not refreshed long before the signature ends');

      const since = sub.rec.mark();
      store.set(ch, 'rk', { v: 2 }, 2);
      await updateWithVersion(sub, 'rk', 2, { since });
      assert.deepEqual(sub.rec.all('error'), [], 'the refreshed signature was accepted');
    });

    it('the refresh is planned from the shortest signature lifetime tracked', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:minttl-');
      store.set(ch, 't1', { v: 1 }, 1);
      store.set(ch, 't2', { v: 2 }, 1);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });

      sub.track([{ key: 't1', version: 0 }], trackSignature(ch, ['t1'], { ttl: 3600 }));
      await updateWithVersion(sub, 't1', 1);
      const long = sub._sharedPollSignatureRefreshTargetMs;
      assert.ok(long !== null && long > Date.now() + 3000 * 1000, `refresh planned in ${long - Date.now()} ms for an hour's signature`);

      sub.track([{ key: 't2', version: 0 }], trackSignature(ch, ['t2'], { ttl: 30 }));
      await updateWithVersion(sub, 't2', 1);
      const short = sub._sharedPollSignatureRefreshTargetMs;
      assert.ok(short < Date.now() + 31 * 1000 && short > Date.now() + 20 * 1000,
        `refresh planned in ${short - Date.now()} ms for a 30 s signature`);
    });

    it('after a reconnect the cached signatures are replayed and newer versions come', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:reconnect-');
      store.set(ch, 'rk1', { v: 1 }, 1);
      const c = await pollClient(t, build);
      const sign = signer(ch);
      const sub = await subscribedPollSub(c, ch, { getSignature: sign });
      sub.track([{ key: 'rk1', version: 0 }], trackSignature(ch, ['rk1']));
      await updateWithVersion(sub, 'rk1', 1);

      let since = c.rec.mark();
      c.disconnect();
      await c.rec.waitFor('disconnected', { since });
      store.set(ch, 'rk1', { v: 2 }, 2);
      const subSince = sub.rec.mark();
      since = c.rec.mark();
      c.connect();
      await c.rec.waitFor('connected', { since });
      await sub.rec.waitFor('subscribed', { since: subSince });
      const u = await nextUpdate(sub, 'rk1', { since: subSince });
      assert.deepEqual(view(build, u), { channel: ch, key: 'rk1', data: { v: 2 }, version: 2, removed: false });

      store.set(ch, 'rk1', { v: 3 }, 3);
      await updateWithVersion(sub, 'rk1', 3, { since: subSince });
      assert.deepEqual(updatesOf(sub, 'rk1', subSince).map((x) => Number(x.version)), [2, 3], 'no repeat of version 1');
      assert.deepEqual(sign.calls, [], 'the replay reused the cached signature');
      assert.deepEqual(sub.rec.all('error'), []);
    });

    it('tracks made before subscribing go out in one replay, signed batches and getSignature together', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:early-');
      store.set(ch, 'b1', { b: 1 }, 1);
      store.set(ch, 'b2', { b: 2 }, 1);
      store.set(ch, 'b3', { b: 3 }, 1);
      const c = await pollClient(t, build);
      const sign = signer(ch);
      const sub = newPollSub(c, ch, { getSignature: sign });
      sub.track([{ key: 'b1', version: 0 }], trackSignature(ch, ['b1']));
      sub.track([{ key: 'b2', version: 0 }], trackSignature(ch, ['b2']));
      sub.track(['b3']);
      await subscribed(sub);
      const got = await Promise.all(['b1', 'b2', 'b3'].map((k) => updateWithVersion(sub, k, 1)));
      assert.deepEqual(got.map((u) => view(build, u).data), [{ b: 1 }, { b: 2 }, { b: 3 }]);
      assert.deepEqual(sign.calls, [['b3']], 'only the key without a signature was signed');
      assert.deepEqual(sub.rec.all('error'), []);
    });

    it('a replay with an inline untrack drops that key at the server', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:inline-');
      store.set(ch, 'keyA', { a: 1 }, 1);
      store.set(ch, 'keyB', { b: 1 }, 1);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });
      sub.track([{ key: 'keyA', version: 0 }, { key: 'keyB', version: 0 }], trackSignature(ch, ['keyA', 'keyB']));
      await Promise.all([updateWithVersion(sub, 'keyA', 1), updateWithVersion(sub, 'keyB', 1)]);
      sub.untrack(['keyB']);
      await sleep(200);

      const since = c.rec.mark();
      c.disconnect();
      await c.rec.waitFor('disconnected', { since });
      const subSince = sub.rec.mark();
      c.connect();
      await sub.rec.waitFor('subscribed', { since: subSince });
      await sleep(300);
      const mark = store.mark();
      store.set(ch, 'keyA', { a: 2 }, 2);
      store.set(ch, 'keyB', { b: 2 }, 2);
      await updateWithVersion(sub, 'keyA', 2, { since: subSince });
      await morePolls(ch, 'keyA');
      assert.deepEqual(updatesOf(sub, 'keyB', subSince), []);
      assert.deepEqual(store.polls(ch, { since: mark, key: 'keyB' }), [], 'keyB is not tracked at the server after the replay');
      assert.deepEqual(sub.rec.all('error'), [], 'the replay frame (batch of keyA and keyB, untrack keyB) was accepted');
    });

    it('getSignature may sign fewer keys: the others come back removed and are never polled', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:subset-');
      store.set(ch, 'allowed', { v: 1 }, 1);
      store.set(ch, 'revoked', { v: 1 }, 1);
      const c = await pollClient(t, build);
      const sign = signer(ch, { allow: (k) => k !== 'revoked' });
      const sub = await subscribedPollSub(c, ch, { getSignature: sign });

      sub.track(['allowed', 'revoked']);
      const [removal, data] = await Promise.all([nextUpdate(sub, 'revoked'), updateWithVersion(sub, 'allowed', 1)]);
      assert.equal(removal.removed, true);
      assert.equal(removal.data, null);
      assert.deepEqual(view(build, data).data, { v: 1 });
      assert.deepEqual([...sub.trackedKeys()], ['allowed']);
      await morePolls(ch, 'allowed');
      assert.deepEqual(store.polls(ch, { key: 'revoked' }), [], 'the revoked key was never tracked at the server');
      assert.deepEqual(updatesOf(sub, 'revoked').filter((u) => !u.removed), []);
    });

    it(`more than ${MAX_KEYS} keys on one connection are refused with 106`, { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:limit-');
      store.set(ch, 'k0', { first: true }, 1);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });

      const keys = Array.from({ length: MAX_KEYS + 1 }, (_, i) => `k${i}`);
      sub.track(keys.map((key) => ({ key, version: 0 })), trackSignature(ch, keys));
      const err = await trackError(sub);
      assert.equal(err.error.code, 106, JSON.stringify(err.error));
      await sleep(300);
      assert.equal(sub.trackedKeys().size, 0);
      assert.deepEqual(sub.rec.all('update').filter((u) => !u.removed), [], 'no data for a refused track');

      const since = sub.rec.mark();
      const allowed = keys.slice(0, MAX_KEYS);
      sub.track(allowed.map((key) => ({ key, version: 0 })), trackSignature(ch, allowed));
      const u = await updateWithVersion(sub, 'k0', 1, { since });
      assert.deepEqual(view(build, u).data, { first: true });
      assert.deepEqual(sub.rec.all('error', since), [], `${MAX_KEYS} keys are within the limit`);
    });

    it('a refresh backend that fails then recovers: the data comes after the recovery', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('poll:down-');
      store.set(ch, 'k1', { v: 1 }, 1);
      store.setDown(ch, true);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });

      sub.track([{ key: 'k1', version: 0 }], trackSignature(ch, ['k1']));
      await waitUntil(() => store.polls(ch, { key: 'k1' }).filter((p) => p.failed).length >= 3, 'three failed polls of k1');
      assert.deepEqual(updatesOf(sub, 'k1'), [], 'nothing while the backend fails');

      store.setDown(ch, false);
      const u = await updateWithVersion(sub, 'k1', 1);
      assert.deepEqual(view(build, u).data, { v: 1 });
      assert.deepEqual(sub.rec.all('error'), [], 'backend failures are not the client\'s errors');
    });

    it('a gRPC refresh proxy delivers data, versions and removals', { timeout: TEST_TIMEOUT }, async (t) => {
      const ch = uniqueChannel('pollgrpc:g-');
      store.set(ch, 'g1', { via: 'grpc' }, 1);
      const c = await pollClient(t, build);
      const sub = await subscribedPollSub(c, ch, { getSignature: signer(ch) });

      sub.track(['g1']);
      const u = await nextUpdate(sub, 'g1');
      assert.deepEqual(view(build, u), { channel: ch, key: 'g1', data: { via: 'grpc' }, version: 1, removed: false });
      const polls = store.polls(ch);
      assert.ok(polls.length > 0 && polls.every((p) => p.via === 'grpc'), `polls went over gRPC: ${JSON.stringify(polls)}`);

      let since = sub.rec.mark();
      store.set(ch, 'g1', { via: 'grpc', n: 2 }, 2);
      const u2 = await updateWithVersion(sub, 'g1', 2, { since });
      assert.deepEqual(view(build, u2).data, { via: 'grpc', n: 2 });
      assert.ok(store.polls(ch, { key: 'g1' }).some((p) => p.items[0].version === 1), 'the poll carried the version gyre had');

      since = sub.rec.mark();
      store.remove(ch, 'g1');
      const r = await nextUpdate(sub, 'g1', { since });
      assert.equal(r.removed, true);
    });
  });
}
