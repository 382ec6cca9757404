/**
 * The result cache's part in one model request (encode, score, extract, embeddings, the Cohere
 * routes). In order:
 *
 * 1. `Cache-Control: no-store` bypasses everything: no lookup, no coalescing, nothing stored.
 *    `no-cache` asks for a fresh answer: no lookup and no coalescing, but the fresh answer
 *    replaces the stored one. Both answer `X-SVC-Cache: bypass`.
 * 2. A request no serving worker of its pool offers a model for goes on as before (202, a wait for
 *    capacity, 404): no answer can be valid there, and such a request never reads its body.
 * 3. The body is read and the key made (key.ts). A stored answer whose revision a serving worker
 *    of the pool still announces is a hit: its status, headers and body as first sent, plus
 *    `X-SVC-Cache: hit`.
 * 4. An identical request in flight is followed (flights.ts): its answer is shared as a hit; when
 *    it fails, the follower goes to a worker itself (failures are not shared).
 * 5. Otherwise the request leads a flight and goes to a worker (`X-SVC-Cache: miss`); its answer
 *    is captured on the way to the client (capture.ts), shared with its followers, and stored
 *    when it is a 200 that names its model revision (answers of LoRA adapters name none).
 */
import { ServiceError } from "@svc/shared/errors";
import { HeaderNames as H } from "@svc/shared/headers";
import type { BodyChunks } from "@svc/shared/http/read_body";
import { MODEL_REVISION_RE } from "@svc/shared/fleet/protocol";
import type { WorkerDirectory, WorkerRecord } from "../directory/types.ts";
import type { RouterMetrics } from "../metrics/router_metrics.ts";
import { isServing, modelsOf } from "../pools/selection.ts";
import type { AnswerShaper } from "../proxy/forward.ts";
import { downstreamHeaderPairs } from "../proxy/headers.ts";
import type { ResultCacheSettings } from "../settings.ts";
import { captureAnswer, exact } from "./capture.ts";
import { awaitLanding, Flights, type Landing, type Lead } from "./flights.ts";
import { resultKey } from "./key.ts";
import { ResultStore } from "./store.ts";
import type { SecondTier } from "./kv_tier.ts";

/** `X-SVC-Model-Revision` as the kept header pairs name it (lower case). */
const REVISION_HEADER = H.modelRevision.toLowerCase();

/** `X-SVC-Worker-ID` as the kept header pairs name it (lower case). */
const WORKER_ID_HEADER = H.workerId.toLowerCase();

/** How a request's `Cache-Control` treats the cache. */
export type CacheMode = "use" | "refresh" | "bypass";

/** Values of `X-SVC-Cache` and of the `result` label (`coalesced` answers say `hit`). */
export type CacheResult = "hit" | "coalesced" | "miss" | "bypass";

/** The `result` label of each value, made once (counting a request allocates none). */
const RESULT_LABELS: Readonly<Record<CacheResult, { result: CacheResult }>> = {
  hit: { result: "hit" },
  coalesced: { result: "coalesced" },
  miss: { result: "miss" },
  bypass: { result: "bypass" },
};

/** One model request as the cache sees it. */
export interface CacheRequest {
  req: Request;
  pool: string;
  bundle: string;
  /** The model as workers announce it (`id` for a served `id:profile`). */
  model: string;
  /** The credential as presented (`""` without API keys). */
  tenant: string;
  /** The body (read once, whatever the number of calls). */
  readBody: () => Promise<BodyChunks | null>;
  /** Route and forward as without a cache, the worker's answer built by `shape`. */
  send: (shape: AnswerShaper) => Promise<Response>;
  /** How long a follower waits for its flight (the upstream timeout). */
  timeoutMs: number;
}

/** What the cache needs. */
export interface ResultCacheDeps {
  settings: ResultCacheSettings;
  directory: WorkerDirectory;
  metrics: RouterMetrics;
  /** `SVC_EXPOSE_WORKER_ID`: stored answers keep the id of the worker that computed them. */
  exposeWorkerId: boolean;
  /** Clock in ms of the entries' age (tests pass fake time). */
  now?: () => number;
  /** A tier shared by router instances (KV), asked after a local miss (kv_tier.ts). */
  tier?: SecondTier;
}

/** The result cache and the flights of one router process (or isolate). */
export class ResultCache {
  readonly store: ResultStore;
  readonly flights: Flights = new Flights();
  readonly #deps: ResultCacheDeps;
  /** The shared second tier, when there is one. */
  readonly tier: SecondTier | undefined;

  constructor(deps: ResultCacheDeps) {
    this.#deps = deps;
    this.tier = deps.tier;
    this.store = new ResultStore({ ...deps.settings, now: deps.now });
  }

  /** Answer one request: from the store, from a flight, or from a worker (see the module doc). */
  async answer(r: CacheRequest): Promise<Response> {
    const mode = cacheModeOf(r.req.headers.get("cache-control"));
    if (mode === "bypass") return await this.#forward(r, "bypass", undefined, undefined);
    if (!offered(this.#deps.directory.snapshot(), r)) {
      return await this.#forward(r, "miss", undefined, undefined);
    }
    const body = await r.readBody();
    const key = resultKey({
      tenant: r.tenant,
      pool: r.pool,
      method: r.req.method,
      path: pathAndQuery(r.req.url),
      contentType: r.req.headers.get("content-type") ?? "",
      accept: r.req.headers.get("accept") ?? "",
    }, body);
    if (mode === "refresh") return await this.#forward(r, "bypass", key, this.flights.lead(key));
    const hit = this.#lookup(key, r);
    if (hit) return this.#answered(hit, "hit");
    const landed = this.flights.follow(key);
    if (landed) {
      const waited = await awaitLanding(landed, r.req.signal, r.timeoutMs);
      if (waited.kind === "landed") return this.#answered(waited.answer, "coalesced");
      // Nobody reads the answer; 499-style status for logs and metrics only.
      if (waited.kind === "client_gone") return new Response(null, { status: 499 });
      if (waited.kind === "timeout") {
        throw new ServiceError(
          "GATEWAY_TIMEOUT",
          `an identical request in flight was not answered within ${r.timeoutMs} ms`,
        );
      }
      // Its flight failed: this one goes to a worker alone (a failure is never shared).
      return await this.#forward(r, "miss", key, undefined);
    }
    const lead = this.flights.lead(key);
    return await this.#fromTier(key, r, lead) ?? await this.#forward(r, "miss", key, lead);
  }

  /**
   * A local miss asks the shared tier (KV, other router instances' answers); a hit is kept
   * locally too and lands `lead` (its followers share it). Undefined: go to a worker.
   */
  async #fromTier(
    key: string,
    r: CacheRequest,
    lead: Lead | undefined,
  ): Promise<Response | undefined> {
    const tier = this.#deps.tier;
    if (!tier) return undefined;
    const got = await tier.get(key);
    if (!got || !revisionServed(this.#deps.directory.snapshot(), r, got.revision)) return undefined;
    this.store.set(key, got);
    lead?.land(got);
    return this.#answered(got, "hit");
  }

  /** A stored answer that is young enough and whose revision the pool still serves. */
  #lookup(key: string, r: CacheRequest): Landing | undefined {
    const stored = this.store.get(key);
    if (!stored) return undefined;
    const workers = this.#deps.directory.snapshot();
    return revisionServed(workers, r, stored.revision) ? stored : undefined;
  }

  /** The client's copy of an answer the router already has. */
  #answered(answer: Landing, result: "hit" | "coalesced"): Response {
    this.#deps.metrics.cacheRequests.inc(RESULT_LABELS[result]);
    const headers = new Headers(answer.headers as [string, string][]);
    headers.set(H.cache, "hit");
    return new Response(answer.body as Uint8Array<ArrayBuffer>, { status: answer.status, headers });
  }

  /**
   * Send the request to a worker, its answer marked `result`; with a key, the answer is captured
   * (for `lead`'s followers and the store). Whatever happens, `lead` lands exactly once.
   */
  async #forward(
    r: CacheRequest,
    result: "miss" | "bypass",
    key: string | undefined,
    lead: Lead | undefined,
  ): Promise<Response> {
    this.#deps.metrics.cacheRequests.inc(RESULT_LABELS[result]);
    const maxBytes = this.#deps.settings.maxEntryBytes;
    let shaped = false;
    const shape: AnswerShaper = (answer, worker) => {
      shaped = true;
      const pairs = downstreamHeaderPairs(answer.headers);
      // Which worker computed the answer is fleet detail: kept with it (for the hits it answers)
      // only where clients are shown it; the route adds it to this answer the same way.
      if (this.#deps.exposeWorkerId) pairs.push([WORKER_ID_HEADER, worker.id]);
      const headers = new Headers(pairs);
      headers.set(H.cache, result);
      if (key === undefined) {
        const init = { status: answer.status, statusText: answer.statusText, headers };
        return new Response(answer.body as BodyInit | null, init);
      }
      return captureAnswer(answer, headers, maxBytes, (body) => {
        if (!body) return lead?.land(undefined);
        const revision = pairs.find(([k]) => k === REVISION_HEADER)?.[1];
        lead?.land({ status: answer.status, headers: pairs, body, revision });
        if (revision !== undefined && MODEL_REVISION_RE.test(revision)) {
          // In a buffer of its own: a view of a larger one would keep all of it alive.
          const own = exact(body);
          const stored = { status: answer.status, headers: pairs, body: own, revision };
          this.store.set(key, stored);
          this.#deps.tier?.set(key, stored);
        }
      });
    };
    try {
      return await r.send(shape);
    } finally {
      // No worker answer reached the client (no capacity, an error, the client gone).
      if (!shaped) lead?.land(undefined);
    }
  }
}

/**
 * True when a serving worker of the request's pool and bundle offers its model: only then is the
 * body read for a key. Otherwise the answer (202, a wait for capacity, 404) needs no body, and
 * forwarding gives it before any of the body is read.
 */
function offered(workers: readonly WorkerRecord[], r: CacheRequest): boolean {
  return workers.some((w) => isServing(w, r.pool, r.bundle) && modelsOf(w).has(r.model));
}

/**
 * Whether a stored answer's revision is still served: a serving worker of the request's pool and
 * bundle announces the request's model at that revision. A revision digests the weights' content,
 * the catalog entry and the worker's release (worker/registry/revision.ts), so while one is
 * announced a worker of the pool would compute the same answer; once none is (new weights, a new
 * release, the model unloaded everywhere) the entry is not served, and the next answer replaces
 * it. The same revision coming back (a restart with the same files) makes the entry valid again.
 */
function revisionServed(
  workers: readonly WorkerRecord[],
  r: CacheRequest,
  revision: string,
): boolean {
  return workers.some((w) =>
    isServing(w, r.pool, r.bundle) && modelsOf(w).get(r.model)?.revision === revision
  );
}

/**
 * `no-store` bypasses the cache, `no-cache` refreshes it (directive names in any case, several
 * headers joined by commas as `Headers` gives them).
 */
export function cacheModeOf(cacheControl: string | null): CacheMode {
  if (!cacheControl) return "use";
  let mode: CacheMode = "use";
  for (const part of cacheControl.split(",")) {
    const directive = part.split("=")[0].trim().toLowerCase();
    if (directive === "no-store") return "bypass";
    if (directive === "no-cache") mode = "refresh";
  }
  return mode;
}

/** The path and query of a request URL, as sent. */
function pathAndQuery(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  return start < 0 ? "/" : url.slice(start);
}
