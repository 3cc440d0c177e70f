// The two builds of the centrifuge npm package and small helpers to drive them.

import { Centrifuge as JsonCentrifuge } from 'centrifuge';
import { Centrifuge as ProtobufCentrifuge } from 'centrifuge/build/protobuf';
import WebSocket from 'ws';

import { before, after } from 'node:test';

import { signToken, startServer } from './server.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// builds lists every SDK flavour a client test runs under. The protobuf build
// hands data to the application as bytes and expects bytes back.
export const builds = [
  {
    name: 'json',
    Centrifuge: JsonCentrifuge,
    encode: (v) => v,
    decode: (v) => v,
  },
  {
    name: 'protobuf',
    Centrifuge: ProtobufCentrifuge,
    encode: (v) => encoder.encode(JSON.stringify(v)),
    decode: (v) => JSON.parse(decoder.decode(v)),
  },
];

export const WAIT_MS = 5000;

// Recorder keeps every event an emitter (client or subscription) fires, so a test
// can wait for one without racing its emission.
export class Recorder {
  constructor(emitter, events) {
    this.entries = [];
    this.waiters = new Set();
    for (const name of events) {
      emitter.on(name, (ctx) => {
        this.entries.push({ name, ctx });
        for (const w of [...this.waiters]) w();
      });
    }
  }

  // mark returns a position; waitFor(..., { since }) ignores events before it.
  mark() {
    return this.entries.length;
  }

  all(name, since = 0) {
    return this.entries.slice(since).filter((e) => e.name === name).map((e) => e.ctx);
  }

  // waitFor resolves with the first event named name (or any of the names given as
  // an array) that matches, recorded at or after since.
  waitFor(name, { match = () => true, since = 0, timeoutMs = WAIT_MS, what = String(name) } = {}) {
    const names = Array.isArray(name) ? name : [name];
    const find = () => this.entries.slice(since).find((e) => names.includes(e.name) && match(e.ctx, e.name));
    return new Promise((resolve, reject) => {
      const hit = find();
      if (hit) return resolve(Array.isArray(name) ? hit : hit.ctx);
      const check = () => {
        const e = find();
        if (!e) return;
        cleanup();
        resolve(Array.isArray(name) ? e : e.ctx);
      };
      const timer = setTimeout(() => {
        cleanup();
        const seen = this.entries.map((e) => `${e.name} ${safeJSON(e.ctx)}`).join('\n  ');
        reject(new Error(`no "${what}" within ${timeoutMs} ms; events seen:\n  ${seen}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
    });
  }

  // waitCount resolves with the first n events of a name recorded after since.
  async waitCount(name, n, { since = 0, timeoutMs = WAIT_MS } = {}) {
    await this.waitFor(name, {
      since,
      timeoutMs,
      what: `${n} x ${name}`,
      match: () => this.all(name, since).length >= n,
    });
    return this.all(name, since).slice(0, n);
  }
}

function safeJSON(v) {
  try {
    return JSON.stringify(v, (k, x) => (x instanceof Uint8Array ? `<${x.length} bytes>` : x));
  } catch {
    return String(v);
  }
}

const clientEvents = ['connecting', 'connected', 'disconnected', 'error'];
const subEvents = ['subscribing', 'subscribed', 'unsubscribed', 'publication', 'join', 'leave', 'error'];

// newClient makes a client of the given build for user, with a token signed by
// the server's key unless token is given, connecting to url (default: the
// server). Reconnect delays are short so that recovery tests skip back-off.
export function newClient(build, server, { user = 'alice', token, url, ...opts } = {}) {
  const client = new build.Centrifuge(url ?? server.wsUrl, {
    websocket: WebSocket,
    token: token ?? signToken({ sub: user }),
    minReconnectDelay: 50,
    maxReconnectDelay: 500,
    timeout: WAIT_MS,
    ...opts,
  });
  client.rec = new Recorder(client, clientEvents);
  return client;
}

export function newSub(client, channel, opts = {}) {
  const sub = client.newSubscription(channel, opts);
  sub.rec = new Recorder(sub, subEvents);
  return sub;
}

// connected connects the client and waits for the connected event.
export async function connected(client) {
  const since = client.rec.mark();
  client.connect();
  return client.rec.waitFor('connected', { since });
}

// subscribed subscribes and waits for the subscribed event, failing early with the
// reason when the subscription ends unsubscribed instead.
export async function subscribed(sub) {
  const since = sub.rec.mark();
  sub.subscribe();
  const e = await sub.rec.waitFor(['subscribed', 'unsubscribed'], { since, what: `subscribed to ${sub.channel}` });
  if (e.name !== 'subscribed') {
    throw new Error(`subscription to ${sub.channel} ended unsubscribed: ${safeJSON(e.ctx)}`);
  }
  return e.ctx;
}

// subscribeFails subscribes and resolves with the unsubscribed context, failing
// when the subscription succeeds instead.
export async function subscribeFails(sub) {
  const since = sub.rec.mark();
  sub.subscribe();
  const e = await sub.rec.waitFor(['subscribed', 'unsubscribed'], { since, what: `refusal of ${sub.channel}` });
  if (e.name !== 'unsubscribed') {
    throw new Error(`subscription to ${sub.channel} succeeded, a refusal was expected: ${safeJSON(e.ctx)}`);
  }
  return e.ctx;
}

// closeAll disconnects every client given, ignoring ones already closed.
export function closeAll(clients) {
  for (const c of clients) {
    try { c.disconnect(); } catch { /* already closed */ }
  }
}

// bobJoins connects alice to serverA and bob to serverB (the same server or
// another node), subscribes alice then bob to ch, and resolves once alice's
// subscription has seen bob join. Both are closed when the test t ends.
export async function bobJoins(t, build, serverA, serverB, ch) {
  const alice = newClient(build, serverA, { user: 'alice' });
  const bob = newClient(build, serverB, { user: 'bob' });
  t.after(() => closeAll([alice, bob]));
  const aliceConn = await connected(alice);
  const bobConn = await connected(bob);
  const subA = newSub(alice, ch);
  await subscribed(subA);
  const since = subA.rec.mark();
  const subB = newSub(bob, ch);
  await subscribed(subB);
  const join = await subA.rec.waitFor('join', { since, match: (j) => j.info?.user === 'bob', what: 'join of bob' });
  return { aliceConn, bobConn, subA, subB, since, join };
}

// spyingSocket is ws that keeps every frame the server sends, so that a test
// can see what travelled on the wire under the SDK.
export function spyingSocket(frames) {
  return class extends WebSocket {
    constructor(...args) {
      super(...args);
      this.on('message', (data) => frames.push(Buffer.from(data)));
    }
  };
}

// jsonPushes returns the pushes of JSON frames, in the order they came.
export function jsonPushes(frames) {
  const out = [];
  for (const frame of frames) {
    for (const line of frame.toString('utf8').split('\n')) {
      let msg;
      try { msg = JSON.parse(line); } catch { continue; }
      if (msg.push) out.push(msg.push);
    }
  }
  return out;
}

let seq = 0;

// uniqueChannel gives each test its own channel so tests in one file never see
// each other's publications.
export function uniqueChannel(prefix) {
  seq += 1;
  return `${prefix}${process.pid}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

// useServer starts one gyre for the calling test file and stops it after the
// file's last test, whatever happened. It returns a getter for the server.
export function useServer(opts) {
  const ref = { server: null };
  before(async () => {
    ref.server = await startServer(opts);
    if (process.env.GYRE_SDK_KEEP) console.error(`gyre log: ${ref.server.dir}/gyre.log`);
  });
  after(async () => {
    if (ref.server) await ref.server.stop();
  });
  return () => ref.server;
}
