// Starts a real gyre server process for one test file and talks to its HTTP API.
//
// The binary comes from GYRE_BIN (scripts/sdk-test builds it once); without it the
// helper builds one from the repository so a single file can be run by hand.

import { spawn, execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HMAC_SECRET = 'gyre-sdk-test-secret-0123456789abcdef';
export const API_KEY = 'gyre-sdk-test-apikey';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');

// Every live server, so that an abrupt exit of the test process still kills them.
const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
});

// baseConfig is the server configuration the scenarios rely on: a history
// namespace with presence for recovery and join/leave, and a "private" namespace
// where nothing is allowed without a subscription token.
export function baseConfig(port) {
  return {
    http_server: { port },
    log: { level: 'info' },
    client: { token: { hmac_secret_key: HMAC_SECRET }, allowed_origins: ['*'] },
    http_api: { key: API_KEY },
    health: { enabled: true },
    channel: {
      without_namespace: { allow_subscribe_for_client: true },
      namespaces: [
        {
          name: 'chat',
          presence: true,
          join_leave: true,
          force_push_join_leave: true,
          history_size: 100,
          history_ttl: '300s',
          force_recovery: true,
          allow_subscribe_for_client: true,
          allow_presence_for_subscriber: true,
          allow_history_for_subscriber: true,
          allow_publish_for_subscriber: true,
        },
        { name: 'private' },
      ],
    },
  };
}

let builtBin = '';

function gyreBin() {
  if (process.env.GYRE_BIN) return process.env.GYRE_BIN;
  if (builtBin) return builtBin;
  const dir = mkdtempSync(join(tmpdir(), 'gyre-bin-'));
  builtBin = join(dir, 'gyre');
  execFileSync('go', ['build', '-o', builtBin, './cmd/gyre'], { cwd: repoRoot, stdio: 'inherit' });
  return builtBin;
}

// freePort asks the kernel for an unused loopback port. Another process could take
// it before gyre binds, which then shows up as a start failure with the log attached.
export function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// startServer writes the config (baseConfig unless given) into a fresh temp dir,
// starts gyre and resolves once GET /health answers 200.
export async function startServer({ config, readyTimeoutMs = 15000 } = {}) {
  const port = await freePort();
  const cfg = config ? config(port) : baseConfig(port);
  const dir = mkdtempSync(join(tmpdir(), 'gyre-sdk-'));
  const cfgPath = join(dir, 'config.json');
  const logPath = join(dir, 'gyre.log');
  writeFileSync(cfgPath, JSON.stringify(cfg, null, 2));
  const logFd = openSync(logPath, 'w');
  const child = spawn(gyreBin(), ['-c', cfgPath], { stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  live.add(child);
  let exited = null;
  child.on('exit', (code, signal) => {
    exited = { code, signal };
    live.delete(child);
  });

  const base = `http://127.0.0.1:${port}`;
  const server = {
    port,
    dir,
    httpUrl: base,
    wsUrl: `ws://127.0.0.1:${port}/connection/websocket`,
    log: () => {
      try { return readFileSync(logPath, 'utf8'); } catch { return ''; }
    },
    api: (method, body) => callApi(base, method, body),
    publish: (channel, data) => publish(base, channel, data),
    stop: () => stopChild(child, () => exited, dir),
  };

  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (exited) {
      const log = server.log();
      await server.stop();
      throw new Error(`gyre exited before becoming healthy (${JSON.stringify(exited)}); log:\n${log}`);
    }
    try {
      const r = await httpRequest('GET', `${base}/health`);
      if (r.status === 200) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      const log = server.log();
      await server.stop();
      throw new Error(`gyre not healthy on port ${port} within ${readyTimeoutMs} ms; log:\n${log}`);
    }
    await sleep(50);
  }
  return server;
}

async function stopChild(child, exited, dir) {
  if (!exited()) {
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    // A server that ignores SIGTERM is killed; the timer must not outlive the
    // wait, or it holds the test process open.
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  }
  if (!process.env.GYRE_SDK_KEEP) rmSync(dir, { recursive: true, force: true });
}

// callApi posts to /api/<method> and returns the "result" object, throwing with
// the whole answer when the server reports an error.
export async function callApi(base, method, body) {
  const r = await httpRequest('POST', `${base}/api/${method}`, JSON.stringify(body), {
    'Content-Type': 'application/json',
    'X-API-Key': API_KEY,
  });
  const text = r.body;
  if (r.status !== 200) throw new Error(`api ${method}: HTTP ${r.status}: ${text}`);
  let reply;
  try {
    reply = JSON.parse(text);
  } catch (e) {
    throw new Error(`api ${method}: answer is not JSON: ${text}`);
  }
  if (reply.error) throw new Error(`api ${method}: error ${JSON.stringify(reply.error)}`);
  return reply.result ?? {};
}

async function publish(base, channel, data) {
  const res = await callApi(base, 'publish', { channel, data });
  return res;
}

// httpRequest sends one request on its own connection: pooled keep-alive sockets
// would hold the test process open for seconds after the last test.
function httpRequest(method, url, body, headers = {}) {
  return new Promise((res, rej) => {
    const req = request(url, { method, headers, agent: false, timeout: 5000 }, (r) => {
      const chunks = [];
      r.on('data', (c) => chunks.push(c));
      r.on('end', () => res({ status: r.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      r.on('error', rej);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: no answer within 5 s`)));
    req.on('error', rej);
    req.end(body);
  });
}

function b64url(buf) {
  return Buffer.from(buf).toString('base64url');
}

// signToken makes an HS256 JWT from claims; exp defaults to an hour from now.
export function signToken(claims, secret = HMAC_SECRET) {
  const now = Math.floor(Date.now() / 1000);
  const body = { exp: now + 3600, iat: now, ...claims };
  const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const payload = b64url(JSON.stringify(body));
  const sig = createHmac('sha256', secret).update(`${head}.${payload}`).digest();
  return `${head}.${payload}.${b64url(sig)}`;
}
