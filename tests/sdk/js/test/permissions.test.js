import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { builds, newClient, newSub, connected, subscribed, subscribeFails, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

const server = useServer();

for (const build of builds) {
  describe(`permissions (${build.name} build)`, () => {
    it('refuses a subscription in a namespace without allow_* with 103', async (t) => {
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      const ctx = await subscribeFails(newSub(c, uniqueChannel('private:')));
      assert.equal(ctx.code, 103, `unsubscribed: ${JSON.stringify(ctx)}`);
      assert.equal(c.state, 'connected', 'a refused subscription must not cost the connection');
    });

    it('refuses a publish where publishing is not allowed with 103', async (t) => {
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      // Subscribing is allowed without a namespace, publishing is not.
      const sub = newSub(c, uniqueChannel('open-'));
      await subscribed(sub);
      await assert.rejects(sub.publish(build.encode({ x: 1 })), (err) => {
        assert.equal(err.code, 103, `publish error: ${JSON.stringify(err)}`);
        return true;
      });
      // In "chat" publishing needs a subscription first.
      await assert.rejects(c.publish(uniqueChannel('chat:nosub-'), build.encode({ x: 1 })), (err) => {
        assert.equal(err.code, 103, `publish error: ${JSON.stringify(err)}`);
        return true;
      });
    });

    it('refuses a subscription in an unknown namespace with 102', async (t) => {
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      const ctx = await subscribeFails(newSub(c, 'nope:x'));
      assert.equal(ctx.code, 102, `unsubscribed: ${JSON.stringify(ctx)}`);
    });
  });
}
