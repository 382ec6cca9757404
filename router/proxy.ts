/**
 * Forwarding one API request to a worker: pick the worker, send the buffered body, stream the
 * answer back. A worker that cannot be reached, or that answers 503 because it is shutting down,
 * costs one retry on another eligible worker; a timeout is not retried (the work may be running).
 * Every other answer is the worker's and reaches the client as sent: 503 `MODEL_LOADING` with
 * its Retry-After (the client retries), and 502 `MODEL_LOAD_FAILED` at once, never retried here:
 * the catalog, hub and cluster cache that decided it are shared by the pool, and a retry would
 * start another doomed load. Selection ranks a worker whose load failed last, so later requests
 * go to workers without the failure when there are any.
 */
import { ServiceError } from "@svc/shared/errors";
import { HeaderNames as H } from "@svc/shared/headers";
import type { WorkerDirectory, WorkerRecord } from "./directory/types.ts";
import type { Logger } from "@svc/shared/log";
import type { RouterMetrics } from "./metrics/router_metrics.ts";
import type { LoadTracker } from "./pools/load.ts";
import { type Affinity, type SelectionRequest, selectWorker } from "./pools/selection.ts";

/** Everything forwarding needs. */
export interface ProxyDeps {
  directory: WorkerDirectory;
  load: LoadTracker;
  metrics: RouterMetrics;
  log: Logger;
  upstreamTimeoutMs: number;
  spillLoad: number;
  fetch?: typeof fetch;
}

/** Outcome of a forward. */
export type ForwardResult =
  | { kind: "response"; response: Response; worker: WorkerRecord }
  | { kind: "no_capacity" }
  | { kind: "not_served" };

/** Request headers never forwarded: hop-by-hop, the client's credentials, and encodings. */
const DROP_REQUEST = new Set([
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "authorization",
  "cookie",
  "content-length",
  // Deno's fetch decompresses transparently; asking the worker for gzip would only cost CPU.
  "accept-encoding",
]);

/** Response headers never passed back (hop-by-hop). */
const DROP_RESPONSE = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** Build the headers sent to the worker (a bulk copy, then removals: cheaper than a filter). */
function upstreamHeaders(incoming: Headers): Headers {
  const out = new Headers(incoming);
  for (const k of DROP_REQUEST) out.delete(k);
  return out;
}

/** Build the client response from the worker's (timing headers pass through). */
function downstreamResponse(res: Response, worker: WorkerRecord, body: BodyInit | null): Response {
  const out = new Response(body, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
  const headers = out.headers;
  for (const k of DROP_RESPONSE) headers.delete(k);
  // fetch already decoded a compressed body, so its encoding and length no longer apply.
  if (headers.has("content-encoding")) {
    headers.delete("content-encoding");
    headers.delete("content-length");
  }
  headers.set(H.workerId, worker.id);
  return out;
}

/** One attempt's outcome. */
type Attempt =
  | { kind: "ok"; response: Response }
  | { kind: "unreachable" }
  | { kind: "draining"; response: Response }
  | { kind: "timeout" }
  | { kind: "client_gone" };

/** Forward `req` (body already buffered) to a worker of `target`, retrying once when allowed. */
export async function forward(
  req: Request,
  body: Uint8Array<ArrayBuffer> | null,
  target: SelectionRequest,
  deps: ProxyDeps,
): Promise<ForwardResult> {
  const url = new URL(req.url);
  const pathAndQuery = url.pathname + url.search;
  const headers = upstreamHeaders(req.headers);
  const exclude = new Set<string>();
  let lastDraining: Response | undefined;
  let lastWorker: WorkerRecord | undefined;
  for (let attempt = 0; attempt < 2; attempt++) {
    const sel = selectWorker(deps.directory.snapshot(), target, {
      spillLoad: deps.spillLoad,
      inFlight: (id) => deps.load.inFlight(id),
      coolingDown: (id) => deps.load.coolingDown(id),
      exclude,
    });
    if (sel.kind !== "worker") {
      if (attempt === 0) return sel;
      break; // nothing else to retry on
    }
    const worker = sel.worker;
    lastWorker = worker;
    const r = await attemptOnce(
      req,
      body,
      headers,
      pathAndQuery,
      worker,
      sel.affinity,
      target,
      deps,
    );
    if (r.kind === "ok") return { kind: "response", response: r.response, worker };
    if (r.kind === "client_gone") {
      // Nobody reads the answer; 499-style status for logs and metrics only.
      return {
        kind: "response",
        response: new Response(null, { status: 499 }),
        worker,
      };
    }
    if (r.kind === "timeout") {
      throw new ServiceError(
        "GATEWAY_TIMEOUT",
        `worker ${worker.id} did not answer within ${deps.upstreamTimeoutMs} ms`,
      );
    }
    exclude.add(worker.id);
    deps.metrics.retries.inc([r.kind]);
    if (r.kind === "draining") lastDraining = r.response;
  }
  if (lastDraining && lastWorker) {
    return { kind: "response", response: lastDraining, worker: lastWorker };
  }
  throw new ServiceError("BAD_GATEWAY", "no worker of the pool could be reached");
}

async function attemptOnce(
  req: Request,
  body: Uint8Array<ArrayBuffer> | null,
  headers: Headers,
  pathAndQuery: string,
  worker: WorkerRecord,
  affinity: Affinity,
  target: SelectionRequest,
  deps: ProxyDeps,
): Promise<Attempt> {
  const doFetch = deps.fetch ?? fetch;
  const timeout = AbortSignal.timeout(deps.upstreamTimeoutMs);
  // The client going away cancels the worker's request too (it drops work of gone clients).
  const signal = AbortSignal.any([timeout, req.signal]);
  const done = deps.load.begin(worker.id);
  deps.metrics.upstream.inc([worker.id, target.pool, target.bundle, affinity]);
  let res: Response;
  try {
    res = await doFetch(worker.url + pathAndQuery, {
      method: req.method,
      headers,
      body: body && body.byteLength > 0 ? body : undefined,
      signal,
      redirect: "manual",
    });
  } catch (err) {
    if (req.signal.aborted) return { kind: "client_gone" };
    if (timeout.aborted) {
      deps.metrics.upstreamErrors.inc([worker.id, "timeout"]);
      deps.log("warn", "worker timed out", { worker_id: worker.id, path: pathAndQuery });
      return { kind: "timeout" };
    }
    deps.metrics.upstreamErrors.inc([worker.id, "unreachable"]);
    deps.load.coolDown(worker.id);
    deps.log("warn", "worker unreachable", { worker_id: worker.id, error: (err as Error).name });
    return { kind: "unreachable" };
  } finally {
    // Counted until the answer's headers arrive: inference is over by then, only bytes remain.
    done();
  }
  if (res.status === 503 && (await isShuttingDown(res))) {
    deps.metrics.upstreamErrors.inc([worker.id, "draining"]);
    deps.load.coolDown(worker.id);
    return { kind: "draining", response: downstreamResponse(res, worker, res.body) };
  }
  return { kind: "ok", response: downstreamResponse(res, worker, res.body) };
}

/**
 * True when a 503 says the worker is shutting down (its body is then consumed; the caller uses
 * a rebuilt response). Other 503s (queue full, model loading) are the worker's answer to keep.
 */
async function isShuttingDown(res: Response): Promise<boolean> {
  const copy = res.clone();
  try {
    const body = await copy.json() as { detail?: { code?: string } };
    return body?.detail?.code === "SHUTTING_DOWN";
  } catch {
    return false;
  } finally {
    await copy.body?.cancel().catch(() => {});
  }
}
