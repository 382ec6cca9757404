/**
 * Which headers cross the router in each direction. Requests lose hop-by-hop headers and the
 * client's credentials. Answers are built from an allow-list: a worker holds only the fleet's
 * token, so it must not be able to set cookies, CORS grants or redirects on the router's origin.
 */
import type { IncomingHttpHeaders } from "node:http";
import { HeaderNames as H } from "@svc/shared/headers";

/** Request headers never forwarded: hop-by-hop, the client's credentials, and encodings. */
const DROP_REQUEST = [
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
  // Replaced by `identity`: answers pass through as the worker sent them, so a compressed one
  // would reach a client that may not have asked for that coding (and costs the worker CPU).
  "accept-encoding",
] as const;

/**
 * Response headers a worker may send to clients: the ones the API defines (docs/api.md,
 * "Headers"). The version headers are set by the router itself on every answer.
 */
const PASS_RESPONSE = [
  "content-type",
  // With the bytes as sent: only a worker that ignores `Accept-Encoding: identity` sets it.
  "content-encoding",
  "content-length",
  H.totalTime,
  H.queueTime,
  H.tokenizationTime,
  H.inferenceTime,
  H.postprocessingTime,
  H.traceId,
  H.modelRevision,
  H.retryAfter,
].map((h) => h.toLowerCase());

/** {@link DROP_REQUEST} as a set (names as `Headers` iterates them: lower case). */
const DROPPED = new Set<string>(DROP_REQUEST);

/**
 * Headers sent to the worker, as node:http takes them: the client's, minus
 * {@link DROP_REQUEST}, with `Accept-Encoding: identity`; `authorization` carries the workers'
 * own API key when one is configured.
 */
export function upstreamHeaders(
  incoming: Headers,
  workerApiKey: string | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  // `forEach`, not `for...of`: Deno's Headers iterator sorts the whole list again at every step
  // (measured: 12 µs and tens of KB of garbage for 8 headers, against 1.5 µs).
  incoming.forEach((v, k) => {
    if (!DROPPED.has(k)) out[k] = v;
  });
  out["accept-encoding"] = "identity";
  if (workerApiKey !== undefined) out["authorization"] = `Bearer ${workerApiKey}`;
  return out;
}

/**
 * Headers of the client's answer: only the allow-listed ones of the worker's answer (whose body
 * passes on byte for byte, so its length and coding stay true), plus the answering worker's id.
 */
export function downstreamHeaders(
  upstream: IncomingHttpHeaders,
  workerId: string,
): Headers {
  return new Headers(downstreamHeaderPairs(upstream, workerId));
}

/**
 * {@link downstreamHeaders} as name-value pairs (names lower case): what the result cache keeps
 * of an answer (reading them back out of a `Headers` costs several times more).
 */
export function downstreamHeaderPairs(
  upstream: IncomingHttpHeaders,
  workerId: string,
): [string, string][] {
  const out: [string, string][] = [];
  for (const k of PASS_RESPONSE) {
    const v = upstream[k];
    if (typeof v === "string") out.push([k, v]);
  }
  out.push([WORKER_ID, workerId]);
  return out;
}

/** The worker id header as `Headers` names it. */
const WORKER_ID = H.workerId.toLowerCase();
