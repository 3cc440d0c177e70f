// centrifuge-js clients connected to the gyre under test, and a way to wait
// for what they receive.

import { Centrifuge } from 'centrifuge';
import WebSocket from 'ws';

import { signToken } from './gyre.js';

export const WAIT_MS = 10000;

// Events records what an emitter (client or subscription) fires, so that a test
// can wait for an event that may already have happened.
export class Events {
  constructor(emitter, names) {
    this.seen = [];
    this.waiters = new Set();
    for (const name of names) {
      emitter.on(name, (ctx) => {
        this.seen.push({ name, ctx });
        for (const w of [...this.waiters]) w();
      });
    }
  }

  // waitFor resolves with the first event named name (or one of the names
  // given as an array) for which match is true.
  waitFor(name, match = () => true, what = name) {
    const names = [].concat(name);
    const find = () => this.seen.find((e) => names.includes(e.name) && match(e.ctx));
    return new Promise((resolve, reject) => {
      const hit = find();
      if (hit) return resolve(hit.ctx);
      const check = () => {
        const e = find();
        if (!e) return;
        done();
        resolve(e.ctx);
      };
      const timer = setTimeout(() => {
        done();
        const log = this.seen.map((e) => `${e.name} ${JSON.stringify(e.ctx)}`).join('\n  ');
        reject(new Error(`no ${what} within ${WAIT_MS} ms; seen:\n  ${log}`));
      }, WAIT_MS);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
    });
  }
}

// connect opens a client with the given connection token (by default one the
// test signs itself for user) and waits until it is connected.
export async function connect(server, { user = 'subscriber', token } = {}) {
  const client = new Centrifuge(server.wsUrl, {
    websocket: WebSocket,
    token: token ?? signToken({ sub: user }),
    minReconnectDelay: 50,
    maxReconnectDelay: 200,
  });
  const events = new Events(client, ['connected', 'connecting', 'disconnected', 'error']);
  client.connect();
  const ctx = await events.waitFor('connected');
  return { client, events, ctx };
}

// subscribe subscribes client to channel and waits until it is subscribed.
export async function subscribe(client, channel, opts = {}) {
  const sub = client.newSubscription(channel, opts);
  const events = new Events(sub, ['subscribed', 'unsubscribed', 'publication', 'error']);
  sub.subscribe();
  await events.waitFor('subscribed');
  return { sub, events };
}
