/**
 * The worker's one way in for a request that did not come over its own HTTP server (the router's
 * connection, worker/fleet/streams/accept.ts): the model operations through the same direct
 * handler the HTTP server asks first (model_routes.ts, the steps of pipeline.ts applied once),
 * everything else (model listings, probes) through the app, its `Response` read into an answer.
 */
import type { Hono } from "hono";
import { bodySourceStream } from "@svc/shared/http/body_source";
import {
  type DirectAnswer,
  type DirectHandler,
  type DirectRequest,
  errorAnswer,
} from "@svc/shared/http/direct_call";
import { ServiceError } from "@svc/shared/errors";
import { HeaderNames as H } from "@svc/shared/headers";

/** The headers a router sends a worker (router/proxy/headers.ts), all the app may read. */
const FORWARDED = [
  "content-type",
  "content-length",
  "accept",
  "accept-encoding",
  "authorization",
  H.traceId.toLowerCase(),
  H.requestId.toLowerCase(),
];

/** Serve `req` with `direct` when it claims it, else with `app`; never rejects. */
export function serveRequest(
  worker: { app: Hono; direct: DirectHandler },
  remote: string,
): (req: DirectRequest) => Promise<DirectAnswer> {
  return (req) => {
    let claimed: Promise<DirectAnswer> | undefined;
    try {
      claimed = worker.direct(req);
    } catch {
      claimed = undefined;
    }
    return (claimed ?? viaApp(worker.app, req, remote)).catch(() =>
      errorAnswer(new ServiceError("INTERNAL_ERROR", "unexpected server error"))
    );
  };
}

/** `req` as a fetch `Request` to the app, its answer read whole (the app's answers are small). */
async function viaApp(app: Hono, req: DirectRequest, remote: string): Promise<DirectAnswer> {
  const headers: [string, string][] = [];
  for (const name of FORWARDED) {
    const v = req.header(name);
    if (v !== undefined) headers.push([name, v]);
  }
  const completed = Promise.withResolvers<void>();
  const response = await app.fetch(
    new Request(req.url, {
      method: req.method,
      headers,
      signal: req.signal,
      body: req.body && bodySourceStream(req.body),
    }),
    {
      remoteAddr: { transport: "tcp", hostname: remote, port: 0 },
      completed: completed.promise,
      body: req.body,
    },
  );
  const body = new Uint8Array(await response.arrayBuffer());
  const out: Record<string, string> = {};
  response.headers.forEach((v, k) => out[k] = v);
  return { status: response.status, headers: out, body, afterWrite: () => completed.resolve() };
}
