// Runs a test file's scenarios on each engine: the memory engine, one gyre;
// the Redis engine, two gyre nodes on one redis-server, so that what one node
// publishes reaches the other's clients only through Redis.

import { startServer } from './server.js';
import { redisMissing, startRedis } from './redis.js';

export const engines = ['memory', 'redis'];

// engineSkip is the reason to skip the engine's tests (GYRE_SKIP_REDIS=1 and
// no redis-server), or false. Without the variable a missing redis-server
// fails the tests instead, so that they are never skipped unnoticed.
export function engineSkip(engine) {
  if (engine !== 'redis') return false;
  const missing = redisMissing();
  return missing && process.env.GYRE_SKIP_REDIS === '1' ? missing : false;
}

// startNodes starts gyre with config (a function of the port, as for
// startServer) on engine. Clients connect to nodes.sub and the test publishes
// through nodes.pub: the same server on memory, another node on Redis.
export async function startNodes(engine, config) {
  if (engine === 'memory') {
    const s = await startServer({ config });
    return { sub: s, pub: s, stop: () => s.stop() };
  }
  const missing = redisMissing();
  if (missing) throw new Error(missing);
  const redis = await startRedis();
  const started = [];
  const stop = async () => {
    for (const s of started) await s.stop();
    await redis.stop();
  };
  try {
    for (const name of ['sub', 'pub']) {
      started.push(await startServer({
        config: (port) => ({
          ...config(port),
          node: { name: `node-${name}` },
          engine: { type: 'redis', redis: { address: [redis.addr] } },
        }),
      }));
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { sub: started[0], pub: started[1], stop };
}
