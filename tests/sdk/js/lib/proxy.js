// A TCP relay in front of the server that a test can cut, to drop connections
// the way a network does: no close frame, the client only sees the socket die.

import { createServer, connect } from 'node:net';

export async function startRelay(targetPort) {
  const pairs = new Set();
  let blocked = false;
  const srv = createServer((down) => {
    if (blocked) {
      down.destroy();
      return;
    }
    const up = connect(targetPort, '127.0.0.1');
    const pair = { down, up };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      down.destroy();
      up.destroy();
    };
    down.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
    down.pipe(up);
    up.pipe(down);
  });
  await new Promise((res, rej) => {
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', res);
  });
  const { port } = srv.address();
  return {
    port,
    wsUrl: `ws://127.0.0.1:${port}/connection/websocket`,
    // cut drops every relayed connection and refuses new ones until restore.
    cut() {
      blocked = true;
      for (const { down, up } of pairs) {
        down.destroy();
        up.destroy();
      }
      pairs.clear();
    },
    restore() {
      blocked = false;
    },
    close() {
      this.cut();
      return new Promise((res) => srv.close(() => res()));
    },
  };
}
