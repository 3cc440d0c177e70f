// Starts a throwaway redis-server for test files that run several gyre nodes on
// one Redis (the Redis engine). Persistence is off.

import { firstLine, installed, startDaemon } from './daemon.js';

// redisMissing explains why Redis tests cannot run here, or is empty when
// redis-server is installed.
export function redisMissing() {
  if (installed('redis-server')) return '';
  return 'redis-server not found: install it with scripts/install-redis, or set GYRE_SKIP_REDIS=1 to skip Redis tests';
}

// startRedis runs redis-server on a free loopback port and resolves once it
// answers PING, with its address ("127.0.0.1:port") and a stop function.
export async function startRedis(opts = {}) {
  const { port, stop } = await startDaemon({
    ...opts,
    bin: 'redis-server',
    args: (p, dir) => [
      '--port', String(p), '--bind', '127.0.0.1', '--protected-mode', 'no',
      '--save', '', '--appendonly', 'no', '--dir', dir,
    ],
    ready: (p) => firstLine(p, { send: 'PING\r\n', prefix: '+PONG' }),
  });
  return { addr: `127.0.0.1:${port}`, stop };
}
