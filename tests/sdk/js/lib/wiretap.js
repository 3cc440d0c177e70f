// A TCP relay in front of the server that reads what the server sends on each
// WebSocket connection: the handshake response, then every frame as it is on
// the wire (RSV1 set or not, payload length) and the message it carries,
// inflated on its own when it is compressed. A client under test connects
// through it without knowing, so a test can check what its library hides:
// whether messages really travelled compressed and how many bytes they took.
// What the client sends is read the same way (unmasked).
//
// Each compressed message is inflated with a fresh inflater: gyre negotiates
// no context takeover both ways, so a message that needs an earlier one's
// window does not inflate here, and the tap records the error.

import { createServer, connect } from 'node:net';
import { inflateRawSync, constants } from 'node:zlib';

const TAIL = Buffer.from([0x00, 0x00, 0xff, 0xff]);

// startWireTap relays connections to the server at 127.0.0.1:targetPort and
// records each one (see TappedConn) in tap.conns, in the order they came.
export async function startWireTap(targetPort) {
  const conns = [];
  const sockets = new Set();
  const srv = createServer((down) => {
    const up = connect(targetPort, '127.0.0.1');
    const conn = new TappedConn();
    conn.fromClient = new TappedConn();
    conns.push(conn);
    sockets.add(down).add(up);
    const end = () => {
      sockets.delete(down);
      sockets.delete(up);
      down.destroy();
      up.destroy();
    };
    down.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
    up.on('data', (chunk) => conn.feed(chunk));
    down.on('data', (chunk) => conn.fromClient.feed(chunk));
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
    conns,
    wsUrl: `ws://127.0.0.1:${port}/connection/websocket`,
    uniWsUrl: `ws://127.0.0.1:${port}/connection/uni_websocket`,
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((res) => srv.close(() => res()));
    },
  };
}

// TappedConn is what the server sent on one connection; its fromClient,
// a TappedConn too, is what the client sent (headers then are those of the
// handshake request, and status 0).
export class TappedConn {
  constructor() {
    this.buf = Buffer.alloc(0);
    this.shaken = false;
    // status and headers of the handshake response (header names lower case).
    this.status = 0;
    this.headers = {};
    // bytesFromServer counts every byte the server sent, handshake included.
    this.bytesFromServer = 0;
    // messages are the data messages (text or binary), each
    // { opcode, compressed, wireBytes, data, error }: wireBytes is the size
    // of its frames on the wire, headers included; data the message as the
    // client's application sees it (inflated); error why it did not inflate.
    this.messages = [];
    // compressedControlFrames counts control frames with RSV1 set, which
    // RFC 7692 forbids.
    this.compressedControlFrames = 0;
    this.partial = null;
  }

  // extensions is the Sec-WebSocket-Extensions header the server answered.
  get extensions() {
    return this.headers['sec-websocket-extensions'] ?? '';
  }

  feed(chunk) {
    this.bytesFromServer += chunk.length;
    this.buf = Buffer.concat([this.buf, chunk]);
    if (!this.shaken && !this.readHandshake()) return;
    while (this.readFrame()) { /* next */ }
  }

  readHandshake() {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return false;
    const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
    // A response's status line; a request line (GET ...) leaves 0.
    this.status = Number(lines[0].split(' ')[1]) || 0;
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      if (i > 0) this.headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    this.buf = this.buf.subarray(end + 4);
    this.shaken = true;
    return true;
  }

  // readFrame takes one whole frame off the buffer, or returns false.
  readFrame() {
    const b = this.buf;
    if (b.length < 2) return false;
    const fin = (b[0] & 0x80) !== 0;
    const rsv1 = (b[0] & 0x40) !== 0;
    const opcode = b[0] & 0x0f;
    const masked = (b[1] & 0x80) !== 0;
    let len = b[1] & 0x7f;
    let head = 2;
    if (len === 126) {
      if (b.length < 4) return false;
      len = b.readUInt16BE(2);
      head = 4;
    } else if (len === 127) {
      if (b.length < 10) return false;
      len = Number(b.readBigUInt64BE(2));
      head = 10;
    }
    if (masked) head += 4; // a client's frames are masked, a server's not
    if (b.length < head + len) return false;
    const payload = Buffer.from(b.subarray(head, head + len));
    if (masked) {
      const key = b.subarray(head - 4, head);
      for (let i = 0; i < payload.length; i += 1) payload[i] ^= key[i % 4];
    }
    this.buf = b.subarray(head + len);

    if (opcode >= 0x8) {
      if (rsv1) this.compressedControlFrames += 1;
      return true;
    }
    if (opcode !== 0) {
      this.partial = { opcode, compressed: rsv1, wireBytes: 0, parts: [] };
    }
    const m = this.partial;
    if (!m) return true; // a continuation without a start: nothing to attach it to
    m.wireBytes += head + len;
    m.parts.push(payload);
    if (fin) {
      this.partial = null;
      this.messages.push(finish(m));
    }
    return true;
  }
}

function finish({ opcode, compressed, wireBytes, parts }) {
  const raw = Buffer.concat(parts);
  const msg = { opcode, compressed, wireBytes, data: raw, error: null };
  if (compressed) {
    try {
      // The tail ends the data without a final block: a sync flush, not
      // the end of a stream, is what to expect.
      msg.data = inflateRawSync(Buffer.concat([raw, TAIL]), { finishFlush: constants.Z_SYNC_FLUSH });
    } catch (e) {
      msg.error = e;
    }
  }
  return msg;
}
