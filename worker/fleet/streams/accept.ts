/**
 * The worker's end of the request streams on its fleet connection (the connection adapter): each
 * stream the router opens becomes a request for the worker's one way in (`serve`, the same one
 * its HTTP server calls), its body a `BodySource` over the stream that grants credit as it is read,
 * its signal the stream's reset or the connection's loss (the work is then dropped, as for an
 * HTTP client that went away). The answer goes back as a head and body chunks within the
 * router's credit.
 */
import { ClientGoneError } from "@svc/shared/errors";
import type { StreamGrant, StreamOffer } from "@svc/shared/fleet/protocol";
import { type AnswerHead, type RequestHead, RESET } from "@svc/shared/fleet/streams/frames";
import { MAX_STREAM_FRAME_BYTES, type MuxStream, StreamMux } from "@svc/shared/fleet/streams/mux";
import type { BodySource } from "@svc/shared/http/body_source";
import type { DirectAnswer, DirectRequest } from "@svc/shared/http/direct_call";
import type { Logger } from "@svc/shared/log";

/** What the worker lets the router send unread: per stream (a big upload), and in total. */
export const WORKER_STREAM_OFFER: StreamOffer = {
  window: 1024 * 1024,
  connection_window: 16 * 1024 * 1024,
};

/** The worker's one way in for a request, whichever transport brought it. */
export type ServeRequest = (req: DirectRequest) => Promise<DirectAnswer>;

/** What a socket must offer the streams (the WebSocket the worker dialled). */
export interface StreamSocket {
  send(data: Uint8Array): void;
  readonly bufferedAmount: number;
}

/** Most headers a request head may carry (the router sends a handful). */
const MAX_HEADERS = 64;

/** Accept the router's request streams on `socket`, within `grant`, served by `serve`. */
export function acceptStreams(
  socket: StreamSocket,
  grant: StreamGrant,
  serve: ServeRequest,
  log: Logger,
  onViolation: (reason: string) => void,
): StreamMux {
  return new StreamMux({
    role: "acceptor",
    receive: {
      stream: WORKER_STREAM_OFFER.window,
      connection: WORKER_STREAM_OFFER.connection_window,
    },
    send: { stream: grant.window, connection: grant.connection_window },
    maxStreams: grant.max_streams,
    maxFrameBytes: MAX_STREAM_FRAME_BYTES,
    sink: socket,
    onOpen: (stream, head) => {
      const req = requestHeadOf(head);
      if (!req) {
        log("warn", "request stream with a malformed head, reset");
        return stream.reset(RESET.internal);
      }
      serveStream(stream, req, serve);
    },
    onViolation,
  });
}

/** A request head as the router sent it, checked; undefined when it is not one. */
function requestHeadOf(raw: unknown): RequestHead | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const { method, path, headers } = raw as Partial<RequestHead>;
  if (typeof method !== "string" || !/^[A-Z]{1,16}$/.test(method)) return undefined;
  if (typeof path !== "string" || !path.startsWith("/") || path.length > 16 * 1024) {
    return undefined;
  }
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) return undefined;
  const out: Record<string, string> = {};
  let n = 0;
  for (const [k, v] of Object.entries(headers)) {
    if (typeof v !== "string" || ++n > MAX_HEADERS) return undefined;
    out[k.toLowerCase()] = v;
  }
  return { method, path, headers: out };
}

/** Serve one stream: request in, answer out, the rest of an unread body refused afterwards. */
function serveStream(stream: MuxStream, head: RequestHead, serve: ServeRequest): void {
  const gone = new AbortController();
  stream.events = {
    aborted: () => {
      // Runs inside the socket's message handler: a listener's throw must not reach it.
      try {
        gone.abort(new ClientGoneError());
      } catch {
        // The request is gone either way.
      }
    },
  };
  let url: string;
  try {
    // Appended, never resolved against a base (`//x` stays a path), as the HTTP server does.
    url = new URL(`http://worker${head.path}`).href;
  } catch {
    return stream.reset(RESET.internal);
  }
  // Cancelling settles a pending read at once: the body reader's idle timeout and the body
  // budget's eviction wait on it. The rest is refused once the answer is out (below).
  let stopReading: (end: null) => void = () => {};
  const stopped = new Promise<null>((resolve) => stopReading = resolve);
  const body: BodySource | undefined = head.method === "GET" || head.method === "HEAD"
    ? undefined
    : {
      read: () =>
        Promise.race([stream.read().catch(() => Promise.reject(new ClientGoneError())), stopped]),
      cancel: () => stopReading(null),
    };
  const request: DirectRequest = {
    method: head.method,
    url,
    header: (name) => head.headers[name.toLowerCase()],
    signal: gone.signal,
    body,
  };
  serve(request).then((answer) => answerStream(stream, head.method, answer), () => {
    stream.reset(RESET.internal);
  });
}

/** Send `answer` on `stream`, then run its `afterWrite` (once out, or once nobody takes it). */
function answerStream(stream: MuxStream, method: string, answer: DirectAnswer): void {
  let after = answer.afterWrite;
  const done = () => {
    const fn = after;
    after = undefined;
    try {
      fn?.();
    } catch {
      // The answer is out; what follows it cannot change it.
    }
  };
  if (stream.aborted) return done();
  stream.events = {
    aborted: done,
    delivered: () => {
      // A body not read to its end (still arriving, or arrived and left unread): the router stops
      // sending it and the stream's credit comes back (HTTP closes the connection).
      if (!stream.finished) stream.reset(RESET.cancel);
      done();
    },
  };
  const headers: Record<string, string> = {};
  for (const k in answer.headers) headers[k.toLowerCase()] = answer.headers[k];
  headers["content-length"] = String(answer.body.length);
  const out: AnswerHead = { status: answer.status, headers };
  const bytes = method === "HEAD" ? [] : [answer.body];
  stream.sendHead(out, bytes, true);
}
