/**
 * Which headers cross the router in each direction. Requests lose hop-by-hop headers and the
 * client's credentials. Answers are built from an allow-list: a worker holds only the fleet's
 * token, so it must not be able to set cookies, CORS grants or redirects on the router's origin.
 */
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
  // Deno's fetch decompresses transparently; asking the worker for gzip would only cost CPU.
  "accept-encoding",
] as const;

/**
 * Response headers a worker may send to clients: the ones the API defines (docs/api.md,
 * "Headers"). The version headers are set by the router itself on every answer.
 */
const PASS_RESPONSE = [
  "content-type",
  H.totalTime,
  H.queueTime,
  H.tokenizationTime,
  H.inferenceTime,
  H.postprocessingTime,
  H.traceId,
  H.truncatedItems,
  H.retryAfter,
].map((h) => h.toLowerCase());

/**
 * Headers sent to the worker: the client's, minus {@link DROP_REQUEST}; `authorization` carries
 * the workers' own API key when one is configured (a bulk copy, then removals: cheaper than a
 * filter).
 */
export function upstreamHeaders(
  incoming: Headers,
  workerApiKey: string | undefined,
): Headers {
  const out = new Headers(incoming);
  for (const k of DROP_REQUEST) out.delete(k);
  if (workerApiKey !== undefined) out.set("authorization", `Bearer ${workerApiKey}`);
  return out;
}

/**
 * Headers of the client's answer: only the allow-listed ones of the worker's answer, plus the
 * answering worker's id. Content-Length passes when the body is passed on as the worker sent it
 * (fetch decodes a compressed body, after which the worker's length no longer applies).
 */
export function downstreamHeaders(
  upstream: Headers,
  workerId: string,
): Headers {
  const out = new Headers();
  for (const k of PASS_RESPONSE) {
    const v = upstream.get(k);
    if (v !== null) out.set(k, v);
  }
  const length = upstream.get("content-length");
  if (length !== null && !upstream.has("content-encoding")) out.set("content-length", length);
  out.set(H.workerId, workerId);
  return out;
}
