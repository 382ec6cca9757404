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
  /** The SIE clients' pool: sent as `X-SIE-Pool` (their `gpu: "pool/gpu"`). */
  pool?: string;
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
      pool: "",
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

  /**
   * Cluster capacity as the SIE clients' `getCapacity(gpu)` builds it from the gateway's
   * `/health`: refused on a worker (no `type: "gateway"`); with a GPU type, the workers of that
   * type and their count; without, the cluster's numbers.
   */
  async getCapacity(gpu?: string): Promise<{
    status: string;
    workerCount: number;
    gpuCount: number;
    modelsLoaded: number;
    liveGpuTypes: string[];
    workers: { url: string; gpu: string; healthy: boolean; queueDepth: number }[];
  }> {
    const res = await fetch(`${this.#o.baseUrl}/health`, { signal: AbortSignal.timeout(30_000) });
    // deno-lint-ignore no-explicit-any
    const body = await res.json() as any;
    if (body.type !== "gateway") throw new Error("getCapacity() requires a gateway endpoint");
    let workers = (body.workers ?? []) as { [k: string]: unknown }[];
    if (gpu) workers = workers.filter((w) => String(w.gpu).toLowerCase() === gpu.toLowerCase());
    return {
      status: body.status,
      workerCount: gpu ? workers.length : body.cluster?.worker_count ?? 0,
      gpuCount: body.cluster?.gpu_count ?? 0,
      modelsLoaded: body.cluster?.models_loaded ?? 0,
      liveGpuTypes: body.live_gpu_types ?? [],
      workers: workers.map((w) => ({
        url: w.url as string,
        gpu: w.gpu as string,
        healthy: w.healthy as boolean,
        queueDepth: w.queue_depth as number,
      })),
    };
  }

  /** `POST /v1/pools {name, gpus}`, as `createPool`: the error's `detail.message` raised. */
  async createPool(name: string, gpus: Record<string, number>): Promise<Record<string, unknown>> {
    const res = await this.#json("POST", "/v1/pools", { name, gpus });
    // deno-lint-ignore no-explicit-any
    const body = await res.json() as any;
    if (res.status >= 400) {
      throw new Error(`Failed to create pool '${name}': ${body.detail?.message ?? res.status}`);
    }
    return body;
  }

  /** `GET /v1/pools/{name}`, as `getPool`: null when it fails (a 404 included). */
  async getPool(name: string): Promise<Record<string, unknown> | null> {
    const res = await this.#json("GET", `/v1/pools/${encodeURIComponent(name)}`);
    if (!res.ok) {
      await res.body?.cancel();
      return null;
    }
    return await res.json();
  }

  /** `POST /v1/pools/{name}/renew`, as the clients' lease renewal: true when it was taken. */
  async renewPool(name: string): Promise<boolean> {
    const res = await this.#json("POST", `/v1/pools/${encodeURIComponent(name)}/renew`);
    await res.body?.cancel();
    return res.ok;
  }

  /** `DELETE /v1/pools/{name}`, as `deletePool`: the status, for the test to read. */
  async deletePool(name: string): Promise<{ status: number; message?: string }> {
    const res = await this.#json("DELETE", `/v1/pools/${encodeURIComponent(name)}`);
    // deno-lint-ignore no-explicit-any
    const body = await res.json().catch(() => ({})) as any;
    return { status: res.status, message: body.detail?.message };
  }

  #json(method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(this.#o.baseUrl + path, {
      method,
      headers: { "content-type": "application/json", accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
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
    if (this.#o.pool) headers["X-SIE-Pool"] = this.#o.pool;
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
