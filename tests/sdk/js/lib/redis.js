// Starts a throwaway redis-server for test files that run several gyre nodes on
// one Redis (the Redis engine). Persistence is off; the process and its
// directory go away when the file's tests end, or when the test process exits.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { freePort } from './server.js';

const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
});

// redisMissing explains why Redis tests cannot run here, or is empty when
// redis-server is installed.
export function redisMissing() {
  const r = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  if (r.status === 0) return '';
  return 'redis-server not found: install it with scripts/install-redis, or set GYRE_SKIP_REDIS=1 to skip Redis tests';
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ping resolves true when the server at port answers PING with PONG.
function ping(port) {
  return new Promise((res) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    let buf = '';
    const done = (ok) => {
      sock.destroy();
      res(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG'));
    });
  });
}

// startRedis runs redis-server on a free loopback port and resolves once it
// answers PING, with its address ("127.0.0.1:port") and a stop function.
export async function startRedis({ readyTimeoutMs = 15000 } = {}) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gyre-redis-'));
  const child = spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--protected-mode', 'no',
    '--save', '', '--appendonly', 'no', '--dir', dir,
  ], { stdio: 'ignore' });
  live.add(child);
  let exited = null;
  child.on('exit', (code, signal) => {
    exited = { code, signal };
    live.delete(child);
  });
  const stop = async () => {
    if (!exited) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (exited) {
      await stop();
      throw new Error(`redis-server exited at start: ${JSON.stringify(exited)}`);
    }
    if (await ping(port)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server on port ${port} did not answer PING within ${readyTimeoutMs} ms`);
    }
    await sleep(20);
  }
  return { addr: `127.0.0.1:${port}`, stop };
}
