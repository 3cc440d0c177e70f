import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { builds, newClient, newSub, connected, subscribed, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

const server = useServer();

// A payload that exercises what JSON can carry: nesting, every scalar type,
// non-ASCII text and characters JSON must escape.
const payload = {
  text: 'hello',
  n: 42,
  f: -1.5,
  ok: true,
  nothing: null,
  list: [1, 'two', false, { three: 3 }],
  nested: { unicode: 'héllo ✓ 🚀 中文', escapes: 'quote " backslash \\ newline \n tab \t' },
};

for (const build of builds) {
  describe(`publications (${build.name} build)`, () => {
    it('receives a publication made through the HTTP API with its data intact', async (t) => {
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      const ch = uniqueChannel('news-');
      const sub = newSub(c, ch);
      await subscribed(sub);

      await server().publish(ch, payload);
      const pub = await sub.rec.waitFor('publication');
      assert.equal(pub.channel, ch);
      assert.deepEqual(build.decode(pub.data), payload);
    });

    it('publishes from a subscriber where allowed and receives it with the publisher info', async (t) => {
      const c = newClient(build, server(), { user: 'carol' });
      t.after(() => closeAll([c]));
      const conn = await connected(c);
      const ch = uniqueChannel('chat:pub-');
      const sub = newSub(c, ch);
      await subscribed(sub);

      await sub.publish(build.encode({ from: 'client' }));
      const pub = await sub.rec.waitFor('publication');
      assert.deepEqual(build.decode(pub.data), { from: 'client' });
      assert.equal(pub.info?.user, 'carol', `publication info: ${JSON.stringify(pub.info)}`);
      assert.equal(pub.info?.client, conn.client);
      assert.ok(pub.offset > 0, `a publication in a history channel has an offset: ${pub.offset}`);
    });
  });
}
