import { describe, it } from 'node:test';

import { startRelay } from '../lib/proxy.js';
import { expectRecovered, publishMissed, recoversAfterDisconnect, subscribeWithLive } from '../lib/recovery.js';
import { builds, newClient, connected, closeAll, useServer } from '../lib/sdk.js';

const server = useServer();

for (const build of builds) {
  describe(`recovery (${build.name} build)`, () => {
    it('recovers the publications missed while disconnected, in offset order, once each', async (t) => {
      const c = newClient(build, server());
      t.after(() => closeAll([c]));
      await connected(c);
      const state = await subscribeWithLive(server(), c);
      await recoversAfterDisconnect(build, server(), c, state);
    });

    it('recovers after the network drops the connection', async (t) => {
      const relay = await startRelay(server().port);
      const c = newClient(build, server(), { url: relay.wsUrl });
      t.after(async () => {
        closeAll([c]);
        await relay.close();
      });
      await connected(c);
      const state = await subscribeWithLive(server(), c);

      const since = c.rec.mark();
      relay.cut();
      await c.rec.waitFor('connecting', { since, what: 'connecting after the drop' });
      const missed = await publishMissed(server(), state);

      const subSince = state.sub.rec.mark();
      relay.restore();
      await expectRecovered(build, server(), state, subSince, missed);
    });
  });
}
