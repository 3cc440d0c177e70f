// Runs throwaway helper servers (redis-server, nats-server) for test files
// that start several gyre nodes: each in a temp dir of its own, on a free
// loopback port, killed with the dir removed when the file's tests end or
// when the test process exits.

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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// installed tells whether bin runs with --version.
export function installed(bin) {
  return spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0;
}

// firstLine resolves true when the server at port, sent send (if any),
// answers with a first line that starts with prefix.
export function firstLine(port, { send = '', prefix }) {
  return new Promise((res) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    let buf = '';
    const done = (ok) => {
      sock.destroy();
      res(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => { if (send) sock.write(send); });
    sock.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) done(buf.startsWith(prefix));
    });
  });
}

// startDaemon runs bin with the arguments args(port, dir) returns and
// resolves once ready(port) does, with the port, the dir and a stop function.
export async function startDaemon({ bin, args, ready, readyTimeoutMs = 15000 }) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `gyre-${bin}-`));
  const child = spawn(bin, args(port, dir), { stdio: 'ignore' });
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
      throw new Error(`${bin} exited at start: ${JSON.stringify(exited)}`);
    }
    if (await ready(port)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${bin} on port ${port} was not ready within ${readyTimeoutMs} ms`);
    }
    await sleep(20);
  }
  return { port, dir, stop };
}
