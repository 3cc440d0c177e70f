// The ways two gyre nodes share channels, for test files that connect
// clients to one node and publish through the other: on Redis (the engine);
// on NATS with history in JetStream; on redisnats (NATS for publications,
// history in Redis); on plain NATS, without history. Presence stays with the
// engine, Redis in every setup, so that it spans both nodes.

import { natsMissing, startNats } from './nats.js';
import { redisMissing, startRedis } from './redis.js';
import { startServer } from './server.js';

// natsBroker is the broker section of a nats broker at url, with the extra
// nats keys given.
function natsBroker(type, url, nats = {}) {
  return { enabled: true, type, nats: { url, ...nats } };
}

// clusterSetups: history tells whether channels keep history there (plain
// NATS refuses namespaces with history), wildcards whether clients may
// subscribe to patterns in every namespace (broker.nats.allow_wildcards).
export const clusterSetups = [
  { name: 'redis', history: true, nats: false, broker: () => undefined },
  {
    name: 'nats-jetstream',
    history: true,
    nats: true,
    broker: ({ nats }) => natsBroker('nats', nats.url, { jetstream: { enabled: true } }),
  },
  {
    name: 'redisnats',
    history: true,
    nats: true,
    broker: ({ nats, redis }) => ({ ...natsBroker('redisnats', nats.url), redis: { address: [redis.addr] } }),
  },
  {
    name: 'nats',
    history: false,
    wildcards: true,
    nats: true,
    broker: ({ nats }) => natsBroker('nats', nats.url, { allow_wildcards: true }),
  },
];

// missingFor is why setup cannot run here (redis-server or nats-server not
// installed), or empty.
function missingFor(setup) {
  return redisMissing() || (setup.nats ? natsMissing() : '');
}

// setupSkip is the reason to skip setup's tests, or false: only when what is
// missing may be skipped (GYRE_SKIP_REDIS=1, GYRE_SKIP_NATS=1). Otherwise a
// missing server fails the tests, so that they are never skipped unnoticed.
export function setupSkip(setup) {
  const redis = redisMissing();
  if (redis) return process.env.GYRE_SKIP_REDIS === '1' ? redis : false;
  const nats = setup.nats ? natsMissing() : '';
  if (nats) return process.env.GYRE_SKIP_NATS === '1' ? nats : false;
  return false;
}

// startCluster starts the servers of setup and two gyre nodes, A and B, with
// config (a function of the port, as for startServer) joined by them.
export async function startCluster(setup, config) {
  const missing = missingFor(setup);
  if (missing) throw new Error(missing);
  const deps = {};
  const nodes = [];
  const stop = async () => {
    for (const n of nodes) await n.stop();
    for (const d of Object.values(deps)) await d.stop();
  };
  try {
    deps.redis = await startRedis();
    if (setup.nats) deps.nats = await startNats();
    const broker = setup.broker(deps);
    for (const name of ['A', 'B']) {
      nodes.push(await startServer({
        config: (port) => ({
          ...config(port),
          node: { name },
          engine: { type: 'redis', redis: { address: [deps.redis.addr] } },
          ...(broker ? { broker } : {}),
        }),
      }));
    }
  } catch (e) {
    await stop();
    throw e;
  }
  if (process.env.GYRE_SDK_KEEP) for (const n of nodes) console.error(`gyre log (${setup.name}): ${n.dir}/gyre.log`);
  return { a: nodes[0], b: nodes[1], stop };
}
