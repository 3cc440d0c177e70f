// Map subscriptions with centrifuge-js 5.8 (JSON and protobuf builds), on the
// memory engine and on Redis (two nodes: clients on one, the API on the
// other): the state synced in pages, updates and removals, a state that
// changes while it is being paged, recovery after a reconnect in each mode,
// keys that expire, and writes from clients where allowed and where not.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { engines, engineSkip, startNodes } from '../lib/engines.js';
import { MapView, mapsConfig, modes, publishKeys, stateOf } from '../lib/maps.js';
import { builds, newClient, newSub, connected, subscribeFails, closeAll, uniqueChannel, WAIT_MS } from '../lib/sdk.js';

for (const engine of engines) {
  describe(`map subscriptions on the ${engine} engine`, { skip: engineSkip(engine) }, () => {
    let nodes;
    before(async () => {
      nodes = await startNodes(engine, (port) => mapsConfig(port));
    });
    after(async () => {
      if (nodes) await nodes.stop();
    });

    for (const build of builds) {
      describe(`${build.name} build`, () => {
        it('syncs a state of 250 keys in pages of 100, then gets updates and removals', async (t) => {
          const ch = uniqueChannel('map_persistent:doc-');
          await publishKeys(nodes.pub, ch, 250);
          const c = newClient(build, nodes.sub);
          t.after(() => closeAll([c]));
          await connected(c);

          const view = new MapView(c, ch, build, { pageSize: 100 });
          await view.subscribe();
          await view.waitUntil((v) => v.syncs === 1, 'sync');
          assert.deepEqual(view.values(), await stateOf(nodes.pub, ch));
          assert.equal(view.entries.size, 250);

          await nodes.pub.api('map_publish', { channel: ch, key: 'k00007', data: { i: 'seven' } });
          await nodes.pub.api('map_remove', { channel: ch, key: 'k00008' });
          await nodes.pub.api('map_publish', { channel: ch, key: 'new', data: { i: 'new' } });
          await view.waitUntil((v) => v.entries.has('new'), 'the new key');
          const updates = view.rec.all('update');
          assert.deepEqual(updates.map((u) => [u.key, !!u.removed]), [['k00007', false], ['k00008', true], ['new', false]]);
          assert.deepEqual(build.decode(updates[0].data), { i: 'seven' });
          assert.deepEqual(view.values(), await stateOf(nodes.pub, ch));
        });

        it('ends in the server\'s state when keys change while the state is paged', async (t) => {
          const ch = uniqueChannel('map_recoverable:busy-');
          await publishKeys(nodes.pub, ch, 300);
          const c = newClient(build, nodes.sub);
          t.after(() => closeAll([c]));
          await connected(c);

          const view = new MapView(c, ch, build, { pageSize: 100 });
          let writing = true;
          const writer = (async () => {
            for (let i = 0; writing; i++) {
              const key = `k${String((i * 37) % 300).padStart(5, '0')}`;
              if (i % 5 === 4) await nodes.pub.api('map_remove', { channel: ch, key });
              else await nodes.pub.api('map_publish', { channel: ch, key, data: { i: `w${i}` } });
            }
          })();
          await view.subscribe();
          await new Promise((r) => setTimeout(r, 200));
          writing = false;
          await writer;
          const marker = await nodes.pub.api('map_publish', { channel: ch, key: 'marker', data: { i: 'end' } });
          await view.waitUntil((v) => v.entries.has('marker'), 'the marker');
          assert.deepEqual(view.values(), await stateOf(nodes.pub, ch));
          assert.ok(marker.offset > 300, `offset after 300 writes and more: ${JSON.stringify(marker)}`);
        });

        for (const mode of modes) {
          it(`after a reconnect ${mode === 'ephemeral' ? 'syncs the state again' : 'catches up from the stream'} (${mode})`, async (t) => {
            const ch = uniqueChannel(`map_${mode}:rec-`);
            await publishKeys(nodes.pub, ch, 5);
            const c = newClient(build, nodes.sub);
            t.after(() => closeAll([c]));
            await connected(c);
            const view = new MapView(c, ch, build);
            await view.subscribe();
            await view.waitUntil((v) => v.syncs === 1 && v.entries.size === 5, 'first sync');

            c.disconnect();
            await nodes.pub.api('map_publish', { channel: ch, key: 'k00001', data: { i: 'changed' } });
            await nodes.pub.api('map_remove', { channel: ch, key: 'k00002' });
            await nodes.pub.api('map_publish', { channel: ch, key: 'added', data: { i: 'added' } });

            const since = view.rec.mark();
            c.connect();
            const ctx = await view.rec.waitFor('subscribed', { since, what: 'subscribed again' });
            await view.waitUntil((v) => v.entries.has('added') && !v.entries.has('k00002'), 'the missed changes');
            assert.deepEqual(view.values(), await stateOf(nodes.pub, ch));
            if (mode === 'ephemeral') {
              assert.equal(view.syncs, 2, 'an ephemeral map syncs the whole state again');
              assert.ok(!ctx.recovered, `subscribed: ${JSON.stringify(ctx)}`);
            } else {
              assert.equal(ctx.recovered, true, `subscribed: ${JSON.stringify(ctx)}`);
              assert.equal(view.syncs, 1, 'a recovered map gets updates, no new sync');
              const got = view.rec.all('update', since).map((u) => [u.key, !!u.removed]);
              assert.deepEqual(got, [['k00001', false], ['k00002', true], ['added', false]]);
            }
          });
        }

        it('keeps each key\'s value whole under fossil delta, key by key', async (t) => {
          const ch = uniqueChannel('rich:delta-');
          const big = (tag) => ({ text: `${tag} ${'lorem ipsum dolor sit amet '.repeat(40)}`, tag });
          await nodes.pub.api('map_publish', { channel: ch, key: 'a', data: big('a0'), delta: true });
          await nodes.pub.api('map_publish', { channel: ch, key: 'b', data: big('b0'), delta: true });
          const c = newClient(build, nodes.sub);
          t.after(() => closeAll([c]));
          await connected(c);
          const view = new MapView(c, ch, build, { delta: 'fossil' });
          const ctx = await view.subscribe();
          assert.equal(ctx.delta ?? true, true);
          for (let i = 1; i <= 4; i++) {
            for (const key of ['a', 'b']) {
              await nodes.pub.api('map_publish', { channel: ch, key, data: big(`${key}${i}`), delta: true });
            }
          }
          await nodes.pub.api('map_remove', { channel: ch, key: 'a' });
          await nodes.pub.api('map_publish', { channel: ch, key: 'a', data: big('a5'), delta: true });
          await view.waitUntil((v) => v.entries.has('a') && v.values().a.tag === 'a5', 'the last value of a');
          assert.deepEqual(view.values(), { a: big('a5'), b: big('b4') });
          assert.deepEqual(view.values(), await stateOf(nodes.pub, ch));
        });

        it('filters the state and the updates by tags', async (t) => {
          const ch = uniqueChannel('rich:tags-');
          await nodes.pub.api('map_publish', { channel: ch, key: 'red1', data: { c: 'red' }, tags: { color: 'red' } });
          await nodes.pub.api('map_publish', { channel: ch, key: 'blue1', data: { c: 'blue' }, tags: { color: 'blue' } });
          const c = newClient(build, nodes.sub);
          t.after(() => closeAll([c]));
          await connected(c);
          const view = new MapView(c, ch, build, { tagsFilter: { key: 'color', cmp: 'eq', val: 'red' } });
          await view.subscribe();
          await view.waitUntil((v) => v.syncs === 1, 'sync');
          assert.deepEqual(view.values(), { red1: { c: 'red' } });
          await nodes.pub.api('map_publish', { channel: ch, key: 'blue2', data: { c: 'blue' }, tags: { color: 'blue' } });
          await nodes.pub.api('map_publish', { channel: ch, key: 'red2', data: { c: 'red' }, tags: { color: 'red' } });
          await view.waitUntil((v) => v.entries.has('red2'), 'red2');
          assert.deepEqual(view.values(), { red1: { c: 'red' }, red2: { c: 'red' } });
        });

        it('tells subscribers when a key expires', async (t) => {
          const ch = uniqueChannel('short:ttl-');
          const c = newClient(build, nodes.sub);
          t.after(() => closeAll([c]));
          await connected(c);
          const view = new MapView(c, ch, build);
          await view.subscribe();
          await nodes.pub.api('map_publish', { channel: ch, key: 'brief', data: { i: 1 } });
          await view.waitUntil((v) => v.entries.has('brief'), 'the key');
          await view.rec.waitFor('update', { match: (u) => u.key === 'brief' && u.removed, timeoutMs: 4 * WAIT_MS, what: 'expiry of the key' });
          assert.deepEqual(await stateOf(nodes.pub, ch), {});
        });

        it('lets a subscriber publish and remove keys where the namespace allows it', async (t) => {
          const ch = uniqueChannel('map_persistent:shared-');
          const alice = newClient(build, nodes.sub, { user: 'alice' });
          const bob = newClient(build, nodes.sub, { user: 'bob' });
          t.after(() => closeAll([alice, bob]));
          await connected(alice);
          await connected(bob);
          const av = new MapView(alice, ch, build);
          const bv = new MapView(bob, ch, build);
          await av.subscribe();
          await bv.subscribe();

          await av.sub.publish('cursor-alice', build.encode({ x: 1, y: 2 }));
          await bv.waitUntil((v) => v.entries.has('cursor-alice'), 'alice\'s key at bob');
          assert.deepEqual(bv.values(), { 'cursor-alice': { x: 1, y: 2 } });
          assert.equal(bv.rec.all('update')[0].info?.user, 'alice', 'the update names its writer');
          await av.sub.remove('cursor-alice');
          await bv.waitUntil((v) => !v.entries.has('cursor-alice'), 'the removal at bob');
          assert.deepEqual(await stateOf(nodes.pub, ch), {});
        });

        it('refuses client writes where the namespace does not allow them, leaving the map unchanged', async (t) => {
          const ch = uniqueChannel('ro:doc-');
          await nodes.pub.api('map_publish', { channel: ch, key: 'a', data: { i: 1 } });
          const c = newClient(build, nodes.sub);
          t.after(() => closeAll([c]));
          await connected(c);
          const view = new MapView(c, ch, build);
          await view.subscribe();
          await assert.rejects(view.sub.publish('a', build.encode({ i: 2 })), (e) => e.code === 103);
          await assert.rejects(view.sub.remove('a'), (e) => e.code === 103);
          assert.deepEqual(await stateOf(nodes.pub, ch), { a: { i: 1 } });
        });

        it('refuses a map subscription to a stream namespace and a stream subscription to a map namespace', async (t) => {
          const c = newClient(build, nodes.sub);
          t.after(() => closeAll([c]));
          await connected(c);
          const wrong = new MapView(c, uniqueChannel('chat:stream-'), build);
          wrong.sub.subscribe();
          const un = await wrong.rec.waitFor(['subscribed', 'unsubscribed'], { what: 'refusal of the map subscription' });
          assert.equal(un.name, 'unsubscribed', `map subscribe to a stream namespace: ${JSON.stringify(un.ctx)}`);
          assert.equal(un.ctx.code, 107, `map subscribe to a stream namespace: ${JSON.stringify(un.ctx)}`);

          const plain = await subscribeFails(newSub(c, uniqueChannel('map_persistent:doc-')));
          assert.equal(plain.code, 107, `stream subscribe to a map namespace: ${JSON.stringify(plain)}`);
        });
      });
    }
  });
}
