/**
 * Requests a server answers without building a fetch `Request`, a framework context or a
 * `Response`: the worker's model operations, its hot path, and its one way in for them whichever
 * transport brought the request (the node:http server's direct branch, and the router connection's
 * streams, worker/fleet/streams/accept.ts). Building those three objects and
 * converting between them and node:http cost about 0.3 ms of main-thread time per request here
 * (measured against a bare route running the same decode, batcher, thread and encoder), a fifth
 * of what the worker adds to a raw inference run at concurrency 1. Every other request (probes,
 * metrics, listings, the status stream, errors for unknown paths) still goes to the fetch
 * handler.
 */
import { type ErrorDialect, errorParts, type ServiceError } from "../errors.ts";
import type { BodySource } from "./body_source.ts";
import { type AnswerKit, kitPerDialect } from "./steps.ts";

/** A request as the server hands it to a {@link DirectHandler}. */
export interface DirectRequest {
  readonly method: string;
  /** The URL a fetch `Request` of this request would have (same normalisation). */
  readonly url: string;
  /** A header's value as `Headers.get` would give it (any case; repeated ones joined by ", "). */
  header(name: string): string | undefined;
  /** Aborts when the client goes away before its answer is written. */
  readonly signal: AbortSignal;
  /** The body as it arrives (read it with `readSourceLimited`); absent for GET and HEAD. */
  readonly body: BodySource | undefined;
}

/** A whole answer. The body is written as it is: it must not change afterwards. */
export interface DirectAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /**
   * Work that must not delay the answer (the access log, metrics): called once the answer has
   * been handed to the socket, or found to have nobody to go to.
   */
  readonly afterWrite?: () => void;
}

/**
 * Claims a request by returning its answer (a promise), or leaves it to the fetch handler by
 * returning undefined. It must not throw: a claimed request's errors are part of its answer.
 */
export type DirectHandler = (req: DirectRequest) => Promise<DirectAnswer> | undefined;

const utf8 = new TextEncoder();

/** The API error answer for `err` (as `errorResponse` builds it, without the `Response`). */
export function errorAnswer(
  err: ServiceError,
  extraHeaders: Readonly<Record<string, string>> = {},
  dialect: ErrorDialect = "native",
): DirectAnswer {
  const { status, headers, text } = errorParts(err, extraHeaders, dialect);
  return { status, headers, body: utf8.encode(text) };
}

/** The kit request steps (shared/http/steps.ts) build and amend direct answers with. */
export const directAnswerKit: (dialect: ErrorDialect) => AnswerKit<DirectAnswer> = kitPerDialect(
  newDirectAnswerKit,
);

function newDirectAnswerKit(dialect: ErrorDialect): AnswerKit<DirectAnswer> {
  return {
    error: (err, headers = {}) => errorAnswer(err, headers, dialect),
    empty: (status, headers) => ({ status, headers, body: new Uint8Array() }),
    status: (a) => a.status,
    header: (a, name) => a.headers[name] ?? headerIgnoringCase(a.headers, name),
    withHeaders: (a, headers) => ({ ...a, headers: { ...a.headers, ...headers } }),
    afterWrite: (a, fn) => {
      const before = a.afterWrite;
      return {
        ...a,
        afterWrite: before
          ? () => {
            before();
            fn();
          }
          : fn,
      };
    },
  };
}

/** A header of a plain record, its name matched in any case. */
function headerIgnoringCase(
  headers: Readonly<Record<string, string>>,
  name: string,
): string | undefined {
  const lower = name.toLowerCase();
  for (const k in headers) if (k.toLowerCase() === lower) return headers[k];
  return undefined;
}

/**
 * `Headers.get` over node's raw header list: names matched case-insensitively, values trimmed of
 * HTTP whitespace, repeated headers joined with ", ".
 */
export function rawHeaderValue(raw: readonly string[], name: string): string | undefined {
  const wanted = name.toLowerCase();
  let value: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i].length !== wanted.length || raw[i].toLowerCase() !== wanted) continue;
    const v = trimHttpWhitespace(raw[i + 1]);
    value = value === undefined ? v : `${value}, ${v}`;
  }
  return value;
}

/** Tab, line feed, carriage return and space: what `Headers` trims from a value. */
function isHttpWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

function trimHttpWhitespace(v: string): string {
  let start = 0;
  let end = v.length;
  while (start < end && isHttpWhitespace(v.charCodeAt(start))) start++;
  while (end > start && isHttpWhitespace(v.charCodeAt(end - 1))) end--;
  return start === 0 && end === v.length ? v : v.slice(start, end);
}
