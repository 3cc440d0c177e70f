// Builds and starts tests/admin/consumerstub: the admin interface of a node
// running two consumers whose queues are stand-ins (see its package comment),
// for the test of the Consumers table. Once gyre can run a real consumer here
// (redis_stream, on the Redis these tests start), use startGyre with it.

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { freePort } from '../../sdk/js/lib/server.js';
import { ADMIN_PASSWORD, ADMIN_SECRET } from './gyre.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

export const STUB_NODE = 'consumer-stub-node';

function post(url, body) {
  return new Promise((res, rej) => {
    const req = request(url, { method: 'POST', agent: false, timeout: 5000 }, (r) => {
      const chunks = [];
      r.on('data', (c) => chunks.push(c));
      r.on('end', () => res({ status: r.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      r.on('error', rej);
    });
    req.on('timeout', () => req.destroy(new Error(`POST ${url}: no answer within 5 s`)));
    req.on('error', rej);
    req.end(body);
  });
}

function answers(url) {
  return new Promise((res) => {
    const req = request(url, { agent: false, timeout: 1000 }, (r) => {
      r.resume();
      res(r.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => res(false));
    req.end();
  });
}

// startConsumerStub builds the program and starts it with the admin password
// of the other tests; adminUrl is where the app is, produce(lines) puts
// messages into the "feed" consumer's queue.
export async function startConsumerStub({ readyTimeoutMs = 15000 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'gyre-consumerstub-'));
  const bin = join(dir, 'consumerstub');
  execFileSync('go', ['build', '-o', bin, './tests/admin/consumerstub'], { cwd: repoRoot, stdio: 'inherit' });
  const port = await freePort();
  const logPath = join(dir, 'stub.log');
  const logFd = openSync(logPath, 'w');
  const child = spawn(bin, ['-addr', `127.0.0.1:${port}`, '-name', STUB_NODE, '-password', ADMIN_PASSWORD, '-secret', ADMIN_SECRET], {
    stdio: ['ignore', logFd, logFd],
  });
  closeSync(logFd);
  const kill = () => child.kill('SIGKILL');
  process.on('exit', kill);
  let exited = null;
  child.on('exit', (code, signal) => {
    exited = { code, signal };
    process.off('exit', kill);
  });
  const log = () => {
    try { return readFileSync(logPath, 'utf8'); } catch { return ''; }
  };
  const stop = async () => {
    if (!exited) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(kill, 5000);
      await gone;
      clearTimeout(timer);
    }
    if (!process.env.GYRE_SDK_KEEP) rmSync(dir, { recursive: true, force: true });
  };
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyTimeoutMs;
  while (!(await answers(`${base}/admin/init`))) {
    if (exited || Date.now() > deadline) {
      const text = log();
      await stop();
      throw new Error(`consumerstub did not start (${JSON.stringify(exited)}); log:\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    adminUrl: `${base}/`,
    log,
    produce: async (lines) => {
      const r = await post(`${base}/produce`, lines.join('\n'));
      if (r.status !== 200) throw new Error(`produce: ${r.status} ${r.body}`);
    },
    stop,
  };
}
