/** HTTP helpers with a time bound on every call and caller abort support. */

/** Default bound (ms) for an HTTP call to produce its response headers. */
export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;

/** Options of {@link fetchWithTimeout}. */
export interface FetchTimeoutOptions {
  /** Time allowed until the response headers (and a buffered body) arrive. */
  timeoutMs: number;
  /** Caller cancellation; also cancels the body stream after the headers arrived. */
  signal?: AbortSignal;
  /** The fetch to use (tests inject one); defaults to the global fetch. */
  fetch?: typeof fetch;
  /** When it returns true for a response, its body is read within the same deadline. */
  buffer?: (res: Response) => boolean;
}

/** Error raised when a call exceeds its time bound (name `TimeoutError`, like AbortSignal.timeout). */
export class HttpTimeoutError extends Error {
  constructor(ms: number) {
    super(`no response within ${ms} ms`);
    this.name = "TimeoutError";
  }
}

/** `fetch` bounded by `timeoutMs` until headers (and any buffered body) arrive, abortable. */
export async function fetchWithTimeout(
  input: string | URL | Request,
  init: RequestInit,
  opts: FetchTimeoutOptions,
): Promise<Response> {
  const timer = new AbortController();
  const signals = [timer.signal, opts.signal, init.signal].filter((s): s is AbortSignal => !!s);
  const id = setTimeout(() => timer.abort(new HttpTimeoutError(opts.timeoutMs)), opts.timeoutMs);
  try {
    const res = await (opts.fetch ?? fetch)(input, { ...init, signal: AbortSignal.any(signals) });
    if (!opts.buffer?.(res)) return res;
    return await bufferedCopy(res);
  } catch (err) {
    // Prefer our own timeout error over the generic AbortError fetch reports.
    if (timer.signal.aborted) throw timer.signal.reason;
    throw err;
  } finally {
    // Only the time to headers is bounded here: long bodies are bounded by an idle timeout.
    clearTimeout(id);
  }
}

/** Buffered bodies are probes and error pages: a few bytes; more than this is cut off. */
const MAX_BUFFERED_BYTES = 64 * 1024;

/** A copy of `res` with its body (at most MAX_BUFFERED_BYTES) in memory; keeps `url`. */
async function bufferedCopy(res: Response): Promise<Response> {
  const body = await readAtMost(res, MAX_BUFFERED_BYTES);
  const nullBody = res.status === 204 || res.status === 304;
  const copy = new Response(nullBody ? null : body, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
  Object.defineProperty(copy, "url", { value: res.url });
  return copy;
}

/** The first `max` bytes of a body; the rest is cancelled (a misbehaving server cannot fill RAM). */
async function readAtMost(res: Response, max: number): Promise<Uint8Array<ArrayBuffer>> {
  if (!res.body) return new Uint8Array(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (total < max) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    total += value.byteLength;
  }
  if (total >= max) await reader.cancel().catch(() => {});
  const out = new Uint8Array(Math.min(total, max));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, out.length - at);
    out.set(part, at);
    at += part.length;
    if (at >= out.length) break;
  }
  return out;
}
