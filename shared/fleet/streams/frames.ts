/**
 * Binary frames of the request streams that share the fleet WebSocket with the JSON control
 * frames (control frames are text messages, stream frames binary ones, so neither parser ever
 * sees the other). Every frame is one message: `[type u8][flags u8][stream id u32 BE]`, then
 *
 *   HEAD   [head length u32][head JSON][inline body bytes]  opens a stream (router) or answers it
 *   DATA   body bytes
 *   CREDIT [delta u32]           more bytes the peer may send (stream 0: the whole connection)
 *   RESET  [code u8]             the stream is abandoned (client gone, refused, error)
 *
 * Flag END on HEAD or DATA: the sender's last bytes on that stream. Only body bytes (inline and
 * DATA) count against credit, as HTTP/2 counts only DATA.
 */

/** Frame types. */
export const FRAME = { head: 1, data: 2, credit: 3, reset: 4 } as const;

/** The sender sends nothing more on the stream after this frame. */
export const FLAG_END = 1;

/** Why a stream was reset. */
export const RESET = {
  /** The peer no longer wants the stream (client gone, deadline, answer complete). */
  cancel: 0,
  /** The worker refused the stream before reading any of it: it may be retried elsewhere. */
  refused: 1,
  /** The sender failed while serving the stream. */
  internal: 2,
} as const;

/** A reset code. */
export type ResetCode = typeof RESET[keyof typeof RESET];

/** Bytes before a frame's payload. */
export const HEADER_BYTES = 6;

/** A request's head, as the router sends it in the stream's first frame. */
export interface RequestHead {
  method: string;
  /** Path and query, as the HTTP path sends them in the request line. */
  path: string;
  /** The allow-listed request headers (lower-case names). */
  headers: Record<string, string>;
}

/** An answer's head, as the worker sends it. */
export interface AnswerHead {
  status: number;
  /** The answer's headers (lower-case names), `content-length` included. */
  headers: Record<string, string>;
}

/** One decoded frame (payload views share the message's memory). */
export type Frame =
  | { type: 1; end: boolean; id: number; head: unknown; body: Uint8Array }
  | { type: 2; end: boolean; id: number; body: Uint8Array }
  | { type: 3; id: number; delta: number }
  | { type: 4; id: number; code: number };

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder("utf-8", { fatal: true });

function header(bytes: Uint8Array, type: number, flags: number, id: number): DataView {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  view.setUint8(0, type);
  view.setUint8(1, flags);
  view.setUint32(2, id);
  return view;
}

/** A HEAD frame: `head` as JSON text and `body` inline. */
export function headFrame(id: number, head: unknown, body: Uint8Array, end: boolean): Uint8Array {
  const json = utf8.encode(JSON.stringify(head));
  const out = new Uint8Array(HEADER_BYTES + 4 + json.length + body.length);
  header(out, FRAME.head, end ? FLAG_END : 0, id).setUint32(HEADER_BYTES, json.length);
  out.set(json, HEADER_BYTES + 4);
  out.set(body, HEADER_BYTES + 4 + json.length);
  return out;
}

/** A DATA frame carrying `body`. */
export function dataFrame(id: number, body: Uint8Array, end: boolean): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES + body.length);
  header(out, FRAME.data, end ? FLAG_END : 0, id);
  out.set(body, HEADER_BYTES);
  return out;
}

/** A CREDIT frame granting `delta` more bytes on stream `id` (0: the connection). */
export function creditFrame(id: number, delta: number): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES + 4);
  header(out, FRAME.credit, 0, id).setUint32(HEADER_BYTES, delta);
  return out;
}

/** A RESET frame. */
export function resetFrame(id: number, code: ResetCode): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES + 1);
  header(out, FRAME.reset, 0, id).setUint8(HEADER_BYTES, code);
  return out;
}

/** A decoded frame, or why the bytes are not one (the peer broke the framing). */
export type DecodedFrame = { ok: true; frame: Frame } | { ok: false; error: string };

/** Decode one binary message of at most `maxBytes`. */
export function decodeFrame(bytes: Uint8Array, maxBytes: number): DecodedFrame {
  if (bytes.length > maxBytes) return { ok: false, error: "stream frame too large" };
  if (bytes.length < HEADER_BYTES) return { ok: false, error: "stream frame too short" };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const type = view.getUint8(0);
  const flags = view.getUint8(1);
  const id = view.getUint32(2);
  const end = (flags & FLAG_END) !== 0;
  if ((flags & ~FLAG_END) !== 0) return { ok: false, error: "unknown stream frame flags" };
  switch (type) {
    case FRAME.head: {
      if (id === 0) return { ok: false, error: "HEAD on stream 0" };
      if (bytes.length < HEADER_BYTES + 4) return { ok: false, error: "HEAD frame too short" };
      const len = view.getUint32(HEADER_BYTES);
      const start = HEADER_BYTES + 4;
      if (start + len > bytes.length) return { ok: false, error: "HEAD length past the frame" };
      let head: unknown;
      try {
        head = JSON.parse(utf8Decoder.decode(bytes.subarray(start, start + len)));
      } catch {
        return { ok: false, error: "HEAD is not JSON" };
      }
      return { ok: true, frame: { type: 1, end, id, head, body: bytes.subarray(start + len) } };
    }
    case FRAME.data:
      if (id === 0) return { ok: false, error: "DATA on stream 0" };
      return { ok: true, frame: { type: 2, end, id, body: bytes.subarray(HEADER_BYTES) } };
    case FRAME.credit:
      if (bytes.length !== HEADER_BYTES + 4 || end) {
        return { ok: false, error: "malformed CREDIT frame" };
      }
      return { ok: true, frame: { type: 3, id, delta: view.getUint32(HEADER_BYTES) } };
    case FRAME.reset:
      if (id === 0 || bytes.length !== HEADER_BYTES + 1 || end) {
        return { ok: false, error: "malformed RESET frame" };
      }
      return { ok: true, frame: { type: 4, id, code: view.getUint8(HEADER_BYTES) } };
    default:
      return { ok: false, error: `unknown stream frame type ${type}` };
  }
}

/** `data` of a binary WebSocket message as bytes (ArrayBuffer, a view, or a `ws` Buffer). */
export function messageBytes(data: unknown): Uint8Array | undefined {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) {
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  }
  return undefined;
}
