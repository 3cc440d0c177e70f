// Shared-poll subscriptions through centrifuge-js: the server configuration,
// track signatures, and a refresh backend (HTTP through lib/backend.js, and
// gRPC) that answers gyre's polls from items a test sets per channel.

import { createHash, createHmac } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

import { httpReply } from './backend.js';
import { baseConfig } from './server.js';
import { Recorder } from './sdk.js';

export const POLL_SECRET = 'test-poll-secret';
export const MAX_KEYS = 100;

// pollConfig is the base configuration plus the shared-poll secret, the
// refresh proxies and three shared-poll namespaces: "poll" (versioned) and
// "pollvl" (versionless, no mode given) poll the HTTP backend at refreshUrl,
// "pollgrpc" (versioned) the gRPC backend at grpcAddr. Clients connect
// without a token (user ""), as centrifuge-js's own suite does.
export function pollConfig(port, { refreshUrl, grpcAddr }) {
  const cfg = baseConfig(port);
  cfg.client.insecure = true;
  cfg.shared_poll = { hmac_secret_key: POLL_SECRET };
  cfg.proxies = [
    { name: 'poll_backend', endpoint: `${refreshUrl}/refresh`, timeout: '5s' },
    { name: 'poll_grpc', endpoint: `grpc://${grpcAddr}`, timeout: '5s' },
  ];
  const ns = (name, proxy, mode) => ({
    name,
    subscription_type: 'shared_poll',
    allow_subscribe_for_client: true,
    allow_subscribe_for_anonymous: true,
    shared_poll: {
      proxy_name: proxy,
      ...(mode ? { mode } : {}),
      refresh_interval: '200ms',
      refresh_batch_size: 100,
      max_keys_per_connection: MAX_KEYS,
    },
  });
  cfg.channel.namespaces.push(
    ns('poll', 'poll_backend', 'versioned'),
    ns('pollvl', 'poll_backend'),
    ns('pollgrpc', 'poll_grpc', 'versioned'),
  );
  return cfg;
}

// trackSignature signs keys (in their order) for user on channel, valid
// from now for ttl seconds (a negative ttl gives one already expired):
// "iat:exp:hex(HMAC-SHA256(secret, iat NUL exp NUL user NUL channel NUL
// hex(SHA-256(keys joined by NUL))))".
export function trackSignature(channel, keys, { user = '', ttl = 3600, secret = POLL_SECRET } = {}) {
  const iat = Math.floor(Date.now() / 1000);
  const exp = iat + ttl;
  const keysHash = createHash('sha256').update(keys.join('\0')).digest('hex');
  const payload = `${iat}\0${exp}\0${user}\0${channel}\0${keysHash}`;
  return `${iat}:${exp}:${createHmac('sha256', secret).update(payload).digest('hex')}`;
}

// signer is a getSignature callback for channel. It keeps the keys of every
// call in fn.calls. allow(key) picks the keys it signs (the others count as
// revoked); ttl(n) gives the lifetime of the n-th call's signature (from 1).
export function signer(channel, { user = '', ttl = () => 3600, allow = () => true } = {}) {
  const fn = async (ctx) => {
    fn.calls.push([...ctx.keys]);
    const keys = ctx.keys.filter(allow);
    return { keys, signature: trackSignature(channel, keys, { user, ttl: ttl(fn.calls.length) }) };
  };
  fn.calls = [];
  return fn;
}

// PollStore is what the refresh backends know, per channel: each key's data
// and version, and whether it is removed. Like centrifuge-js's mock, it
// answers every poll with every known key asked for, whatever version the
// server has, so filtering by version is the server's job. A channel set
// down fails its polls (HTTP 500, gRPC UNAVAILABLE). Every poll is kept in
// requests, in order.
export class PollStore {
  constructor() {
    this.channels = new Map();
    this.requests = [];
  }

  chan(channel) {
    let c = this.channels.get(channel);
    if (!c) {
      c = { items: new Map(), down: false };
      this.channels.set(channel, c);
    }
    return c;
  }

  set(channel, key, data, version = 0) {
    this.chan(channel).items.set(key, { data, version });
  }

  remove(channel, key) {
    const item = this.chan(channel).items.get(key);
    this.chan(channel).items.set(key, { ...item, removed: true });
  }

  setDown(channel, down) {
    this.chan(channel).down = down;
  }

  mark() {
    return this.requests.length;
  }

  // polls lists the polls of channel since mark, each {via, channel, items,
  // failed}; with key, only those that asked for it.
  polls(channel, { since = 0, key } = {}) {
    return this.requests
      .slice(since)
      .filter((r) => r.channel === channel && (key === undefined || r.items.some((i) => i.key === key)));
  }

  // answer records the poll and returns the items to send back, or null when
  // the channel is down.
  answer(via, req) {
    const c = this.chan(req.channel);
    const items = (req.items ?? []).map((i) => ({ key: i.key, version: Number(i.version ?? 0) }));
    this.requests.push({ via, channel: req.channel, items, failed: c.down });
    if (c.down) return null;
    const out = [];
    for (const { key } of items) {
      const item = c.items.get(key);
      if (!item) continue;
      out.push({ key, data: item.data, version: item.version, ...(item.removed ? { removed: true } : {}) });
    }
    return out;
  }

  // httpAnswer is the answer function for lib/backend.js (hook "refresh").
  httpAnswer() {
    return (hook, req) => {
      if (hook !== 'refresh') return null;
      const items = this.answer('http', req);
      if (!items) return httpReply(500, { error: 'backend down' });
      return { result: { items } };
    };
  }
}

const protoPath = join(dirname(fileURLToPath(import.meta.url)), 'shared_poll_proxy.proto');

// startGrpcPollBackend serves CentrifugoProxy.SharedPollRefresh from store on
// a random loopback port; data goes out as the bytes of its JSON.
export async function startGrpcPollBackend(store) {
  const def = protoLoader.loadSync(protoPath, { keepCase: true, longs: Number, defaults: true });
  const pkg = grpc.loadPackageDefinition(def);
  const server = new grpc.Server();
  server.addService(pkg.centrifugal.centrifugo.proxy.CentrifugoProxy.service, {
    SharedPollRefresh(call, done) {
      const items = store.answer('grpc', call.request);
      if (!items) {
        done({ code: grpc.status.UNAVAILABLE, details: 'backend down' });
        return;
      }
      done(null, {
        result: {
          items: items.map((i) => ({
            key: i.key,
            data: Buffer.from(JSON.stringify(i.data ?? null)),
            version: i.version,
            removed: Boolean(i.removed),
          })),
        },
      });
    },
  });
  const port = await new Promise((res, rej) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? rej(err) : res(p)));
  });
  return { addr: `127.0.0.1:${port}`, close: () => server.forceShutdown() };
}

export const pollEvents = ['subscribing', 'subscribed', 'unsubscribed', 'publication', 'update', 'error'];

// newPollSub makes a shared-poll subscription whose events are recorded in
// sub.rec.
export function newPollSub(client, channel, opts = {}) {
  const sub = client.newSharedPollSubscription(channel, opts);
  sub.rec = new Recorder(sub, pollEvents);
  return sub;
}
