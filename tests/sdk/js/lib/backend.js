// An application backend for gyre's HTTP proxies, written here in Node: one
// POST path per hook, JSON in and out. answer(hook, request) returns the
// response object, or null for a 404, or httpReply(status, body) for any
// other status. Every request is kept in calls[hook], a list from the start
// for each of the hooks named.

import { createServer } from 'node:http';

const STATUS = Symbol('status');

// httpReply makes answer's response go out with the given HTTP status (a
// backend that fails with 500, say) instead of 200.
export function httpReply(status, body = {}) {
  return { [STATUS]: status, body };
}

export async function startBackend(answer, hooks = []) {
  const calls = Object.fromEntries(hooks.map((h) => [h, []]));
  const srv = createServer((r, w) => {
    let body = '';
    r.on('data', (chunk) => { body += chunk; });
    r.on('end', () => {
      const hook = r.url.slice(1);
      const req = JSON.parse(body);
      (calls[hook] ??= []).push(req);
      const res = answer(hook, req);
      if (res && res[STATUS]) {
        w.writeHead(res[STATUS], { 'Content-Type': 'application/json' });
        w.end(JSON.stringify(res.body));
        return;
      }
      w.writeHead(res ? 200 : 404, { 'Content-Type': 'application/json' });
      w.end(JSON.stringify(res ?? {}));
    });
  });
  await new Promise((res) => srv.listen(0, '127.0.0.1', res));
  srv.unref();
  return { url: `http://127.0.0.1:${srv.address().port}`, calls };
}
