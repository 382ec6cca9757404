/**
 * `x-request-id` and `X-Trace-ID` on every answer, errors included: the OpenAI SDK reports an
 * answer's `x-request-id` as its request id (null without it), and a client that sent its own
 * expects it back. One step for the worker (both paths) and the router.
 */
import { HeaderNames as H } from "../headers.ts";
import type { Step } from "./steps.ts";

/** Trace and request ids a client may choose: short, and safe to echo and log. */
const ID_RE = /^[A-Za-z0-9._-]{1,128}$/;

/** True for an id the service takes from a client as it is. */
export function isWellFormedId(id: string | undefined): id is string {
  return id !== undefined && ID_RE.test(id);
}

/** The caller's trace id (its `X-Trace-ID` header) when well-formed, else a new one. */
export function traceIdOf(header: string | undefined): string {
  return isWellFormedId(header) ? header : crypto.randomUUID().replaceAll("-", "");
}

/**
 * The id headers an answer lacks: `X-Trace-ID` when the route set none (the client's, else a new
 * one), and `x-request-id`: the client's own when sent and well-formed, else the trace id.
 */
export function idHeaders(
  clientRequestId: string | undefined,
  clientTraceId: string | undefined,
  answerTraceId: string | undefined,
): Record<string, string> {
  const trace = answerTraceId ?? traceIdOf(clientTraceId);
  const requestId = isWellFormedId(clientRequestId) ? clientRequestId : trace;
  return answerTraceId === undefined
    ? { [H.traceId]: trace, [H.requestId]: requestId }
    : { [H.requestId]: requestId };
}

/** The step: every answer but a WebSocket's 101 gets {@link idHeaders}. */
export const requestIdStep: Step = async (req, kit, next) => {
  const answer = await next();
  if (kit.status(answer) === 101) return answer;
  return kit.withHeaders(
    answer,
    idHeaders(req.header(H.requestId), req.header(H.traceId), kit.header(answer, H.traceId)),
  );
};
