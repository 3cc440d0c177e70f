import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { signToken } from '../lib/server.js';
import { builds, newClient, newSub, connected, subscribed, subscribeFails, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

const server = useServer();

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

    it('refuses a token made for another channel', async (t) => {
      const c = newClient(build, server(), { user: 'dave' });
      t.after(() => closeAll([c]));
      await connected(c);
      const ch = uniqueChannel('private:tok-');
      const token = signToken({ sub: 'dave', channel: `${ch}-other` });
      const ctx = await subscribeFails(newSub(c, ch, { token }));
      assert.equal(ctx.code, 103, `unsubscribed: ${JSON.stringify(ctx)}`);
    });

    it('refuses a token made for another user', async (t) => {
      const c = newClient(build, server(), { user: 'dave' });
      t.after(() => closeAll([c]));
      await connected(c);
      const ch = uniqueChannel('private:tok-');
      const token = signToken({ sub: 'mallory', channel: ch });
      const ctx = await subscribeFails(newSub(c, ch, { token }));
      assert.equal(ctx.code, 103, `unsubscribed: ${JSON.stringify(ctx)}`);
    });
  });
}
