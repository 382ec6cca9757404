/**
 * Reading a request body from an untrusted client: incrementally, never trusting the declared
 * length, within the size limit, the process-wide in-flight budget and an idle timeout. Worker and
 * router both read bodies through here.
 */
import { invalidInput, ServiceError } from "../errors.ts";
import type { BodyBudget } from "./body_budget.ts";
import { type BodySource, bodySourceOf } from "./body_source.ts";

/** Bounds of one body read. */
export interface BodyReadOptions {
  /** Largest body accepted (`SVC_MAX_BODY_BYTES`). */
  readonly maxBodyBytes: number;
  /** Process-wide in-flight bytes; a body that does not fit gets 503 QUEUE_FULL. */
  readonly budget?: BodyBudget;
  /** A body with no new bytes for this long is abandoned with 408 (0 or absent: never). */
  readonly bodyIdleTimeoutMs?: number;
}

/** First buffer size once a body arrives in more than one chunk. */
const FIRST_CAPACITY = 64 * 1024;

/** 400 for a body over the size limit. */
function bodyTooLarge(size: number | string, maxBodyBytes: number): ServiceError {
  return invalidInput(
    `request body of ${size} bytes exceeds the limit of ${maxBodyBytes} bytes ` +
      `(SVC_MAX_BODY_BYTES)`,
  );
}

/** 408 for a body that stopped arriving. */
function bodyStalled(idleMs: number, received: number): ServiceError {
  return new ServiceError(
    "REQUEST_TIMEOUT",
    `request body stalled: no data for ${idleMs} ms after ${received} bytes ` +
      `(SVC_BODY_IDLE_TIMEOUT_MS)`,
  );
}

/** The Content-Length header as a number, when it is a plain decimal. */
function declaredLength(header: string | null | undefined): number | undefined {
  return header != null && /^\d{1,16}$/.test(header) ? Number(header) : undefined;
}

/**
 * Read `req`'s body: the source the server attached, else its stream ({@link readSourceLimited}).
 */
export function readBodyLimited(
  req: Request,
  opts: BodyReadOptions,
): Promise<Uint8Array<ArrayBuffer>> {
  const source = bodySourceOf(req) ?? (req.body ? streamSource(req.body) : undefined);
  return readSourceLimited(source, req.headers.get("content-length"), opts);
}

/**
 * Read a body from `reader` (`contentLength`: the header as sent). A declared length over the
 * limit fails at once; otherwise the buffer grows as bytes arrive (to at most twice what arrived,
 * and never past the declared length), each growth reserved from `budget`, and a body cut off as
 * soon as it passes the limit. On any failure the source is cancelled, which tells the server
 * the connection cannot be reused.
 */
export async function readSourceLimited(
  reader: BodySource | undefined,
  contentLength: string | null | undefined,
  opts: BodyReadOptions,
): Promise<Uint8Array<ArrayBuffer>> {
  const { maxBodyBytes, budget } = opts;
  const declared = declaredLength(contentLength);
  if (declared !== undefined && declared > maxBodyBytes) {
    throw bodyTooLarge(declared, maxBodyBytes);
  }
  if (!reader) return new Uint8Array(0);
  const idle = new IdleWatch(reader, opts.bodyIdleTimeoutMs ?? 0);
  let reserved = 0;
  const reserve = (bytes: number) => {
    budget?.reserve(bytes);
    reserved += bytes;
  };
  // The common case is one chunk: it is returned as is; a second chunk starts a growing buffer.
  let first: Uint8Array | undefined;
  let buf: Uint8Array<ArrayBuffer> | undefined;
  let total = 0;
  try {
    for (;;) {
      const value = await reader.read();
      if (idle.expired) throw bodyStalled(idle.ms, total);
      if (value === null) break;
      idle.progress();
      if (value.length === 0) continue;
      const end = total + value.length;
      if (end > maxBodyBytes) throw bodyTooLarge(`more than ${maxBodyBytes}`, maxBodyBytes);
      if (first === undefined && buf === undefined) {
        reserve(value.length);
        first = value;
      } else {
        if (buf === undefined || end > buf.length) {
          const grown = grow(buf?.length ?? 0, end, declared, maxBodyBytes);
          reserve(grown - (buf?.length ?? first!.length));
          const next = new Uint8Array(grown);
          next.set(buf ? buf.subarray(0, total) : first!);
          buf = next;
          first = undefined;
        }
        buf.set(value, total);
      }
      total = end;
    }
  } catch (err) {
    reader.cancel();
    throw err;
  } finally {
    idle.stop();
    budget?.release(reserved);
  }
  if (buf === undefined) return plain(first ?? new Uint8Array(0));
  // Keep at most a quarter of slack; beyond that, hand back an exact copy.
  return buf.length - total > total / 4 ? buf.slice(0, total) : buf.subarray(0, total);
}

/** A streamed body (a `Request` built outside the node:http server) as a pull source. */
function streamSource(body: ReadableStream<Uint8Array>): BodySource {
  const reader = body.getReader();
  return {
    read: () => reader.read().then((r) => r.done ? null : r.value),
    cancel: () => void reader.cancel().catch(() => {}),
  };
}

/** Next buffer size: double (from 64 KiB), at least `needed`, capped by declared and max size. */
function grow(capacity: number, needed: number, declared: number | undefined, max: number): number {
  const cap = Math.min(Math.max(capacity * 2, FIRST_CAPACITY), declared ?? max, max);
  return Math.max(needed, cap);
}

/** A Uint8Array over a plain ArrayBuffer (chunks from node:http are Buffers over shared pools). */
function plain(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  if (bytes.constructor === Uint8Array && bytes.buffer instanceof ArrayBuffer) {
    return bytes as Uint8Array<ArrayBuffer>;
  }
  return new Uint8Array(bytes);
}

/**
 * One timer per body (not per chunk): when it fires with no progress since it was armed, the read
 * is cancelled, which ends the pending `read()`; otherwise it re-arms for the time left.
 */
class IdleWatch {
  readonly ms: number;
  expired = false;
  #last = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #reader: BodySource;

  constructor(reader: BodySource, ms: number) {
    this.ms = ms;
    this.#reader = reader;
    if (ms > 0) {
      this.#last = performance.now();
      this.#arm(ms);
    }
  }

  progress(): void {
    if (this.ms > 0) this.#last = performance.now();
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(delay: number): void {
    this.#timer = setTimeout(() => {
      const left = this.#last + this.ms - performance.now();
      if (left > 0) return this.#arm(left);
      this.#timer = undefined;
      this.expired = true;
      this.#reader.cancel();
    }, delay);
  }
}
