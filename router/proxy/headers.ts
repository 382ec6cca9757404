/**
 * Which headers cross the router in each direction, both from allow-lists: requests carry only
 * what the worker's API reads, answers only the headers the API defines. A worker holds only the
 * fleet's token, so it must not learn the client's credentials, nor set cookies, CORS grants or
 * redirects on the router's origin.
 */
import { HeaderNames as H } from "@svc/shared/headers";

/**
 * Request headers a worker is sent: the ones the API reads (body format, answer format, trace id).
 * Everything else a client sends (cookies, its API key, `x-forwarded-for`, `user-agent`, custom
 * headers) stays at the router: a worker holds only the fleet token, and may not be the machine
 * the client meant to trust with them.
 */
const PASS_REQUEST = ["content-type", "accept", H.traceId.toLowerCase()] as const;

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
  H.retryAfter,
].map((h) => h.toLowerCase());

/** Headers sent to the worker: only the allow-listed ones of the client's request. */
export function upstreamHeaders(incoming: Headers): Headers {
  const out = new Headers();
  for (const k of PASS_REQUEST) {
    const v = incoming.get(k);
    if (v !== null) out.set(k, v);
  }
  return out;
}

/** Put the worker's own credential on its request (router/proxy/worker_auth.ts), or none. */
export function setWorkerAuth(headers: Headers, authorization: string | undefined): void {
  if (authorization === undefined) headers.delete("authorization");
  else headers.set("authorization", authorization);
}

/**
 * Headers of the client's answer: only the allow-listed ones of the worker's answer. Content-Length
 * passes when the body is passed on as the worker sent it (fetch decodes a compressed body, after
 * which the worker's length no longer applies). The answering worker's id is not among them: it
 * is fleet detail (routes add `X-SVC-Worker-ID` only with `SVC_EXPOSE_WORKER_ID`).
 */
export function downstreamHeaders(upstream: Headers): Headers {
  const out = new Headers();
  for (const k of PASS_RESPONSE) {
    const v = upstream.get(k);
    if (v !== null) out.set(k, v);
  }
  const length = upstream.get("content-length");
  if (length !== null && !upstream.has("content-encoding")) out.set("content-length", length);
  return out;
}
