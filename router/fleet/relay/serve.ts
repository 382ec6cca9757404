/**
 * How the holder serves a relayed request: over the worker's connection held here, with the
 * worker's own credential (router/proxy/worker_auth.ts), exactly as forwarding sends a local
 * request; counted in the worker's in-flight load until the answer's head arrives.
 */
import type { LoadTracker } from "../../pools/load.ts";
import type { WorkerStreams } from "../../proxy/forward.ts";
import { withWorkerAuth } from "../../proxy/headers.ts";
import { sendOverStream } from "../../proxy/stream_upstream.ts";
import type { WorkerAuth } from "../../proxy/worker_auth.ts";
import type { UpstreamOutcome } from "../../proxy/upstream.ts";
import { relayedHeaders } from "./codec.ts";
import type { RelayServe } from "./inbox.ts";

/** What serving a relayed request needs from the router. */
export interface RelayServeDeps {
  /** The request streams of worker `id`'s connection held here, if any. */
  streamsOf(id: string): WorkerStreams | undefined;
  workerAuth: WorkerAuth;
  load: LoadTracker;
  /** Counts what serving each relayed request came to (`svc_router_relay_requests_total`). */
  served?: (outcome: UpstreamOutcome["kind"] | "not_held") => void;
}

/** A {@link RelayServe} over the connections `deps` holds. */
export function relayServe(deps: RelayServeDeps): RelayServe {
  return async (req) => {
    const streams = deps.streamsOf(req.workerId);
    if (!streams) {
      deps.served?.("not_held");
      return { kind: "not_delivered", error: "the worker's connection is not held here" };
    }
    const headers = relayedHeaders(req.headers);
    headers["content-length"] = String(req.body.length);
    const done = deps.load.begin(req.workerId);
    try {
      const out = await sendOverStream(streams.mux, {
        base: "",
        method: req.method,
        path: req.path,
        headers: withWorkerAuth(headers, await deps.workerAuth(req.workerId)),
        body: req.body.length === 0 ? null : { chunks: [req.body], length: req.body.length },
        signal: req.signal,
      }, streams.violation);
      deps.served?.(out.kind);
      return out;
    } finally {
      done();
    }
  };
}
