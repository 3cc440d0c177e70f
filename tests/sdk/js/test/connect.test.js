import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { signToken } from '../lib/server.js';
import { builds, newClient, connected, closeAll, useServer } from '../lib/sdk.js';

const server = useServer();

for (const build of builds) {
  describe(`connect (${build.name} build)`, () => {
    it('connects with a valid token and gets a client id', async (t) => {
      const c = newClient(build, server(), { user: 'alice' });
      t.after(() => closeAll([c]));
      const ctx = await connected(c);
      assert.equal(typeof ctx.client, 'string', `client id missing in connected event: ${JSON.stringify(ctx)}`);
      assert.ok(ctx.client.length > 0, 'client id is empty');
      assert.equal(ctx.transport, 'websocket');
      assert.equal(c.state, 'connected');
    });

    it('is disconnected with 3500 and stays away when the token has the wrong key', async (t) => {
      const token = signToken({ sub: 'alice' }, 'not-the-server-secret-0123456789abcdef');
      const c = newClient(build, server(), { token });
      t.after(() => closeAll([c]));
      c.connect();
      const ctx = await c.rec.waitFor('disconnected');
      assert.equal(ctx.code, 3500, `disconnect code: ${JSON.stringify(ctx)}`);
      // The SDK moves to "connecting" for codes it retries; "disconnected" with the
      // client in that state means it decided not to reconnect.
      assert.equal(c.state, 'disconnected');
      assert.equal(c.rec.all('connected').length, 0, 'a client with a bad token got connected');
    });

    it('reconnects with a fresh token when the refresh was handed an expired one', async (t) => {
      const now = () => Math.floor(Date.now() / 1000);
      // The first token fetched is already expired, the next ones are good.
      let fetched = 0;
      const getToken = async () => {
        fetched += 1;
        return fetched === 1 ? signToken({ sub: 'alice', exp: now() - 60 }) : signToken({ sub: 'alice' });
      };
      const c = newClient(build, server(), { token: signToken({ sub: 'alice', exp: now() + 2 }), getToken });
      t.after(() => closeAll([c]));
      await connected(c);
      const since = c.rec.mark();
      // Refreshing with the expired token closes the connection with 3005, which the
      // SDK retries; connect then answers 109 and the SDK fetches a good token.
      const reconnecting = await c.rec.waitFor('connecting', { since, timeoutMs: 8000 });
      assert.equal(reconnecting.code, 3005, `connecting: ${JSON.stringify(reconnecting)}`);
      await c.rec.waitFor('connected', { since, timeoutMs: 8000 });
      assert.equal(c.state, 'connected');
      assert.equal(c.rec.all('disconnected', since).length, 0, 'the client gave up');
    });
  });
}
