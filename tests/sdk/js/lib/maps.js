// Map subscriptions through centrifuge-js: a configuration with a namespace
// per map mode, and helpers that follow a MapSubscription's sync and update
// events into the state the application would hold.

import assert from 'node:assert/strict';

import { baseConfig } from './server.js';
import { Recorder, WAIT_MS } from './sdk.js';

export const modes = ['ephemeral', 'recoverable', 'persistent'];

// mapNamespace is a map namespace of the mode; writes from subscribed clients
// are allowed.
function mapNamespace(mode, extra = {}) {
  const map = {
    mode,
    allow_publish_for_subscriber: true,
    allow_remove_for_subscriber: true,
    ...extra,
  };
  if (mode !== 'persistent') map.key_ttl = '300s';
  return { name: `map_${mode}`, subscription_type: 'map', allow_subscribe_for_client: true, map };
}

// mapsConfig adds to the base configuration a namespace per mode
// ("map_<mode>:..."), "short:" whose keys live two seconds, "ro:" that clients
// may read and not write, "rich:" with fossil delta and tag filters, "room:" (a stream namespace) whose subscribers are
// listed in "clients:room:..." and "users:room:...", and "guarded:" whose
// client writes go through the map publish and remove proxies at proxyUrl.
export function mapsConfig(port, { proxyUrl } = {}) {
  const cfg = baseConfig(port);
  const ns = cfg.channel.namespaces;
  for (const mode of modes) ns.push(mapNamespace(mode));
  ns.push({
    name: 'short',
    subscription_type: 'map',
    allow_subscribe_for_client: true,
    map: { mode: 'recoverable', key_ttl: '2s', allow_publish_for_subscriber: true },
  });
  ns.push({ name: 'ro', subscription_type: 'map', allow_subscribe_for_client: true, map: { mode: 'persistent' } });
  ns.push({
    name: 'rich',
    subscription_type: 'map',
    allow_subscribe_for_client: true,
    allowed_delta_types: ['fossil'],
    allow_tags_filter: true,
    map: { mode: 'recoverable', key_ttl: '300s' },
  });
  ns.push({
    name: 'room',
    allow_subscribe_for_client: true,
    map_clients_presence_channel_prefix: 'clients:',
    map_users_presence_channel_prefix: 'users:',
  });
  ns.push({ name: 'clients', subscription_type: 'map_clients', allow_subscribe_for_client: true });
  ns.push({ name: 'users', subscription_type: 'map_users', allow_subscribe_for_client: true });
  if (proxyUrl) {
    cfg.channel.proxy = {
      map_publish: { endpoint: `${proxyUrl}/map_publish`, timeout: '3s' },
      map_remove: { endpoint: `${proxyUrl}/map_remove`, timeout: '3s' },
    };
    ns.push({
      name: 'guarded',
      subscription_type: 'map',
      allow_subscribe_for_client: true,
      map: { mode: 'persistent', publish_proxy_enabled: true, remove_proxy_enabled: true },
    });
  }
  return cfg;
}

const mapEvents = ['subscribing', 'subscribed', 'unsubscribed', 'sync', 'update', 'publication', 'error'];

// MapView is what an application builds from a MapSubscription: the state
// from each sync, then every update applied by key.
export class MapView {
  constructor(client, channel, build, { kind = 'map', ...opts } = {}) {
    const make = {
      map: 'newMapSubscription',
      clients: 'newMapClientsSubscription',
      users: 'newMapUsersSubscription',
    }[kind];
    this.build = build;
    this.sub = client[make](channel, opts);
    this.entries = new Map();
    this.syncs = 0;
    this.sub.on('sync', (ctx) => {
      this.syncs += 1;
      this.entries = new Map();
      for (const e of ctx.entries) this.entries.set(e.key, e);
    });
    this.sub.on('update', (e) => {
      if (e.removed) this.entries.delete(e.key);
      else this.entries.set(e.key, e);
    });
    // After the handlers above, so that a waiter sees the view with the
    // event applied.
    this.rec = new Recorder(this.sub, mapEvents);
  }

  // subscribe subscribes and waits until subscribed (the sync comes with it
  // unless the subscription recovered).
  async subscribe() {
    const since = this.rec.mark();
    this.sub.subscribe();
    const e = await this.rec.waitFor(['subscribed', 'unsubscribed'], { since, timeoutMs: 3 * WAIT_MS, what: `subscribed to ${this.sub.channel}` });
    assert.equal(e.name, 'subscribed', `map subscribe of ${this.sub.channel}: ${JSON.stringify(e.ctx)}`);
    return e.ctx;
  }

  // values maps each key to its decoded value.
  values() {
    const out = {};
    for (const [k, e] of [...this.entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      out[k] = e.data === undefined || e.data === null || (e.data.length === 0 && typeof e.data !== 'object')
        ? null
        : this.build.decode(e.data);
    }
    return out;
  }

  // waitUntil waits for the view to satisfy cond, checked after every event.
  async waitUntil(cond, what, timeoutMs = WAIT_MS) {
    await this.rec.waitFor(['sync', 'update', 'subscribed'], { match: () => cond(this), what, timeoutMs });
  }
}

// stateOf reads a map channel's whole state through the server API, as
// {key: value}.
export async function stateOf(server, channel) {
  const out = {};
  let cursor = '';
  for (;;) {
    const res = await server.api('map_read_state', { channel, cursor, limit: 1000 });
    for (const e of res.entries ?? []) out[e.key] = e.data ?? null;
    cursor = res.cursor ?? '';
    if (!cursor) break;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

// publishKeys writes keys prefix0..prefix(n-1) with {i} through the API.
export async function publishKeys(server, channel, n, prefix = 'k') {
  const results = [];
  for (let i = 0; i < n; i++) {
    results.push(await server.api('map_publish', { channel, key: `${prefix}${String(i).padStart(5, '0')}`, data: { i } }));
  }
  return results;
}
