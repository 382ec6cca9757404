/**
 * Reading a request body from an untrusted client: incrementally, never trusting the declared
 * length, within the size limit, the process-wide in-flight budget and an idle timeout. Worker and
 * router both read bodies through here: the worker as one buffer (it decodes it), the router as
 * the chunks it arrived in (it only passes them on, so joining them would be a second copy).
 */
import { invalidInput, ServiceError } from "../errors.ts";
import type { BodyBudget, BodyHold } from "./body_budget.ts";
import type { BodySource } from "./body_source.ts";

/** Bounds of one body read. */
export interface BodyReadOptions {
  /** Largest body accepted (`SVC_MAX_BODY_BYTES`). */
  readonly maxBodyBytes: number;
  /**
   * Process-wide in-flight bytes, given back when the read ends; a body that does not fit gets
   * 503 QUEUE_FULL (shared/http/body_budget.ts).
   */
  readonly budget?: BodyBudget;
  /** Reserve in this request's hold instead: the bytes stay counted until its owner releases it. */
  readonly hold?: BodyHold;
  /** A body with no new bytes for this long is abandoned with 408 (0 or absent: never). */
  readonly bodyIdleTimeoutMs?: number;
}

/** A body as the chunks it arrived in, in order. */
export interface BodyChunks {
  readonly chunks: readonly Uint8Array[];
  /** Their total length in bytes. */
  readonly length: number;
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
 * Read `req`'s body into one buffer ({@link readSourceLimited}): from `source` when the server
 * handed one beside the request (node:http: `c.env.body`), else from the request's stream.
 */
export function readBodyLimited(
  req: Request,
  opts: BodyReadOptions,
  source?: BodySource,
): Promise<Uint8Array<ArrayBuffer>> {
  return readSourceLimited(sourceOf(req, source), req.headers.get("content-length"), opts);
}

/** Read `req`'s body as the chunks it arrived in ({@link readSourceChunks}); `source` as above. */
export function readBodyChunks(
  req: Request,
  opts: BodyReadOptions,
  source?: BodySource,
): Promise<BodyChunks> {
  return readSourceChunks(sourceOf(req, source), req.headers.get("content-length"), opts);
}

/** `source`, else one over the request's stream. */
function sourceOf(req: Request, source: BodySource | undefined): BodySource | undefined {
  return source ?? (req.body ? streamSource(req.body) : undefined);
}

/**
 * Read a body from `reader` into one buffer (`contentLength`: the header as sent). The buffer
 * grows as bytes arrive (to at most twice what arrived, and never past the declared length), each
 * growth reserved in the budget. The common single chunk is returned as is.
 */
export async function readSourceLimited(
  reader: BodySource | undefined,
  contentLength: string | null | undefined,
  opts: BodyReadOptions,
): Promise<Uint8Array<ArrayBuffer>> {
  const declared = admit(contentLength, opts);
  if (!reader) return new Uint8Array(0);
  // The common case is one chunk: it is returned as is; a second chunk starts a growing buffer.
  let first: Uint8Array | undefined;
  let buf: Uint8Array<ArrayBuffer> | undefined;
  const total = await pump(reader, opts, (value, at, reserve) => {
    const end = at + value.length;
    if (first === undefined && buf === undefined) {
      reserve(value.length);
      first = value;
      return;
    }
    if (buf === undefined || end > buf.length) {
      const grown = grow(buf?.length ?? 0, end, declared, opts.maxBodyBytes);
      reserve(grown - (buf?.length ?? first!.length));
      const next = new Uint8Array(grown);
      next.set(buf ? buf.subarray(0, at) : first!);
      buf = next;
      first = undefined;
    }
    buf.set(value, at);
  });
  if (buf === undefined) return plain(first ?? new Uint8Array(0));
  // Keep at most a quarter of slack; beyond that, hand back an exact copy.
  return buf.length - total > total / 4 ? buf.slice(0, total) : buf.subarray(0, total);
}

/**
 * Read a body from `reader` as the chunks it arrived in: each chunk is reserved as it comes and
 * kept as it is, so the body costs its own length and no copy.
 */
export async function readSourceChunks(
  reader: BodySource | undefined,
  contentLength: string | null | undefined,
  opts: BodyReadOptions,
): Promise<BodyChunks> {
  admit(contentLength, opts);
  const chunks: Uint8Array[] = [];
  if (!reader) return { chunks, length: 0 };
  const length = await pump(reader, opts, (value, _at, reserve) => {
    reserve(value.length);
    chunks.push(value);
  });
  return { chunks, length };
}

/**
 * What can be refused before any byte is read: a declared length over the limit (400), or one
 * that cannot fit in the budget now (503: it would be refused part-way, after its sender had
 * spent the bandwidth and this process the memory). The declared length is only ever a reason
 * to refuse, never a reservation. Returns it when it is a plain number.
 */
function admit(
  contentLength: string | null | undefined,
  opts: BodyReadOptions,
): number | undefined {
  const declared = declaredLength(contentLength);
  if (declared === undefined) return undefined;
  if (declared > opts.maxBodyBytes) throw bodyTooLarge(declared, opts.maxBodyBytes);
  const budget = opts.hold?.budget ?? opts.budget;
  if (budget && !budget.fits(declared)) throw budget.full();
  return declared;
}

/** Stores one chunk that arrived at offset `at`, reserving what it keeps through `reserve`. */
type TakeChunk = (value: Uint8Array, at: number, reserve: (bytes: number) => void) => void;

/**
 * Read every chunk of `reader` into `take`, within the size limit and the idle timeout; returns
 * the body's length. Reservations go to the request's hold (kept after a whole read) or to a hold
 * of the read alone (given back at its end). On any failure the source is cancelled, which tells
 * the server the connection cannot be reused, and the bytes go back.
 */
async function pump(reader: BodySource, opts: BodyReadOptions, take: TakeChunk): Promise<number> {
  const { maxBodyBytes } = opts;
  const hold = opts.hold ?? opts.budget?.hold();
  const reserve = hold ? (bytes: number) => hold.reserve(bytes) : () => {};
  const idle = new IdleWatch(reader, opts.bodyIdleTimeoutMs ?? 0);
  // Refused to make room for an earlier body: the pending read ends, and the check below throws.
  hold?.startReading(() => reader.cancel());
  let total = 0;
  try {
    for (;;) {
      const value = await reader.read();
      if (idle.expired) throw bodyStalled(idle.ms, total);
      if (hold?.failure) throw hold.failure;
      if (value === null) break;
      idle.progress();
      if (value.length === 0) continue;
      const end = total + value.length;
      if (end > maxBodyBytes) throw bodyTooLarge(`more than ${maxBodyBytes}`, maxBodyBytes);
      take(value, total, reserve);
      total = end;
    }
  } catch (err) {
    reader.cancel();
    // What arrived is dropped with the read: its bytes go back at once, even the request's.
    hold?.release();
    throw err;
  } finally {
    idle.stop();
    if (hold === opts.hold) hold?.stopReading();
    else hold?.release();
  }
  return total;
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
