// What the compression tests share (Node clients here, Chromium in
// tests/admin): a server configuration with permessage-deflate on both
// WebSocket endpoints, publications to send through it, and the check of what
// the wire tap saw.

import assert from 'node:assert/strict';

import { baseConfig } from './server.js';

// MIN_SIZE is compression_min_size: the replies to connect and subscribe and
// the small publications are shorter, so they must go plain.
export const MIN_SIZE = 512;

// EXTENSION is what gyre answers to an acceptable offer (one that names
// server_max_window_bits=15 gets that echoed after it).
export const EXTENSION = 'permessage-deflate; server_no_context_takeover; client_no_context_takeover';

export function compressionConfig(port) {
  return {
    ...baseConfig(port),
    websocket: { compression: true, compression_min_size: MIN_SIZE },
    uni_websocket: { enabled: true, compression: true, compression_min_size: MIN_SIZE },
  };
}

// publications is what a test publishes, in order: about 1 KB of JSON with
// the repetition real application data has (records of one shape), and
// between them small ones under MIN_SIZE. Each carries a marker of its own,
// so that the tap finds the message that carried it.
export function publications(tag = Math.random().toString(36).slice(2, 8)) {
  const out = [];
  for (let k = 0; k < 8; k += 1) {
    if (k % 3 === 1) {
      out.push({ marker: `small-${tag}-${k}`, seq: k });
      continue;
    }
    const rows = [];
    for (let r = 0; r < 10; r += 1) {
      rows.push({
        sensor: `sensor-${r}`,
        status: (r + k) % 4 ? 'ok' : 'warning',
        unit: 'celsius',
        value: 18 + ((k * 7 + r) % 11),
        updated: `2026-11-28T10:${String(k).padStart(2, '0')}:0${r % 10}Z`,
      });
    }
    out.push({ marker: `big-${tag}-${k}`, seq: k, kind: 'readings', rows });
  }
  return out;
}

export const isBig = (p) => p.marker.startsWith('big-');

// checkWire checks what the tap saw on one connection that received sent:
// with deflate, the extension negotiated, every message under MIN_SIZE plain,
// each big publication compressed to at most a third of its size; without
// deflate, no extension and nothing compressed. Every message must be whole
// (inflating on its own) and each publication must be in one of them as sent.
// It returns the byte counts of the big publications, compressed and not.
export function checkWire(conn, sent, { deflate, what = 'connection' }) {
  assert.equal(conn.status, 101, `${what}: handshake status`);
  assert.equal(conn.extensions, deflate ? EXTENSION : '', `${what}: Sec-WebSocket-Extensions answered`);
  assert.equal(conn.compressedControlFrames, 0, `${what}: control frames with RSV1`);
  const list = conn.messages.map((m) => `${m.compressed ? 'deflate' : 'plain'} ${m.wireBytes}B on the wire, ${m.data.length}B`).join('\n  ');
  for (const m of conn.messages) {
    assert.equal(m.error, null, `${what}: a message did not inflate on its own: ${m.error}`);
    if (m.data.length < MIN_SIZE) assert.ok(!m.compressed, `${what}: a message of ${m.data.length} bytes was compressed; messages:\n  ${list}`);
  }
  if (!deflate) {
    assert.ok(conn.messages.every((m) => !m.compressed), `${what}: compressed messages without deflate negotiated:\n  ${list}`);
  }
  let wire = 0;
  let plain = 0;
  for (const p of sent) {
    const text = JSON.stringify(p);
    const m = conn.messages.find((x) => x.data.includes(text));
    assert.ok(m, `${what}: no message carries ${p.marker} as published; messages:\n  ${list}`);
    if (!deflate || !isBig(p)) continue;
    assert.ok(m.compressed, `${what}: ${p.marker} (${m.data.length} bytes) went uncompressed`);
    assert.ok(m.wireBytes * 3 <= m.data.length, `${what}: ${p.marker} took ${m.wireBytes} bytes on the wire for ${m.data.length}, more than a third`);
    wire += m.wireBytes;
    plain += m.data.length;
  }
  return { wire, plain };
}
