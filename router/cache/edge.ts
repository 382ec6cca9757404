/**
 * The result cache's part in one model request (encode, score, extract, embeddings, the Cohere
 * routes). In order:
 *
 * 1. `Cache-Control: no-store` bypasses everything: no lookup, no coalescing, nothing stored.
 *    `no-cache` asks for a fresh answer: no lookup and no coalescing, but the fresh answer
 *    replaces the stored one. Both answer `X-SVC-Cache: bypass`.
 * 2. A request no serving worker of its pool offers a model for goes on as before (202, a wait for
 *    capacity, 404): no answer can be valid there, and such a request never reads its body.
 * 3. The body is read and the key made (key.ts). A stored answer is a hit while the worker
 *    connection that computed it is still registered, serving the pool, and announcing the
 *    model at the answer's revision: its status, headers and body as first sent, plus
 *    `X-SVC-Cache: hit` and the request's own `X-Trace-ID`.
 * 4. An identical request in flight is followed (flights.ts): its answer is shared as a hit; when
 *    it fails or is abandoned, its followers coalesce again behind one of them (a bounded number
 *    of rounds, then each goes alone: failures are not shared).
 * 5. Otherwise the request leads a flight and goes to a worker (`X-SVC-Cache: miss`); its answer
 *    is captured on the way to the client (capture.ts), shared with its followers, and stored
 *    when the router can vouch for it (see {@link vouches}).
 *
 * Trust: a worker holds only the fleet's token, and may be a rogue that announces the real
 * revision and forges answers. So an entry remembers the connection that produced it and lives
 * only as long as that connection: a worker that leaves, is refused or is drained by an operator
 * takes its entries with it (purged by producer, as a CDN purges by surrogate key). With the
 * fleet's worker secret set, answers of workers that did not prove their id (`unverified-…`)
 * are never stored. What a worker answered while connected can still reach other clients of the
 * same tenant while it stays: see docs/security.md.
 */
import { ServiceError } from "@svc/shared/errors";
import { HeaderNames as H } from "@svc/shared/headers";
import type { BodyChunks } from "@svc/shared/http/read_body";
import { MODEL_REVISION_RE } from "@svc/shared/fleet/protocol";
import { traceIdOf } from "@svc/shared/http/request_id";
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
import { ASSIGNED_ID_PREFIX } from "../fleet/identity.ts";
import type { SecondTier } from "./kv_tier.ts";

/** `X-SVC-Model-Revision` as the kept header pairs name it (lower case). */
const REVISION_HEADER = H.modelRevision.toLowerCase();

/** `X-SVC-Worker-ID` as the kept header pairs name it (lower case). */
const WORKER_ID_HEADER = H.workerId.toLowerCase();

/** `X-Trace-ID` as the kept header pairs name it (lower case). */
const TRACE_ID_HEADER = H.traceId.toLowerCase();

/**
 * How many times the followers of a flight that landed with nothing coalesce again behind a new
 * leader before each goes to a worker alone: a request that fails every time (a bad body, a
 * worker that dies of it) costs a few serial attempts, never one per follower at once.
 */
const MAX_FLIGHT_ROUNDS = 3;

/** How often entries of workers that left are purged when no request comes to do it. */
const SWEEP_INTERVAL_MS = 1000;

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
  /**
   * The fleet has a worker secret (`SVC_WORKER_API_KEY`): answers of workers without a proven
   * id are never stored.
   */
  requireProvenWorkers: boolean;
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
  readonly #sweeper: ReturnType<typeof setInterval>;
  /** The snapshot last swept (the memory directory hands out the same one until a change). */
  #swept: readonly WorkerRecord[] | undefined;

  constructor(deps: ResultCacheDeps) {
    this.#deps = deps;
    this.tier = deps.tier;
    this.store = new ResultStore({ ...deps.settings, now: deps.now });
    this.#sweeper = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
  }

  /** Stop the background sweep. */
  close(): void {
    clearInterval(this.#sweeper);
  }

  /**
   * Drop every entry of producers no longer registered (a worker that left, was refused or went
   * silent, here or on another router instance); the number dropped.
   */
  sweep(): number {
    const workers = this.#deps.directory.snapshot();
    if (workers === this.#swept || this.store.size === 0) return 0;
    this.#swept = workers;
    const live = new Set<string>();
    for (const w of workers) live.add(w.conn_id);
    let dropped = 0;
    for (const producer of [...this.store.producers()]) {
      if (!live.has(producer)) dropped += this.store.purge(producer);
    }
    return dropped;
  }

  /** Drop every entry `worker` produced (an operator drained it: it vouches for nothing). */
  purgeWorker(worker: WorkerRecord): number {
    return this.store.purge(worker.conn_id);
  }

  /** Answer one request: from the store, from a flight, or from a worker (see the module doc). */
  async answer(r: CacheRequest): Promise<Response> {
    const mode = cacheModeOf(r.req.headers.get("cache-control"));
    if (mode === "bypass") return await this.#forward(r, "bypass", undefined, undefined);
    const workers = this.#deps.directory.snapshot();
    if (!offered(workers, r)) {
      return await this.#forward(r, "miss", undefined, undefined);
    }
    this.sweep();
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
    const started = Date.now();
    for (let round = 0;; round++) {
      const hit = this.#lookup(key, r);
      if (hit) return this.#answered(hit, "hit", r.req);
      const landed = this.flights.follow(key);
      if (!landed) {
        const lead = this.flights.lead(key);
        return await this.#fromTier(key, r, lead) ?? await this.#forward(r, "miss", key, lead);
      }
      const left = Math.max(0, r.timeoutMs - (Date.now() - started));
      const waited = await awaitLanding(landed, r.req.signal, left);
      if (waited.kind === "landed") return this.#answered(waited.answer, "coalesced", r.req);
      // Nobody reads the answer; 499-style status for logs and metrics only.
      if (waited.kind === "client_gone") return new Response(null, { status: 499 });
      if (waited.kind === "timeout") {
        throw new ServiceError(
          "GATEWAY_TIMEOUT",
          `an identical request in flight was not answered within ${r.timeoutMs} ms`,
        );
      }
      // Its flight failed or was abandoned: the next round, one follower leads and the others
      // follow it; after a few rounds each goes alone (a failure is never shared).
      if (round + 1 >= MAX_FLIGHT_ROUNDS) return await this.#forward(r, "miss", key, undefined);
    }
  }

  /**
   * A local miss asks the shared tier (KV: other router instances' answers). A stored answer
   * counts under the local tier's rule (its producer still vouches for it, {@link #lookup}); a
   * hit is kept locally too and lands `lead` (its followers share it). Undefined: go to a worker.
   */
  async #fromTier(
    key: string,
    r: CacheRequest,
    lead: Lead | undefined,
  ): Promise<Response | undefined> {
    const tier = this.#deps.tier;
    if (!tier) return undefined;
    const got = await tier.get(key);
    if (!got) return undefined;
    const producer = this.#deps.directory.snapshot().find((w) => w.conn_id === got.producer);
    if (
      !producer || !isServing(producer, r.pool, r.bundle) ||
      modelsOf(producer).get(r.model)?.revision !== got.revision
    ) return undefined;
    this.store.set(key, got, got.storedAt);
    lead?.land(got);
    return this.#answered(got, "hit", r.req);
  }

  /**
   * A stored answer that is young enough and whose producer still vouches for it: that worker
   * connection is registered, serves the request's pool and bundle, and announces the model at
   * the answer's revision. An entry whose producer has gone is dropped with all of its others.
   */
  #lookup(key: string, r: CacheRequest): Landing | undefined {
    const stored = this.store.get(key);
    if (!stored) return undefined;
    const producer = this.#deps.directory.snapshot().find((w) => w.conn_id === stored.producer);
    if (!producer) {
      this.store.purge(stored.producer);
      return undefined;
    }
    return isServing(producer, r.pool, r.bundle) &&
        modelsOf(producer).get(r.model)?.revision === stored.revision
      ? stored
      : undefined;
  }

  /** Whether the router vouches for `worker`'s answer at `revision` ({@link vouchesFor}). */
  #vouches(worker: WorkerRecord, model: string, revision: string): boolean {
    const workers = this.#deps.directory.snapshot();
    return vouchesFor(workers, worker, model, revision, this.#deps.requireProvenWorkers);
  }

  /** The client's copy of an answer the router already has. */
  #answered(answer: Landing, result: "hit" | "coalesced", req: Request): Response {
    this.#deps.metrics.cacheRequests.inc(RESULT_LABELS[result]);
    const headers = new Headers(answer.headers as [string, string][]);
    headers.set(H.cache, "hit");
    // The trace id is this request's own (the one it sent, or a new one), never the first
    // requester's: a trace must not join two clients' requests.
    if (headers.has(TRACE_ID_HEADER)) {
      headers.set(H.traceId, traceIdOf(req.headers.get(H.traceId) ?? undefined));
    }
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
        const producer = worker.conn_id;
        lead?.land({ status: answer.status, headers: pairs, body, revision, producer });
        if (revision !== undefined && this.#vouches(worker, r.model, revision)) {
          // In a buffer of its own: a view of a larger one would keep all of it alive.
          const own = exact(body);
          const stored = { status: answer.status, headers: pairs, body: own, revision, producer };
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
 * Whether the router vouches for an answer of `worker` at `revision`, so that it may be stored:
 * the revision is well-formed and is the one the worker announced for the model, the worker's
 * connection is still registered (it may have left while its answer streamed), and, when the
 * fleet has a worker secret, its id was proven (not `unverified-…`).
 */
function vouchesFor(
  workers: readonly WorkerRecord[],
  worker: WorkerRecord,
  model: string,
  revision: string,
  requireProven: boolean,
): boolean {
  if (!MODEL_REVISION_RE.test(revision)) return false;
  if (requireProven && worker.id.startsWith(ASSIGNED_ID_PREFIX)) return false;
  const now = workers.find((w) => w.conn_id === worker.conn_id);
  return now !== undefined && modelsOf(now).get(model)?.revision === revision;
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
