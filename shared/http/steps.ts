/**
 * Request steps written once for the two ways a request is served: a Hono app's middleware
 * (every route) and a direct handler (shared/http/direct_call.ts: the worker's model operations,
 * which skip the fetch `Request`, Hono and the `Response`). A step sees the request through a
 * small view, and builds or amends answers only through an {@link AnswerKit}, so the same list of
 * steps, in the same order, runs on both paths: the order is written in one place.
 */
import type { MiddlewareHandler } from "hono";
import { type ErrorDialect, errorResponse, type ServiceError } from "../errors.ts";

/** What a step sees of a request. */
export interface StepRequest {
  readonly method: string;
  /** The URL's pathname, as Hono's `c.req.path` gives it. */
  readonly path: string;
  /** A header's value as `Headers.get` gives it (undefined when absent). */
  header(name: string): string | undefined;
}

/** How one path builds, reads and amends its answers (`A`: a `Response`, or a direct answer). */
export interface AnswerKit<A> {
  /** The API error answer for `err`, in the route's error envelope. */
  error(err: ServiceError, headers?: Record<string, string>): A;
  /** An answer without a body (a CORS preflight's 204). */
  empty(status: number, headers: Record<string, string>): A;
  status(answer: A): number;
  header(answer: A, name: string): string | undefined;
  /** `answer` with `headers` set (the same object where answers are mutable). */
  withHeaders(answer: A, headers: Readonly<Record<string, string>>): A;
  /** `answer`, with `fn` run once it has been written (at once where the path cannot tell). */
  afterWrite(answer: A, fn: () => void): A;
}

/**
 * One step: answer on its own (without calling `next`), or call `next` once and return its answer,
 * amended only through `kit`.
 */
export type Step<Q extends StepRequest = StepRequest> = <A>(
  req: Q,
  kit: AnswerKit<A>,
  next: () => Promise<A>,
) => Promise<A>;

/** Run `steps` in order around `last` (the route). */
export function runSteps<Q extends StepRequest, A>(
  steps: readonly Step<Q>[],
  req: Q,
  kit: AnswerKit<A>,
  last: () => Promise<A>,
): Promise<A> {
  const at = (i: number): Promise<A> =>
    i === steps.length ? last() : steps[i](req, kit, () => at(i + 1));
  return at(0);
}

/**
 * `make` built once per error dialect and reused: a kit holds nothing of a request, and one is
 * asked for on every request.
 */
export function kitPerDialect<A>(
  make: (dialect: ErrorDialect) => AnswerKit<A>,
): (dialect: ErrorDialect) => AnswerKit<A> {
  const kits = new Map<ErrorDialect, AnswerKit<A>>();
  return (dialect) => {
    let kit = kits.get(dialect);
    if (!kit) kits.set(dialect, kit = make(dialect));
    return kit;
  };
}

/** The kit of answers that are `Response`s (their headers are set in place). */
export const responseKit: (dialect: ErrorDialect) => AnswerKit<Response> = kitPerDialect(
  newResponseKit,
);

function newResponseKit(dialect: ErrorDialect): AnswerKit<Response> {
  return {
    error: (err, headers = {}) => errorResponse(err, headers, dialect),
    empty: (status, headers) => new Response(null, { status, headers }),
    status: (res) => res.status,
    header: (res, name) => res.headers.get(name) ?? undefined,
    withHeaders: (res, headers) => {
      for (const [k, v] of Object.entries(headers)) res.headers.set(k, v);
      return res;
    },
    afterWrite: (res, fn) => {
      fn();
      return res;
    },
  };
}

/**
 * `step` as Hono middleware; `view` gives the step its view of the request, `dialect` the error
 * envelope of a path.
 */
export function stepMiddleware<Q extends StepRequest>(
  step: Step<Q>,
  view: (c: Parameters<MiddlewareHandler>[0]) => Q,
  dialect: (path: string) => ErrorDialect,
): MiddlewareHandler {
  return async (c, next) => {
    const req = view(c);
    let passed = false;
    const answer = await step(req, responseKit(dialect(req.path)), async () => {
      passed = true;
      await next();
      return c.res;
    });
    // An answer of the step's own replaces the route's; one amended in place is already there.
    if (!passed || answer !== c.res) c.res = answer;
  };
}

/** The request view of a Hono context (for steps that need nothing more). */
export function honoRequestView(c: Parameters<MiddlewareHandler>[0]): StepRequest {
  return { method: c.req.method, path: c.req.path, header: (name) => c.req.header(name) };
}
