// Server-side subscriptions through centrifuge-js: channels from the connection
// token (recovered after a dropped connection), the user's personal channel,
// and subscriptions made with the server API.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startRelay } from '../lib/proxy.js';
import { baseConfig, signToken, startServer } from '../lib/server.js';
import { Recorder, builds, newClient, connected, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

// withNews adds "news", a recoverable namespace where clients may do nothing
// themselves, and the personal channel of each user in namespace ns ("" for
// channels without namespace).
function withNews(ns) {
  return (port) => {
    const cfg = baseConfig(port);
    cfg.client.subscribe_to_user_personal_channel = { enabled: true, personal_channel_namespace: ns };
    cfg.channel.namespaces.push(
      { name: 'news', history_size: 100, history_ttl: '300s', force_recovery: true },
      { name: 'personal', history_size: 10, history_ttl: '300s' },
    );
    return cfg;
  };
}

const server = useServer({ config: withNews('personal') });

// The client emits the events of server-side subscriptions itself.
const serverSideEvents = ['subscribing', 'subscribed', 'unsubscribed', 'publication', 'join', 'leave'];

function newServerSideClient(build, srv, opts) {
  const c = newClient(build, srv, opts);
  c.srv = new Recorder(c, serverSideEvents);
  return c;
}

const onChannel = (ch) => (ctx) => ctx.channel === ch;

for (const build of builds) {
  describe(`server-side subscriptions (${build.name} build)`, () => {
    it('recovers a token channel after the connection drops, missed publications in order', async (t) => {
      const relay = await startRelay(server().port);
      const ch = uniqueChannel('news:');
      const c = newServerSideClient(build, server(), {
        url: relay.wsUrl,
        token: signToken({ sub: uniqueChannel('reader-'), channels: [ch] }),
      });
      t.after(async () => {
        closeAll([c]);
        await relay.close();
      });

      await connected(c);
      const first = await c.srv.waitFor('subscribed', { match: onChannel(ch), what: `subscribed to ${ch}` });
      assert.equal(first.recoverable, true, `first subscribed: ${JSON.stringify(first)}`);
      const live = await server().publish(ch, { n: 0 });
      const got = await c.srv.waitFor('publication', { match: onChannel(ch), what: 'live publication' });
      assert.deepEqual([build.decode(got.data), got.offset], [{ n: 0 }, live.offset]);

      const since = c.rec.mark();
      relay.cut();
      await c.rec.waitFor('connecting', { since, what: 'connecting after the drop' });
      const missed = [];
      for (let n = 1; n <= 3; n++) {
        const res = await server().publish(ch, { n });
        assert.equal(res.epoch, live.epoch);
        missed.push(res.offset);
      }

      const srvSince = c.srv.mark();
      relay.restore();
      const again = await c.srv.waitFor('subscribed', { since: srvSince, match: onChannel(ch), what: 'resubscribed' });
      assert.equal(again.wasRecovering, true, `resubscribed: ${JSON.stringify(again)}`);
      assert.equal(again.recovered, true, `resubscribed: ${JSON.stringify(again)}`);

      // The recovered publications come with the connect reply; a marker sent
      // afterwards shows that nothing else was queued before it.
      await c.srv.waitCount('publication', 3, { since: srvSince });
      const marker = await server().publish(ch, { n: 'marker' });
      await c.srv.waitFor('publication', { since: srvSince, match: (p) => p.offset === marker.offset, what: 'marker' });
      const after = c.srv.all('publication', srvSince);
      assert.deepEqual(after.map((p) => p.channel), [ch, ch, ch, ch]);
      assert.deepEqual(after.map((p) => p.offset), [...missed, marker.offset], 'offsets: order, no duplicates');
      assert.deepEqual(after.slice(0, 3).map((p) => build.decode(p.data)), [{ n: 1 }, { n: 2 }, { n: 3 }]);
    });

    it('subscribes the connection to its personal channel', async (t) => {
      const user = uniqueChannel('owner-');
      const personal = `personal:#${user}`;
      const c = newServerSideClient(build, server(), { user });
      t.after(() => closeAll([c]));

      await connected(c);
      await c.srv.waitFor('subscribed', { match: onChannel(personal), what: `subscribed to ${personal}` });
      const res = await server().publish(personal, { to: user });
      const pub = await c.srv.waitFor('publication', { match: onChannel(personal), what: 'personal publication' });
      assert.deepEqual([build.decode(pub.data), pub.offset], [{ to: user }, res.offset]);
    });

    it('follows subscribe and unsubscribe of its user through the API', async (t) => {
      const user = uniqueChannel('api-user-');
      const ch = uniqueChannel('news:api-');
      const c = newServerSideClient(build, server(), { user });
      t.after(() => closeAll([c]));
      await connected(c);

      const since = c.srv.mark();
      await server().api('subscribe', { user, channel: ch });
      const sub = await c.srv.waitFor('subscribed', { since, match: onChannel(ch), what: `subscribed to ${ch}` });
      assert.equal(sub.recoverable, true, `subscribed: ${JSON.stringify(sub)}`);
      const res = await server().publish(ch, { via: 'api' });
      const pub = await c.srv.waitFor('publication', { since, match: onChannel(ch), what: 'publication' });
      assert.deepEqual([build.decode(pub.data), pub.offset], [{ via: 'api' }, res.offset]);

      await server().api('unsubscribe', { user, channel: ch });
      await c.srv.waitFor('unsubscribed', { since, match: onChannel(ch), what: `unsubscribed from ${ch}` });
      const { channels } = await server().api('channels', { pattern: ch });
      assert.deepEqual(channels, {}, `no subscriber left in ${ch}`);
    });
  });
}

// The personal channel of a configuration without a personal namespace is
// "#user", a channel without namespace.
describe('personal channel without namespace', () => {
  let srv;
  before(async () => {
    srv = await startServer({ config: withNews('') });
  });
  after(async () => {
    if (srv) await srv.stop();
  });

  for (const build of builds) {
    it(`subscribes to #user (${build.name} build)`, async (t) => {
      const user = uniqueChannel('bare-');
      const c = newServerSideClient(build, srv, { user });
      t.after(() => closeAll([c]));
      await connected(c);
      await c.srv.waitFor('subscribed', { match: onChannel(`#${user}`), what: `subscribed to #${user}` });
      await srv.publish(`#${user}`, { bare: true });
      const pub = await c.srv.waitFor('publication', { match: onChannel(`#${user}`), what: 'publication' });
      assert.deepEqual(build.decode(pub.data), { bare: true });
    });
  }
});
