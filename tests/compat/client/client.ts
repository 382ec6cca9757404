/**
 * A minimal client that behaves like the existing SIE client libraries, written from the wire
 * rules (docs/api.md) with its own msgpack code: msgpack requests and responses, the
 * `X-SIE-MACHINE-PROFILE` header, 202 (a pool provisioning) followed until success by its
 * `Retry-After`, 503 `MODEL_LOADING` retried by its `Retry-After`, `MODEL_LOAD_FAILED` raised at once
 * (its missing `Retry-After` says not to retry), and a version-skew warning from
 * `X-SIE-Server-Version`. It records what it saw so the tests can check the conversation.
 */
import { pack, unpack } from "./msgpack.ts";

/** What the client saw of one HTTP answer. */
export interface Seen {
  status: number;
  code?: string;
  retryAfter: string | null;
}

/** An error answer, as the client raises it. */
export class ServiceCallError extends Error {
  constructor(
    readonly status: number,
    readonly detail: Record<string, unknown>,
    readonly retryAfter: string | null,
  ) {
    super(`${status} ${detail.code}: ${detail.message}`);
  }

  /** The error code of the body (`detail.code`). */
  get code(): string {
    return String(this.detail.code);
  }
}

/** Client settings. */
export interface ClientOptions {
  baseUrl: string;
  /** The client's own release: compared with the server's major.minor. */
  version: string;
  machineProfile?: string;
  /** Longest total wait for a provisioning pool (202s) before giving up. */
  provisionWaitMs?: number;
  /** Retries of 503 MODEL_LOADING before the error is raised. */
  loadingRetries?: number;
  /** Upper bound of one wait, whatever Retry-After says (keeps tests fast). */
  maxSleepMs?: number;
}

/** The version-skew rule: warn when major or minor differ. */
export function versionSkew(client: string, server: string): boolean {
  const mm = (v: string) => v.split(".").slice(0, 2).join(".");
  return mm(client) !== mm(server);
}

/** An SIE-style client over one base URL (a worker or the router). */
export class CompatClient {
  readonly seen: Seen[] = [];
  readonly warnings: string[] = [];
  /** The last X-SIE-Server-Version the client read. */
  serverVersion: string | null = null;
  readonly #o: Required<ClientOptions>;
  #warned = false;

  constructor(options: ClientOptions) {
    this.#o = {
      machineProfile: "",
      provisionWaitMs: 60_000,
      loadingRetries: 3,
      maxSleepMs: 2_000,
      ...options,
    };
  }

  /** POST /v1/encode/{model}. */
  encode(model: string, items: Record<string, unknown>[], params?: Record<string, unknown>) {
    return this.call(`/v1/encode/${encodeURIComponent(model)}`, { items, params });
  }

  /** POST /v1/score/{model}. */
  score(
    model: string,
    query: Record<string, unknown>,
    items: Record<string, unknown>[],
    options?: Record<string, unknown>,
  ) {
    return this.call(`/v1/score/${encodeURIComponent(model)}`, { query, items, options });
  }

  /** POST /v1/extract/{model}. */
  extract(model: string, items: Record<string, unknown>[], params?: Record<string, unknown>) {
    return this.call(`/v1/extract/${encodeURIComponent(model)}`, { items, params });
  }

  /**
   * Serving workers of a GPU type, as the SIE clients' `getCapacity(gpu)` counts them from the
   * gateway's `/health`: workers whose `gpu` is `gpu` and that are `healthy`.
   */
  async capacity(gpu: string): Promise<number> {
    const res = await fetch(`${this.#o.baseUrl}/health`, { signal: AbortSignal.timeout(30_000) });
    const body = await res.json() as { workers?: { gpu?: unknown; healthy?: unknown }[] };
    if (!Array.isArray(body.workers)) throw new Error("/health has no workers list");
    return body.workers.filter((w) => {
      if (typeof w.gpu !== "string" || typeof w.healthy !== "boolean") {
        throw new Error("a /health worker without gpu (string) and healthy (boolean)");
      }
      return w.gpu === gpu && w.healthy;
    }).length;
  }

  /** POST a msgpack body and decode the msgpack answer, following 202 and MODEL_LOADING. */
  async call(path: string, body: unknown): Promise<Record<string, unknown>> {
    const started = performance.now();
    let loadingLeft = this.#o.loadingRetries;
    const headers: Record<string, string> = {
      "content-type": "application/msgpack",
      accept: "application/msgpack",
    };
    if (this.#o.machineProfile) headers["X-SIE-MACHINE-PROFILE"] = this.#o.machineProfile;
    const bytes = pack(body);
    while (true) {
      const res = await fetch(this.#o.baseUrl + path, {
        method: "POST",
        headers,
        body: bytes,
        signal: AbortSignal.timeout(60_000),
      });
      this.#checkVersion(res.headers);
      const retryAfter = res.headers.get("retry-after");
      if (res.status === 200) {
        this.seen.push({ status: 200, retryAfter });
        if (!(res.headers.get("content-type") ?? "").includes("msgpack")) {
          throw new Error(`expected msgpack, got ${res.headers.get("content-type")}`);
        }
        return unpack(new Uint8Array(await res.arrayBuffer())) as Record<string, unknown>;
      }
      const text = await res.text();
      if (res.status === 202) {
        this.seen.push({ status: 202, retryAfter });
        if (performance.now() - started > this.#o.provisionWaitMs) {
          throw new Error(`still provisioning after ${this.#o.provisionWaitMs} ms: ${text}`);
        }
        await this.#sleep(retryAfter);
        continue;
      }
      let detail: Record<string, unknown> = { code: "UNKNOWN", message: text };
      try {
        detail = JSON.parse(text).detail ?? detail;
      } catch {
        // not the error body shape: keep the text
      }
      this.seen.push({ status: res.status, code: String(detail.code), retryAfter });
      if (res.status === 503 && detail.code === "MODEL_LOADING" && loadingLeft-- > 0) {
        await this.#sleep(retryAfter);
        continue;
      }
      throw new ServiceCallError(res.status, detail, retryAfter);
    }
  }

  #checkVersion(h: Headers): void {
    const v = h.get("x-sie-server-version");
    if (v === null) return;
    this.serverVersion = v;
    if (!this.#warned && versionSkew(this.#o.version, v)) {
      this.#warned = true;
      this.warnings.push(`server version ${v} differs from client version ${this.#o.version}`);
    }
  }

  #sleep(retryAfter: string | null): Promise<void> {
    const s = Number(retryAfter);
    const ms = Number.isFinite(s) && s >= 0 ? s * 1000 : 1000;
    return new Promise((r) => setTimeout(r, Math.min(ms, this.#o.maxSleepMs)));
  }
}
