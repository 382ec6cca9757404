/** Trace ids: the caller's `X-Trace-ID` when it is well-formed, else a new one. */

/** What a caller's trace id may look like (anything else is replaced, never echoed). */
const TRACE_RE = /^[A-Za-z0-9._-]{1,128}$/;

/** The caller's trace id (its `X-Trace-ID` header) when well-formed, else a new one. */
export function traceIdOf(header: string | null | undefined): string {
  return header && TRACE_RE.test(header) ? header : crypto.randomUUID().replaceAll("-", "");
}
