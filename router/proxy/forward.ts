/**
 * Forwarding one API request to a worker: pick the worker, send the buffered body, stream the
 * answer back. A worker that never received the request whole (the connection refused, or closed
 * with part of it unsent or unread), or that answers 503 because it is shutting down, costs one retry
 * on another eligible worker. A worker that received it whole and then dropped the connection
 * without an answer is not retried anywhere: the request may be what killed it (a poison request
 * retried takes down the next worker too), so the client gets 502 `WORKER_LOST` and the worker is
 * skipped while any other can serve. A timeout is not retried either (the work may be running).
 * Every other answer is the worker's and reaches the client (status, body, the API's headers): 503
 * `MODEL_LOADING` with its Retry-After (the client retries), and 502 `MODEL_LOAD_FAILED` at once,
 * never retried here: the catalog, hub and cluster cache that decided it are shared by the pool,
 * and a retry would start another doomed load. Selection ranks a worker whose load failed last,
 * so later requests go to workers without the failure when there are any.
 *
 * Paths to a worker, the most direct first: this router's own connection to it, HTTP to its
 * advertised URL, and last a relay through KV to the router instance holding its connection
 * (router/fleet/relay/), for a pool whose live workers this router cannot reach at all.
 */
import { ServiceError } from "@svc/shared/errors";
import type { BodyChunks } from "@svc/shared/http/read_body";
import type { Logger } from "@svc/shared/log";
import type { WorkerDirectory, WorkerRecord } from "../directory/types.ts";
import type { RouterMetrics } from "../metrics/router_metrics.ts";
import type { LoadTracker } from "../pools/load.ts";
import { type SelectionRequest, selectWorker } from "../pools/selection.ts";
import { upstreamHeaders, withWorkerAuth } from "./headers.ts";
import { sendUpstream, type UpstreamOutcome, type UpstreamRequest } from "./upstream.ts";
import { sendOverStream } from "./stream_upstream.ts";
import type { StreamMux } from "@svc/shared/fleet/streams/mux";
import type { WorkerAuth } from "./worker_auth.ts";
import type { ReplayPolicy } from "./replay.ts";
import type { RelayClient } from "../fleet/relay/client.ts";
import {
  attemptOnce,
  downstreamResponse,
  finalResult,
  readCounted,
  type Sender,
  workerLost,
} from "./attempt.ts";
import { relayForward, relayTarget } from "./relay_forward.ts";

export { downstreamResponse } from "./attempt.ts";

/** Everything forwarding needs. */
export interface ProxyDeps {
  directory: WorkerDirectory;
  load: LoadTracker;
  metrics: RouterMetrics;
  log: Logger;
  upstreamTimeoutMs: number;
  spillLoad: number;
  /** The `Authorization` each worker is sent (its own key: router/proxy/worker_auth.ts). */
  workerAuth?: WorkerAuth;
  /** Which dropped requests go once more to another worker (replay.ts); absent: none. */
  replay?: ReplayPolicy;
  /**
   * The request streams of a worker's connection held by this router (connection transport),
   * and how to close that connection when the worker breaks the protocol.
   */
  streams?: (worker: WorkerRecord) => WorkerStreams | undefined;
  /**
   * The relay to other router instances through KV (KV mode): the path to workers whose
   * connection only another instance holds. Absent: such workers are `elsewhere`.
   */
  relay?: Pick<RelayClient, "routerId" | "maxBodyBytes" | "send">;
}

/** A worker's connection as forwarding uses it. */
export interface WorkerStreams {
  mux: StreamMux;
  violation(reason: string): void;
}

/** Outcome of a forward. */
export type ForwardResult =
  | { kind: "response"; response: Response; worker: WorkerRecord }
  | { kind: "no_capacity" }
  | { kind: "not_served" }
  /**
   * The pool's live workers take requests only over connections other router instances hold
   * (a worker whose router died is a moment from dialling another): hold, do not provision.
   */
  | { kind: "elsewhere" };

/** A worker's answer, as the router received it. */
export type WorkerAnswer = Extract<UpstreamOutcome, { kind: "answer" }>;

/**
 * Turns the worker's answer that goes to the client into the client's `Response` (the result
 * cache captures it on the way); the default is {@link downstreamResponse}.
 */
export type AnswerShaper = (answer: WorkerAnswer, worker: WorkerRecord) => Response;

/** The request body, read when first asked for (a request with no worker to go to never reads it). */
export type BodyReader = () => Promise<BodyChunks | null>;

/**
 * Forward `req` to a worker of `target`, retrying once when allowed. The body is read only once a
 * worker is selected: without one (no capacity, model not served) the answer needs none of it.
 * `delivered` settles once the client's answer has been sent or abandoned (Deno.serve's
 * `completed`); until then the upstream deadline also covers the answer's body. `shape` builds
 * the client's `Response` from the worker's answer that is passed on (not from one retried).
 */
export async function forward(
  req: Request,
  readBody: BodyReader,
  target: SelectionRequest,
  deps: ProxyDeps,
  delivered?: Promise<void>,
  shape: AnswerShaper = downstreamResponse,
): Promise<ForwardResult> {
  const url = new URL(req.url);
  const pathAndQuery = url.pathname + url.search;
  const headers = upstreamHeaders(req.headers);
  const exclude = unreachableHere(deps);
  let lastDraining: Response | undefined;
  let lastWorker: WorkerRecord | undefined;
  let lostAnswer: ForwardResult | undefined;
  for (let attempt = 0; attempt < 2; attempt++) {
    const sel = selectWorker(deps.directory.snapshot(), target, {
      spillLoad: deps.spillLoad,
      inFlight: (id) => deps.load.inFlight(id),
      coolingDown: (id) => deps.load.coolingDown(id),
      exclude,
    });
    if (sel.kind !== "worker") {
      if (attempt > 0) break; // nothing else to retry on
      if (exclude.size === 0) return sel;
      const relayed = relayTarget(target, deps);
      if (relayed) {
        return await relayForward(
          req,
          readBody,
          headers,
          pathAndQuery,
          relayed,
          target,
          deps,
          shape,
        );
      }
      const anywhere = selectWorker(deps.directory.snapshot(), target, {
        spillLoad: deps.spillLoad,
        inFlight: (id) => deps.load.inFlight(id),
        coolingDown: (id) => deps.load.coolingDown(id),
      });
      return anywhere.kind === "worker" ? { kind: "elsewhere" } : sel;
    }
    const worker = sel.worker;
    lastWorker = worker;
    // The retry budget's base: requests sent to a worker, not each poll of one that waits.
    if (attempt === 0) deps.replay?.sent();
    // Counted from the choice on, before any await: requests routed meanwhile see this one.
    const done = deps.load.begin(worker.id);
    const body = await readCounted(readBody, done);
    headers["content-length"] = String(body?.length ?? 0);
    const direct: Sender = async (request) =>
      sendToWorker(worker, deps, {
        ...request,
        headers: withWorkerAuth(request.headers, await deps.workerAuth?.(worker.id)),
      });
    const r = await attemptOnce({
      req,
      body,
      headers,
      pathAndQuery,
      worker,
      affinity: sel.affinity,
      target,
      delivered,
      done,
      shape,
      send: direct,
    }, deps);
    const final = finalResult(r, worker, deps);
    if (final) return final;
    if (r.kind === "dropped") {
      const answer = workerLost(worker);
      if (attempt > 0 || !deps.replay?.dropped(body, worker.conn_id)) return answer;
      // A bystander of the worker's death (replay.ts): once more, elsewhere, if there is one.
      lostAnswer = answer;
      exclude.add(worker.id);
      deps.metrics.retries.inc({ reason: "dropped" });
      continue;
    }
    exclude.add(worker.id);
    deps.metrics.retries.inc({ reason: r.kind });
    if (r.kind === "draining") lastDraining = r.response;
  }
  if (lostAnswer) return lostAnswer;
  if (lastDraining && lastWorker) {
    return { kind: "response", response: lastDraining, worker: lastWorker };
  }
  throw new ServiceError("BAD_GATEWAY", "no worker of the pool could be reached");
}

/**
 * Ids of the live workers this router cannot reach: connection transport, no advertised URL,
 * and their connection held by another router instance (or gone, the record not yet stale).
 */
function unreachableHere(deps: ProxyDeps): Set<string> {
  const out = new Set<string>();
  if (!deps.streams) return out;
  for (const w of deps.directory.snapshot()) {
    if (w.transport === "connection" && !w.url && !deps.streams(w)) out.add(w.id);
  }
  return out;
}

/**
 * Send over the worker's connection when it takes requests there and this router holds it, else
 * over HTTP to its advertised URL (none: it cannot be reached from here, as a refused connect).
 */
function sendToWorker(
  worker: WorkerRecord,
  deps: ProxyDeps,
  request: UpstreamRequest,
): Promise<UpstreamOutcome> {
  if (worker.transport === "connection") {
    const streams = deps.streams?.(worker);
    if (streams) return sendOverStream(streams.mux, request, streams.violation);
  }
  if (!worker.url) {
    return Promise.resolve({ kind: "not_delivered", error: "no connection to the worker here" });
  }
  return sendUpstream(request);
}
