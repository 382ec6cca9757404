/**
 * Which headers cross the router in each direction, both from allow-lists: requests carry only
 * what the worker's API reads, answers only the headers the API defines. A worker holds only the
 * fleet's token, so it must not learn the client's credentials, nor set cookies, CORS grants or
 * redirects on the router's origin.
 */
import type { IncomingHttpHeaders } from "node:http";
import { HeaderNames as H } from "@svc/shared/headers";

/**
 * Request headers a worker is sent: the ones the API reads (body format, answer format, trace id).
 * Everything else a client sends (cookies, its API key, `x-forwarded-for`, `user-agent`, custom
 * headers) stays at the router: a worker holds only the fleet token, and may not be the machine
 * the client meant to trust with them.
 */
const PASS_REQUEST: ReadonlySet<string> = new Set([
  "content-type",
  "accept",
  H.traceId.toLowerCase(),
]);

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
  H.truncatedItems,
  H.modelRevision,
  H.extractTokens,
  H.retryAfter,
].map((h) => h.toLowerCase());

/**
 * Headers sent to the worker, as node:http takes them: only the allow-listed ones of the
 * client's request, with `Accept-Encoding: identity` (answers pass through as the worker sent
 * them, so a compressed one would reach a client that may not have asked for that coding).
 */
export function upstreamHeaders(incoming: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  // One `forEach` pass, not `for...of` (Deno's Headers iterator sorts the whole list again at
  // every step: 12 µs and tens of KB of garbage for 8 headers, against 1.5 µs) nor a `get` per
  // name (each lowercases and filters the whole list).
  incoming.forEach((v, k) => {
    if (PASS_REQUEST.has(k)) out[k] = v;
  });
  out["accept-encoding"] = "identity";
  return out;
}

/** `headers` with the worker's own credential (router/proxy/worker_auth.ts), when it has one. */
export function withWorkerAuth(
  headers: Readonly<Record<string, string>>,
  authorization: string | undefined,
): Readonly<Record<string, string>> {
  return authorization === undefined ? headers : { ...headers, authorization };
}

/**
 * Headers of the client's answer: only the allow-listed ones of the worker's answer (whose body
 * passes on byte for byte, so its length and coding stay true). The answering worker's id is not
 * among them: it is fleet detail (routes add `X-SVC-Worker-ID` only with `SVC_EXPOSE_WORKER_ID`).
 */
export function downstreamHeaders(upstream: IncomingHttpHeaders): Headers {
  return new Headers(downstreamHeaderPairs(upstream));
}

/**
 * {@link downstreamHeaders} as name-value pairs (names lower case): what the result cache keeps
 * of an answer (reading them back out of a `Headers` costs several times more).
 */
export function downstreamHeaderPairs(upstream: IncomingHttpHeaders): [string, string][] {
  const out: [string, string][] = [];
  for (const k of PASS_RESPONSE) {
    const v = upstream[k];
    if (typeof v === "string") out.push([k, v]);
  }
  return out;
}
