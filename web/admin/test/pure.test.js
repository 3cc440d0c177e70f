// Unit tests of the app's pure helpers: node --test (no browser needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTags, jsonError, buildParams } from '../src/pages/actions.js';
import { duration, bytes, rate } from '../src/format.js';
import { payload } from '../src/pages/channels.js';

test('parseTags reads key=value lines and skips blank ones', () => {
  assert.deepEqual(parseTags('kind=alert\n\n src = ui \nexpr=a=b'), { tags: { kind: 'alert', src: 'ui', expr: 'a=b' } });
  assert.deepEqual(parseTags('  \n'), { tags: null });
});

test('parseTags names the line without a key', () => {
  assert.equal(parseTags('a=1\nnovalue').error, 'Line 2: write key=value.');
  assert.equal(parseTags('=x').error, 'Line 1: write key=value.');
});

test('jsonError is empty for JSON and says where a bad text breaks', () => {
  assert.equal(jsonError('{"a": [1, 2]}'), '');
  assert.equal(jsonError('"text"'), '');
  const msg = jsonError('{\n  "a": 1,\n  oops\n}');
  assert.match(msg, /^Invalid JSON at line 3, column 3/);
  assert.match(jsonError('{"a":'), /^Invalid JSON/);
});

test('formats', () => {
  assert.equal(duration(59), '59s');
  assert.equal(duration(3725), '1h 2m');
  assert.equal(duration(2 * 86400 + 3600), '2d 1h');
  assert.equal(bytes(52428800), '50.0 MiB');
  assert.equal(bytes(512), '512 B');
  assert.equal(rate(3.5), '3.5/s');
  assert.equal(rate(undefined), '–');
});

test('fromInfo maps the info method to the nodes table, metrics items when there', async () => {
  const { fromInfo } = await import('../src/pages/status.js');
  const [gyre, other] = fromInfo({
    nodes: [
      { uid: 'u1', name: 'a', version: '1', uptime: 5, num_clients: 2, num_subs: 3, metrics: { items: { gyre_publish_rate: 0.5, gyre_memory_bytes: 100, gyre_broker_healthy: 0 } } },
      { uid: 'u2', name: 'b', process: { rss: 42 } },
    ],
  });
  assert.equal(gyre.id, 'u1');
  assert.equal(gyre.uptime_seconds, 5);
  assert.equal(gyre.num_subs, 3);
  assert.equal(gyre.publish_rate, 0.5);
  assert.equal(gyre.memory_bytes, 100);
  assert.equal(gyre.broker_healthy, false);
  assert.equal(other.memory_bytes, 42);
  assert.equal(other.broker_healthy, undefined);
  assert.equal(other.publish_rate, undefined);
});

test('payload shows JSON data, or binary data as base64', () => {
  assert.equal(payload({ data: { a: 1 } }), '{"a":1}');
  assert.equal(payload({ b64data: 'AAE=' }), 'binary, base64: AAE=');
});

test('buildParams takes the fields a method lists, and tags only when there are some', () => {
  const v = { channel: 'news', channels: ['a', 'b'], user: 'u1', key: 'k', data: { a: 1 }, tags: null };
  assert.deepEqual(buildParams(['channel', 'data', 'tags'], v), { channel: 'news', data: { a: 1 } });
  assert.deepEqual(buildParams(['channels', 'data', 'tags'], { ...v, tags: { x: '1' } }), { channels: ['a', 'b'], data: { a: 1 }, tags: { x: '1' } });
  assert.deepEqual(buildParams(['user', 'channel'], v), { user: 'u1', channel: 'news' });
  assert.deepEqual(buildParams(['channel', 'key'], v), { channel: 'news', key: 'k' });
});

test('consumerState tells a running consumer from one whose source is down or that stopped', async () => {
  const { consumerState, lag } = await import('../src/pages/consumers.js');
  assert.deepEqual(consumerState({ running: true, connected: true }), { label: 'Running', tone: 'ok' });
  assert.deepEqual(consumerState({ running: true, connected: false }), { label: 'Source down', tone: 'bad' });
  assert.deepEqual(consumerState({ running: false, connected: true }), { label: 'Stopped', tone: 'bad' });
  assert.equal(lag(-1), '–');
  assert.equal(lag(0), '0');
  assert.equal(lag(12345), '12,345');
});

test('event hooks: outcome tones, a proxy state from its newest record, what it carries, why', async () => {
  const { outcomeTone, queueState, carries, reason } = await import('../src/pages/hooks.js');
  assert.equal(outcomeTone('delivered'), 'ok');
  assert.equal(outcomeTone('failed'), 'warn');
  assert.equal(outcomeTone('dropped'), 'bad');
  assert.equal(outcomeTone('later'), '');

  assert.deepEqual(queueState({ recent: [] }), { label: 'No events yet', tone: '' });
  assert.deepEqual(queueState({ recent: [{ outcome: 'failed' }, { outcome: 'delivered' }] }), { label: 'Failing', tone: 'bad' });
  assert.deepEqual(queueState({ recent: [{ outcome: 'delivered' }, { outcome: 'failed' }] }), { label: 'Delivering', tone: 'ok' });
  assert.deepEqual(queueState({ recent: [{ outcome: 'dropped' }] }), { label: 'Dropping', tone: 'bad' });

  assert.equal(carries({ kinds: ['channel'], namespaces: ['', 'room'] }), 'Channel state events (channels without namespace, room).');
  assert.equal(carries({ kinds: ['channel', 'user'], namespaces: ['lobby'] }), 'Channel state events (lobby) and user status events.');
  assert.equal(carries({ kinds: ['user'], namespaces: [] }), 'User status events.');
  assert.equal(carries({}), 'No events.');

  assert.equal(reason({ outcome: 'delivered' }), '');
  assert.equal(reason({ outcome: 'failed', reason: 'status', error: 'hooks: status 503' }), 'status: hooks: status 503');
  assert.equal(reason({ outcome: 'failed', reason: 'timeout' }), 'timeout');
  assert.equal(reason({ outcome: 'dropped', reason: 'max_age' }), 'too old (event_hooks.max_age)');
  assert.equal(reason({ outcome: 'dropped', reason: 'queue_full' }), 'queue full (event_hooks.queue_max_size)');
});
