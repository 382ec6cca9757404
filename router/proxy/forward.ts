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
import { errorResponse, ServiceError } from "@svc/shared/errors";
import { HeaderNames as H } from "@svc/shared/headers";
import type { BodyChunks } from "@svc/shared/http/read_body";
import type { Logger } from "@svc/shared/log";
import type { WorkerDirectory, WorkerRecord } from "../directory/types.ts";
import type { RouterMetrics } from "../metrics/router_metrics.ts";
import type { LoadTracker } from "../pools/load.ts";
import { type Affinity, type SelectionRequest, selectWorker } from "../pools/selection.ts";
import { UpstreamCancel } from "./cancel.ts";
import { downstreamHeaders, upstreamHeaders, withWorkerAuth } from "./headers.ts";
import { sendUpstream, type UpstreamOutcome, type UpstreamRequest } from "./upstream.ts";
import { sendOverStream } from "./stream_upstream.ts";
import type { StreamMux } from "@svc/shared/fleet/streams/mux";
import type { WorkerAuth } from "./worker_auth.ts";
import type { ReplayPolicy } from "./replay.ts";
import type { RelayClient, RelayOutcome } from "../fleet/relay/client.ts";

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

/** The client's answer from the worker's: its status, allow-listed headers and body. */
export function downstreamResponse(res: WorkerAnswer): Response {
  return new Response(res.body as BodyInit | null, {
    status: res.status,
    statusText: res.statusText,
    headers: downstreamHeaders(res.headers),
  });
}

/** One attempt's outcome. */
type Attempt =
  | { kind: "ok"; response: Response }
  | { kind: "unreachable" }
  | { kind: "dropped" }
  | { kind: "draining"; response: Response }
  | { kind: "timeout" }
  | { kind: "client_gone" }
  /** Relayed: the holding instance never picked the request up (it reached no worker). */
  | { kind: "not_picked_up" }
  /** Relayed: the worker's answer is larger than the relay carries. */
  | { kind: "too_large"; bytes: number };

/** Sends one request to the chosen worker, directly or through the relay. */
type Sender = (request: UpstreamRequest) => Promise<RelayOutcome>;

/** The request body, read when first asked for (a request with no worker to go to never reads it). */
export type BodyReader = () => Promise<BodyChunks | null>;

/**
 * Headers of the `WORKER_LOST` answer: the OpenAI client libraries retry a 502 unless told not to,
 * and a retried poison request would take down the next worker.
 */
const NO_RETRY = { [H.shouldRetry]: "false" } as const;

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
    let body: BodyChunks | null;
    try {
      body = await readBody();
    } catch (err) {
      done();
      throw err;
    }
    headers["content-length"] = String(body?.length ?? 0);
    const direct: Sender = async (request) =>
      sendToWorker(worker, deps, {
        ...request,
        headers: withWorkerAuth(request.headers, await deps.workerAuth?.(worker.id)),
      });
    const r = await attemptOnce(
      req,
      body,
      headers,
      pathAndQuery,
      worker,
      sel.affinity,
      target,
      deps,
      delivered,
      done,
      shape,
      direct,
    );
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

/** The result of an attempt that ends forwarding whatever path it took; undefined: others. */
function finalResult(r: Attempt, worker: WorkerRecord, deps: ProxyDeps): ForwardResult | undefined {
  if (r.kind === "ok") return { kind: "response", response: r.response, worker };
  if (r.kind === "client_gone") {
    // Nobody reads the answer; 499-style status for logs and metrics only.
    return { kind: "response", response: new Response(null, { status: 499 }), worker };
  }
  if (r.kind === "timeout") {
    throw new ServiceError(
      "GATEWAY_TIMEOUT",
      `the worker did not answer within ${deps.upstreamTimeoutMs} ms (SVC_UPSTREAM_TIMEOUT_MS)`,
    );
  }
  return undefined;
}

/** 502 `WORKER_LOST`: the worker received the request whole and dropped it unanswered. */
function workerLost(worker: WorkerRecord): ForwardResult {
  const lost = new ServiceError(
    "WORKER_LOST",
    "the worker serving this request dropped the connection before answering (it may have " +
      "crashed); the request was not retried on another worker because it may be what " +
      "crashed the first: check it before sending it again",
  );
  return { kind: "response", response: errorResponse(lost, NO_RETRY), worker };
}

/** A worker of the pool only the relay reaches, and how it ranks; undefined: none. */
function relayTarget(
  target: SelectionRequest,
  deps: ProxyDeps,
): { worker: WorkerRecord; affinity: Affinity } | undefined {
  const relay = deps.relay;
  if (!relay) return undefined;
  const workers = deps.directory.snapshot();
  // Held by another live instance (the snapshot keeps only records whose holder is live): a
  // record naming this instance without a socket here is one that just closed.
  const other = new Set<string>();
  for (const w of workers) {
    const relayable = w.transport === "connection" && !w.url && w.router_id !== relay.routerId &&
      !deps.streams?.(w);
    if (!relayable) other.add(w.id);
  }
  const sel = selectWorker(workers, target, {
    spillLoad: deps.spillLoad,
    inFlight: (id) => deps.load.inFlight(id),
    coolingDown: (id) => deps.load.coolingDown(id),
    exclude: other,
  });
  return sel.kind === "worker" ? { worker: sel.worker, affinity: sel.affinity } : undefined;
}

/**
 * Forward through the relay to the instance holding `chosen`'s connection: one attempt, since
 * every other path was tried first. A request the holder never picked up, or whose worker it no
 * longer holds, reached no worker: the pool is `elsewhere` again (held, then 503, as before).
 */
async function relayForward(
  req: Request,
  readBody: BodyReader,
  headers: Record<string, string>,
  pathAndQuery: string,
  chosen: { worker: WorkerRecord; affinity: Affinity },
  target: SelectionRequest,
  deps: ProxyDeps,
  shape: AnswerShaper,
): Promise<ForwardResult> {
  const relay = deps.relay!;
  const worker = chosen.worker;
  deps.replay?.sent();
  const done = deps.load.begin(worker.id);
  let body: BodyChunks | null;
  try {
    body = await readBody();
  } catch (err) {
    done();
    throw err;
  }
  const size = body?.length ?? 0;
  if (size > relay.maxBodyBytes) {
    done();
    throw new ServiceError(
      "NO_CAPACITY",
      `the workers of pool "${target.pool}" are connected to other router instances only, and ` +
        `a request body of ${size} bytes is over what is relayed between instances ` +
        `(SVC_RELAY_MAX_BODY_BYTES=${relay.maxBodyBytes}): send a smaller body, raise ` +
        "SVC_RELAY_MAX_BODY_BYTES, or list every instance in the workers' SVC_ROUTER_URL",
      { retryAfterS: 1 },
    );
  }
  headers["content-length"] = String(size);
  const holder = worker.router_id;
  const held = () =>
    deps.directory.snapshot().some((w) => w.id === worker.id && w.router_id === holder);
  const send: Sender = (request) => relay.send(holder, worker.id, request, held);
  // The answer arrives whole: the upstream deadline ends with it.
  const r = await attemptOnce(
    req,
    body,
    headers,
    pathAndQuery,
    worker,
    chosen.affinity,
    target,
    deps,
    undefined,
    done,
    shape,
    send,
  );
  const final = finalResult(r, worker, deps);
  if (final) return final;
  if (r.kind === "dropped") return workerLost(worker);
  if (r.kind === "draining") return { kind: "response", response: r.response, worker };
  if (r.kind === "too_large") {
    throw new ServiceError(
      "BAD_GATEWAY",
      `the worker's answer of ${r.bytes} bytes is over what is relayed between router ` +
        `instances (SVC_RELAY_MAX_BODY_BYTES=${relay.maxBodyBytes}); raise it, or list every ` +
        "instance in the workers' SVC_ROUTER_URL",
    );
  }
  return { kind: "elsewhere" };
}

async function attemptOnce(
  req: Request,
  body: BodyChunks | null,
  headers: Readonly<Record<string, string>>,
  pathAndQuery: string,
  worker: WorkerRecord,
  affinity: Affinity,
  target: SelectionRequest,
  deps: ProxyDeps,
  delivered: Promise<void> | undefined,
  /** Ends the worker's in-flight count (begun when it was chosen). */
  done: () => void,
  shape: AnswerShaper,
  send: Sender,
): Promise<Attempt> {
  // The client going away cancels the worker's request too (it drops work of gone clients).
  const cancel = new UpstreamCancel(req.signal, deps.upstreamTimeoutMs);
  deps.metrics.upstream.inc({
    worker_id: worker.id,
    pool: target.pool,
    bundle: target.bundle,
    affinity,
  });
  const res = await send({
    base: worker.url,
    method: req.method,
    path: pathAndQuery,
    headers,
    body,
    signal: cancel.signal,
  });
  // Counted until the answer's headers arrive: inference is over by then, only bytes remain.
  done();
  if (res.kind === "too_large") {
    cancel.release();
    return res;
  }
  if (res.kind !== "answer") {
    cancel.release();
    if (cancel.cause === "client_gone" || req.signal.aborted) return { kind: "client_gone" };
    if (cancel.cause === "timeout") {
      deps.metrics.upstreamErrors.inc({ worker_id: worker.id, kind: "timeout" });
      deps.log("warn", "worker timed out", { worker_id: worker.id, path: pathAndQuery });
      return { kind: "timeout" };
    }
    // Skipped while any other worker can serve: a dead worker's socket may stay registered for
    // a moment, and a live one that drops connections is not the first choice either.
    deps.load.coolDown(worker.id);
    if (res.kind === "dropped") {
      deps.metrics.upstreamErrors.inc({ worker_id: worker.id, kind: "dropped" });
      deps.log(
        "warn",
        "worker dropped a request it had received (replayed elsewhere only when it cannot be the cause)",
        {
          worker_id: worker.id,
          path: pathAndQuery,
          error: res.error,
        },
      );
      return { kind: "dropped" };
    }
    deps.metrics.upstreamErrors.inc({ worker_id: worker.id, kind: "unreachable" });
    deps.log("warn", "worker unreachable: the request did not reach it whole", {
      worker_id: worker.id,
      error: res.kind === "not_delivered"
        ? res.error
        : res.kind === "not_picked_up"
        ? "relay not picked up by the holding router"
        : "aborted",
    });
    return { kind: res.kind === "not_picked_up" ? "not_picked_up" : "unreachable" };
  }
  if (res.status === 503 && isShuttingDown(res)) {
    cancel.release();
    deps.metrics.upstreamErrors.inc({ worker_id: worker.id, kind: "draining" });
    deps.load.coolDown(worker.id);
    return { kind: "draining", response: downstreamResponse(res) };
  }
  // The deadline keeps covering the body until the client has it; without a delivery signal
  // (an app called outside Deno.serve) it ends with the headers.
  if (delivered) delivered.then(() => cancel.release(), () => cancel.release());
  else cancel.release();
  return { kind: "ok", response: shape(res, worker) };
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

/**
 * True when a 503 says the worker is shutting down. Other 503s (queue full, model loading) are
 * the worker's answer to keep. Error answers are small, so they arrive whole.
 */
function isShuttingDown(res: WorkerAnswer): boolean {
  if (!(res.body instanceof Uint8Array)) return false;
  try {
    const body = JSON.parse(new TextDecoder().decode(res.body)) as { detail?: { code?: string } };
    return body?.detail?.code === "SHUTTING_DOWN";
  } catch {
    return false;
  }
}
