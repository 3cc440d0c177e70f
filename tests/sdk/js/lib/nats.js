// Starts a throwaway nats-server with JetStream (its store in a temp dir)
// for test files that run gyre nodes on the NATS broker.

import { firstLine, installed, startDaemon } from './daemon.js';

// natsMissing explains why NATS tests cannot run here, or is empty when
// nats-server is installed.
export function natsMissing() {
  if (installed('nats-server')) return '';
  return 'nats-server not found: install it with scripts/install-nats, or set GYRE_SKIP_NATS=1 to skip NATS tests';
}

// startNats runs nats-server with JetStream on a free loopback port and
// resolves once it greets a client, with its URL ("nats://127.0.0.1:port")
// and a stop function.
export async function startNats(opts = {}) {
  const { port, stop } = await startDaemon({
    ...opts,
    bin: 'nats-server',
    args: (p, dir) => ['-a', '127.0.0.1', '-p', String(p), '-js', '-sd', dir],
    // It greets a client with its INFO line once it accepts clients.
    ready: (p) => firstLine(p, { prefix: 'INFO ' }),
  });
  return { url: `nats://127.0.0.1:${port}`, stop };
}
