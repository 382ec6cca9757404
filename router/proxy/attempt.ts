/**
 * One attempt to have a worker answer, whichever path carries it (its own connection or HTTP,
 * router/proxy/forward.ts; the relay through KV, router/proxy/relay_forward.ts): the request sent,
 * the upstream deadline and the client's going away applied, and the outcome classified the same
 * way, so every path answers the client alike (504, 499, 502 `WORKER_LOST`, a draining worker).
 */
import { errorResponse, ServiceError } from "@svc/shared/errors";
import { HeaderNames as H } from "@svc/shared/headers";
import type { BodyChunks } from "@svc/shared/http/read_body";
import type { WorkerRecord } from "../directory/types.ts";
import type { Affinity, SelectionRequest } from "../pools/selection.ts";
import type { RelayOutcome } from "../fleet/relay/client.ts";
import { UpstreamCancel } from "./cancel.ts";
import { downstreamHeaders } from "./headers.ts";
import type { UpstreamRequest } from "./upstream.ts";
import type { AnswerShaper, ForwardResult, ProxyDeps, WorkerAnswer } from "./forward.ts";

/** The client's answer from the worker's: its status, allow-listed headers and body. */
export function downstreamResponse(res: WorkerAnswer): Response {
  return new Response(res.body as BodyInit | null, {
    status: res.status,
    statusText: res.statusText,
    headers: downstreamHeaders(res.headers),
  });
}

/** One attempt's outcome. */
export type Attempt =
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
export type Sender = (request: UpstreamRequest) => Promise<RelayOutcome>;

/**
 * Headers of the `WORKER_LOST` answer: the OpenAI client libraries retry a 502 unless told not to,
 * and a retried poison request would take down the next worker.
 */
const NO_RETRY = { [H.shouldRetry]: "false" } as const;

/** The result of an attempt that ends forwarding whatever path it took; undefined: others. */
export function finalResult(
  r: Attempt,
  worker: WorkerRecord,
  deps: ProxyDeps,
): ForwardResult | undefined {
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

/**
 * The body, read once the worker's load counts the request (`done` ends that count); a body that
 * cannot be read ends it before the error goes on.
 */
export async function readCounted(
  readBody: () => Promise<BodyChunks | null>,
  done: () => void,
): Promise<BodyChunks | null> {
  try {
    return await readBody();
  } catch (err) {
    done();
    throw err;
  }
}

/** 502 `WORKER_LOST`: the worker received the request whole and dropped it unanswered. */
export function workerLost(worker: WorkerRecord): ForwardResult {
  const lost = new ServiceError(
    "WORKER_LOST",
    "the worker serving this request dropped the connection before answering (it may have " +
      "crashed); the request was not retried on another worker because it may be what " +
      "crashed the first: check it before sending it again",
  );
  return { kind: "response", response: errorResponse(lost, NO_RETRY), worker };
}

/** One attempt: the client's request, the worker chosen for it, and how to send and answer. */
export interface AttemptSpec {
  req: Request;
  body: BodyChunks | null;
  headers: Readonly<Record<string, string>>;
  pathAndQuery: string;
  worker: WorkerRecord;
  affinity: Affinity;
  target: SelectionRequest;
  /** Settles once the answer reached the client (the deadline covers the body until then). */
  delivered: Promise<void> | undefined;
  /** Ends the worker's in-flight count (begun when it was chosen). */
  done: () => void;
  shape: AnswerShaper;
  send: Sender;
}

/** Send one request to `worker` by `send` and classify what came back (both paths share it). */
export async function attemptOnce(a: AttemptSpec, deps: ProxyDeps): Promise<Attempt> {
  const { req, body, headers, pathAndQuery, worker, affinity, target, delivered, done } = a;
  const { shape, send } = a;
  // The client going away cancels the worker's request too (it drops work of gone clients).
  const cancel = new UpstreamCancel(req.signal, deps.upstreamTimeoutMs);
  deps.metrics.upstream.inc({
    worker_id: worker.id,
    pool: target.pool,
    bundle: target.bundle,
    affinity,
  });
  let res: RelayOutcome;
  try {
    res = await send({
      base: worker.url,
      method: req.method,
      path: pathAndQuery,
      headers,
      body,
      signal: cancel.signal,
    });
  } catch (err) {
    // A sender that throws (not one of its outcomes) must not leave the worker counted busy.
    done();
    cancel.release();
    throw err;
  }
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
    // The holding instance, not the worker, failed to take it (counted by the relay's metric):
    // the worker keeps its place.
    if (res.kind === "not_picked_up") return { kind: "not_picked_up" };
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
      error: res.kind === "not_delivered" ? res.error : "aborted",
    });
    return { kind: "unreachable" };
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
