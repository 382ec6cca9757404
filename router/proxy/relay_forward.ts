/**
 * Forwarding's last path: a pool whose live workers this router cannot reach (no connection of
 * theirs here, no advertised URL) is served through the router instance holding a worker's
 * connection, relayed through KV (router/fleet/relay/). One attempt: every more direct path was
 * tried first; a request that reached no worker leaves the pool `elsewhere` (held, then 503).
 */
import { ServiceError } from "@svc/shared/errors";
import type { WorkerRecord } from "../directory/types.ts";
import { type Affinity, type SelectionRequest, selectWorker } from "../pools/selection.ts";
import { attemptOnce, finalResult, readCounted, type Sender, workerLost } from "./attempt.ts";
import type { AnswerShaper, BodyReader, ForwardResult, ProxyDeps } from "./forward.ts";

/** A worker of the pool only the relay reaches, and how it ranks; undefined: none. */
export function relayTarget(
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
export async function relayForward(
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
  const body = await readCounted(readBody, done);
  const size = body?.length ?? 0;
  if (size > relay.maxBodyBytes) {
    done();
    deps.metrics.relay.inc({ side: "asked", outcome: "body_too_large" });
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
  const r = await attemptOnce({
    req,
    body,
    headers,
    pathAndQuery,
    worker,
    affinity: chosen.affinity,
    target,
    delivered: undefined,
    done,
    shape,
    send,
  }, deps);
  deps.metrics.relay.inc({ side: "asked", outcome: r.kind });
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
