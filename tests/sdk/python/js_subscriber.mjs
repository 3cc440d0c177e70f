// Subscribes one centrifuge-js client (JSON or protobuf build) to one channel
// and reports on stdout, one JSON object a line: {"event":"subscribed"} once
// subscribed, then {"event":"publication",...} for each publication, decoded.
// It exits 0 after COUNT publications, or 1 with {"event":"error"} when the
// client fails or nothing more arrives within TIMEOUT_MS.
//
// Driven by test_cent_js.py; the SDK comes from tests/sdk/js (npm ci there).
//
//   GYRE_WS_URL=ws://... GYRE_TOKEN=<JWT> GYRE_CHANNEL=chat:x GYRE_BUILD=json|protobuf \
//     GYRE_COUNT=1 node js_subscriber.mjs

import { builds, newClient, newSub } from '../js/lib/sdk.js';

const env = process.env;
const build = builds.find((b) => b.name === env.GYRE_BUILD);
const count = Number(env.GYRE_COUNT || '1');
const timeoutMs = Number(env.GYRE_TIMEOUT_MS || '10000');

function report(obj) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

function fail(message) {
  report({ event: 'error', message });
  process.exit(1);
}

if (!build) fail(`GYRE_BUILD must be one of ${builds.map((b) => b.name)}, not ${env.GYRE_BUILD}`);

let timer = setTimeout(() => fail(`nothing within ${timeoutMs} ms`), timeoutMs);
const rearm = () => {
  clearTimeout(timer);
  timer = setTimeout(() => fail(`nothing more within ${timeoutMs} ms`), timeoutMs);
};

const client = newClient(build, null, { url: env.GYRE_WS_URL, token: env.GYRE_TOKEN });
client.on('error', (ctx) => fail(`client error: ${JSON.stringify(ctx.error)}`));
client.on('disconnected', (ctx) => fail(`disconnected: ${ctx.code} ${ctx.reason}`));

const sub = newSub(client, env.GYRE_CHANNEL);
let seen = 0;
sub.on('subscribed', (ctx) => {
  rearm();
  report({ event: 'subscribed', channel: ctx.channel, recoverable: ctx.recoverable });
});
sub.on('unsubscribed', (ctx) => fail(`unsubscribed: ${ctx.code} ${ctx.reason}`));
sub.on('publication', (ctx) => {
  rearm();
  report({ event: 'publication', channel: ctx.channel, data: build.decode(ctx.data), offset: ctx.offset, tags: ctx.tags ?? {} });
  seen += 1;
  if (seen === count) {
    clearTimeout(timer);
    client.removeAllListeners('disconnected');
    client.disconnect();
    process.exitCode = 0;
  }
});

sub.subscribe();
client.connect();
