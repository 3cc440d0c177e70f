import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { builds, bobJoins, useServer, uniqueChannel } from '../lib/sdk.js';

const server = useServer();

for (const build of builds) {
  describe(`presence and join/leave (${build.name} build)`, () => {
    it('sees the second client join, lists both, counts them and sees it leave', async (t) => {
      const ch = uniqueChannel('chat:room-');
      const { aliceConn, bobConn, subA, subB, since, join } = await bobJoins(t, build, server(), server(), ch);
      assert.equal(join.channel, ch);
      assert.equal(join.info.client, bobConn.client);

      const presence = await subA.presence();
      const clients = presence.clients;
      assert.deepEqual(
        Object.keys(clients).sort(),
        [aliceConn.client, bobConn.client].sort(),
        `presence: ${JSON.stringify(presence)}`,
      );
      assert.equal(clients[aliceConn.client].user, 'alice');
      assert.equal(clients[bobConn.client].user, 'bob');
      assert.equal(clients[bobConn.client].client, bobConn.client);

      const stats = await subA.presenceStats();
      assert.deepEqual({ numClients: stats.numClients, numUsers: stats.numUsers }, { numClients: 2, numUsers: 2 });

      subB.unsubscribe();
      const leave = await subA.rec.waitFor('leave', { since, match: (l) => l.info?.user === 'bob', what: 'leave of bob' });
      assert.equal(leave.info.client, bobConn.client);

      const after = await subA.presenceStats();
      assert.deepEqual({ numClients: after.numClients, numUsers: after.numUsers }, { numClients: 1, numUsers: 1 });
    });
  });
}
