import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { signToken } from '../lib/server.js';
import { builds, newClient, newSub, connected, subscribed, subscribeFails, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

const server = useServer();

// Faults of a subscription token and what the server answers (docs/tokens.md):
// a token that does not verify is refused with 103 and the connection stays; a
// well-signed token for another channel or user closes it with 3500.

for (const build of builds) {
  describe(`subscription tokens (${build.name} build)`, () => {
    it('subscribes to a private channel with a token for it and receives publications', async (t) => {
      const c = newClient(build, server(), { user: 'dave' });
      t.after(() => closeAll([c]));
      await connected(c);
      const ch = uniqueChannel('private:tok-');
      const sub = newSub(c, ch, { token: signToken({ sub: 'dave', channel: ch }) });
      await subscribed(sub);
      await server().publish(ch, { secret: true });
      const pub = await sub.rec.waitFor('publication');
      assert.deepEqual(build.decode(pub.data), { secret: true });
    });

    const refused = [
      ['badly signed', (ch) => signToken({ sub: 'dave', channel: ch }, 'not-the-server-secret-0123456789abcdef')],
      ['malformed', () => 'not-a-jwt'],
    ];
    for (const [name, token] of refused) {
      it(`unsubscribes with 103 on a ${name} token and stays connected`, async (t) => {
        const c = newClient(build, server(), { user: 'dave' });
        t.after(() => closeAll([c]));
        await connected(c);
        const ch = uniqueChannel('private:tok-');
        const ctx = await subscribeFails(newSub(c, ch, { token: token(ch) }));
        assert.equal(ctx.code, 103, `unsubscribed: ${JSON.stringify(ctx)}`);
        assert.equal(c.state, 'connected');
        // The connection serves the next subscription.
        const next = uniqueChannel('private:tok-');
        await subscribed(newSub(c, next, { token: signToken({ sub: 'dave', channel: next }) }));
        assert.equal(c.rec.all('disconnected').length, 0, 'the client was disconnected');
      });
    }

    const misused = [
      ['another channel', (ch) => signToken({ sub: 'dave', channel: `${ch}-other` })],
      ['another user', (ch) => signToken({ sub: 'mallory', channel: ch })],
    ];
    for (const [name, token] of misused) {
      it(`is disconnected with 3500 and stays away on a token made for ${name}`, async (t) => {
        const c = newClient(build, server(), { user: 'dave' });
        t.after(() => closeAll([c]));
        await connected(c);
        const ch = uniqueChannel('private:tok-');
        const since = c.rec.mark();
        newSub(c, ch, { token: token(ch) }).subscribe();
        const ctx = await c.rec.waitFor('disconnected', { since });
        assert.equal(ctx.code, 3500, `disconnect: ${JSON.stringify(ctx)}`);
        // The SDK moves to "connecting" for codes it retries; "disconnected" with
        // the client in that state means it decided not to reconnect.
        assert.equal(c.state, 'disconnected');
        assert.equal(c.rec.all('connecting', since).length, 0, 'the client reconnected');
      });
    }
  });
}
