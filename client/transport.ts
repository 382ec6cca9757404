/**
 * One API call with the client's retry rules: attempts bounded by `timeoutMs` each, the whole
 * call bounded by the retry budget; 202 polled with backoff, 503/429 with `Retry-After` waited
 * as told, connection failures retried with capped exponential backoff and jitter, every other
 * error raised at once as an SvcError. Uses only `fetch`, `AbortController` and timers.
 */
import { errorFromAnswer, SvcError } from "./errors.ts";
import {
  connectDelayMs,
  parseRetryAfter,
  provisionDelayMs,
  retryAfterDelayMs,
  type RetryPolicy,
  verdictOf,
  versionSkew,
} from "./retry.ts";
import { contentType, decodeAnswer, encodeBody, type WireFormat } from "./wire.ts";

/** Everything a call needs besides its path and body. */
export interface TransportConfig {
  baseUrl: string;
  apiKey?: string;
  machineProfile?: string;
  format: WireFormat;
  timeoutMs: number;
  retry: RetryPolicy;
  /** The client's release, compared with the server's for the skew warning. */
  clientVersion: string;
  warn: (message: string) => void;
  fetch: typeof fetch;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
  now: () => number;
}

/** One request. */
export interface CallSpec {
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  /** Force JSON for this call (catalog and `/v1/embeddings` answer JSON anyway). */
  json?: boolean;
  signal?: AbortSignal;
}

/** A sleep that ends early (rejecting) when `signal` aborts. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Performs calls for one client; remembers whether the version warning was given. */
export class Transport {
  readonly #c: TransportConfig;
  #warned = false;
  /** The server version of the latest answer (null before the first). */
  serverVersion: string | null = null;

  constructor(config: TransportConfig) {
    this.#c = config;
  }

  /** Run one call to completion: the decoded answer body, or an SvcError. */
  async call(spec: CallSpec): Promise<unknown> {
    const c = this.#c;
    const format: WireFormat = spec.json ? "json" : c.format;
    const started = c.now();
    const body = spec.body === undefined ? undefined : encodeBody(spec.body, format);
    let polls = 0;
    let connectFailures = 0;
    let last = "";
    /** When the current run of no-capacity answers began (undefined: capacity, or none yet). */
    let capacitySince: number | undefined;
    for (;;) {
      let res: Response;
      try {
        res = await this.#attempt(spec, format, body);
      } catch (err) {
        if (!(err instanceof SvcError) || err.code !== "CONNECTION_FAILED") throw err;
        connectFailures++;
        if (connectFailures >= c.retry.connectAttempts) throw err;
        last = err.message;
        await this.#wait(
          connectDelayMs(c.retry, connectFailures - 1, c.random),
          started,
          last,
          spec.signal,
          spec,
        );
        continue;
      }
      connectFailures = 0;
      this.#checkVersion(res.headers);
      const retryAfterS = parseRetryAfter(res.headers.get("retry-after"));
      const verdict = verdictOf(res.status, retryAfterS);
      const bytes = new Uint8Array(await this.#read(res, spec.signal));
      if (verdict.kind === "done") {
        try {
          return decodeAnswer(bytes, res.headers.get("content-type"));
        } catch (err) {
          throw new SvcError("BAD_RESPONSE", `undecodable ${res.status} answer: ${err}`, {
            status: res.status,
          });
        }
      }
      const text = new TextDecoder().decode(bytes);
      if (verdict.kind === "fail") throw errorFromAnswer(res.status, text, retryAfterS);
      const err = verdict.kind === "provisioning"
        ? undefined
        : errorFromAnswer(res.status, text, retryAfterS);
      const noCapacity = verdict.kind === "provisioning" || err?.code === "NO_CAPACITY";
      if (!noCapacity) capacitySince = undefined;
      let delay = verdict.kind === "provisioning"
        ? provisionDelayMs(c.retry, polls++, retryAfterS)
        : retryAfterDelayMs(c.retry, verdict.seconds);
      last = err ? err.message : `202 ${provisioningMessage(text)}`;
      if (noCapacity) {
        capacitySince ??= c.now();
        const waited = c.now() - capacitySince;
        if (waited >= c.retry.provisionWaitMs) {
          throw new SvcError(
            "NO_CAPACITY",
            `${spec.method} ${spec.path}: no worker to serve it after waiting ` +
              `${(waited / 1000).toFixed(1)} s (retry.provisionWaitMs ${c.retry.provisionWaitMs} ` +
              `ms): ${capacityFacts(res.status, text)}; start a worker of that pool, or raise ` +
              "retry.provisionWaitMs for a pool that scales from zero",
            { status: res.status, retryAfterS },
          );
        }
        // One more look exactly when the wait is up.
        delay = Math.min(delay, c.retry.provisionWaitMs - waited);
      }
      await this.#wait(delay, started, last, spec.signal, spec);
    }
  }

  /** One HTTP exchange (headers received), bounded by `timeoutMs` and the caller's signal. */
  async #attempt(
    spec: CallSpec,
    format: WireFormat,
    body: Uint8Array | string | undefined,
  ): Promise<Response> {
    const c = this.#c;
    const headers: Record<string, string> = { accept: contentType(format) };
    if (body !== undefined) headers["content-type"] = contentType(format);
    if (c.apiKey) headers.authorization = `Bearer ${c.apiKey}`;
    if (c.machineProfile) headers["x-svc-machine-profile"] = c.machineProfile;
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new SvcError("TIMEOUT", `no answer within ${c.timeoutMs} ms`)),
      c.timeoutMs,
    );
    const onAbort = () => timeout.abort(spec.signal!.reason);
    spec.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await c.fetch(c.baseUrl + spec.path, {
        method: spec.method,
        headers,
        body: body as BodyInit | undefined,
        signal: timeout.signal,
      });
    } catch (err) {
      if (spec.signal?.aborted) throw aborted(spec.signal);
      if (timeout.signal.aborted) throw timeout.signal.reason;
      throw new SvcError(
        "CONNECTION_FAILED",
        `cannot reach ${c.baseUrl}: ${(err as Error).message}`,
        { cause: err },
      );
    } finally {
      clearTimeout(timer);
      spec.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** The body, also bounded by `timeoutMs` (a server that stalls mid-body must not hang us). */
  async #read(res: Response, signal?: AbortSignal): Promise<ArrayBuffer> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new SvcError("TIMEOUT", `answer body not read within ${this.#c.timeoutMs} ms`)),
        this.#c.timeoutMs,
      );
    });
    try {
      return await Promise.race([res.arrayBuffer(), stalled]);
    } catch (err) {
      res.body?.cancel().catch(() => {});
      if (signal?.aborted) throw aborted(signal);
      if (err instanceof SvcError) throw err;
      throw new SvcError("CONNECTION_FAILED", `answer body lost: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sleep `ms` unless the budget ends first (then RETRY_BUDGET_EXHAUSTED with the last reason). */
  async #wait(
    ms: number,
    started: number,
    last: string,
    signal?: AbortSignal,
    spec?: CallSpec,
  ): Promise<void> {
    const c = this.#c;
    const left = c.retry.budgetMs - (c.now() - started);
    if (left <= 0) {
      const what = spec ? `${spec.method} ${spec.path}: ` : "";
      throw new SvcError(
        "RETRY_BUDGET_EXHAUSTED",
        `${what}gave up after ${
          Math.round(c.now() - started)
        } ms (retry budget ${c.retry.budgetMs} ms): ${last}`,
      );
    }
    try {
      await c.sleep(Math.min(ms, left), signal);
    } catch {
      throw aborted(signal);
    }
  }

  #checkVersion(h: Headers): void {
    const v = h.get("x-svc-server-version") ?? h.get("x-sie-server-version");
    if (v === null) return;
    this.serverVersion = v;
    if (!this.#warned && versionSkew(this.#c.clientVersion, v)) {
      this.#warned = true;
      this.#c.warn(
        `server version ${v} differs from client version ${this.#c.clientVersion} ` +
          `(major.minor): some features may not match`,
      );
    }
  }
}

function aborted(signal?: AbortSignal): SvcError {
  return new SvcError("ABORTED", "the call was aborted", { cause: signal?.reason });
}

/** What a no-capacity answer says: the pool and bundle with the router's own message. */
function capacityFacts(status: number, text: string): string {
  try {
    const b = JSON.parse(text) as {
      machine_profile?: unknown;
      bundle?: unknown;
      message?: unknown;
      detail?: { message?: unknown };
    };
    const pool = typeof b.machine_profile === "string" ? `pool "${b.machine_profile}"` : "";
    const bundle = typeof b.bundle === "string" ? ` (bundle "${b.bundle}")` : "";
    const message = typeof b.message === "string"
      ? b.message
      : typeof b.detail?.message === "string"
      ? b.detail.message
      : "";
    return `${status}${pool ? ` for ${pool}${bundle}` : ""}${message ? `, ${message}` : ""}`;
  } catch {
    return String(status);
  }
}

/** The message of a 202 body, for the budget error. */
function provisioningMessage(text: string): string {
  try {
    const b = JSON.parse(text) as { message?: unknown };
    if (typeof b.message === "string") return b.message;
  } catch {
    // not JSON
  }
  return "provisioning";
}
