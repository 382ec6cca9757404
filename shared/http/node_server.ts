/**
 * Serve a fetch-style handler (a Hono app's `fetch`) with `node:http` under Deno.
 *
 * Why not `Deno.serve`: in Deno 2.9.5 its `req.signal` never fires when a client with a body of
 * about 1 KB or more disconnects, and a stalled body cannot be closed from the handler (measured:
 * 20 of 20 sockets stayed open after a 408 with `connection: close`). Under node:http the
 * response's 'close' before 'finish' is a reliable "client gone", and `headersTimeout` /
 * `requestTimeout` close stalled connections. Requests reach the handler as standard `Request`s
 * whose `signal` aborts when the client goes away. The body arrives as a pull source
 * (shared/http/body_source.ts) handed to the handler beside the request (`info.body`, a Hono
 * app's `c.env.body`), which `readBodyLimited` (or, for a direct request, `readSourceLimited`)
 * reads as it arrives within its bounds, nothing allocated from Content-Length: reading through a
 * stream costs a promise per chunk. The `Request`'s own body is a stream over the same source,
 * pulled only when something reads it (`c.req.json()` works, without the bounds); whichever reads
 * first gets the bytes. WebSocket upgrades are accepted with `ws` through shared/http/upgrade.ts.
 *
 * A `direct` handler is asked first: a request it claims never becomes a `Request`, and its
 * answer's bytes are written as they are (shared/http/direct_call.ts; the worker's model
 * operations). Its body is the same pull source, its signal the same "client gone".
 *
 * Responses are buffered before they are written (every answer of the worker is built whole),
 * unless `streamResponses` is set and the answer declares a length over 64 KiB (the router passing
 * a large worker answer on as it arrives: chunks are written with backpressure, and a client that
 * goes away cancels the body).
 */
import http from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import { ClientGoneError, errorResponse, ServiceError } from "../errors.ts";
import { type BodySource, bodySourceStream, nodeBodySource } from "./body_source.ts";
import { type DirectAnswer, type DirectHandler, rawHeaderValue } from "./direct_call.ts";
import { idHeaders } from "./request_id.ts";
import { HeaderNames } from "../headers.ts";
import { registerUpgrade, type StreamSocket, type UpgradeOptions } from "./upgrade.ts";
import { answeredProtocol } from "./ws_auth.ts";
import type { PeerLimits } from "./peer_limits.ts";

/** What the server tells a handler besides the request (the shape of Deno.serve's). */
export interface ServeInfo {
  remoteAddr: { transport: "tcp"; hostname: string; port: number };
  /** Settles once the answer has been written, or the client has gone away. */
  completed: Promise<void>;
  /**
   * The body as it arrives (read it with `readBodyLimited`); absent for GET and HEAD. The
   * `Request`'s body stream reads from the same source.
   */
  body?: BodySource;
}

/** A fetch-style request handler. */
export type FetchHandler = (req: Request, info: ServeInfo) => Response | Promise<Response>;

export type { DirectAnswer, DirectHandler, DirectRequest } from "./direct_call.ts";

/** Options of {@link serveNodeHttp}. */
export interface NodeServeOptions {
  hostname: string;
  /** 0: any free port. */
  port: number;
  /** A connection whose request headers are not complete after this long gets 408 and is closed. */
  headersTimeoutMs: number;
  /** A request not received whole (headers and body) after this long gets 408 and is closed. */
  requestTimeoutMs: number;
  /** Idle keep-alive connections are closed after this long (default 5 s). */
  keepAliveTimeoutMs?: number;
  /** Write answers as their bodies arrive instead of buffering them (a proxy's answers). */
  streamResponses?: boolean;
  /** Asked first for every request; what it claims never becomes a fetch `Request`. */
  direct?: DirectHandler;
  /** Per-peer caps on connections and requests in flight (shared/http/peer_limits.ts). */
  peers?: PeerLimits;
  onListen?: (addr: { hostname: string; port: number }) => void;
}

/** A listening server. */
export interface NodeHttpServer {
  readonly addr: { hostname: string; port: number };
  /** Resolves once the server has closed. */
  readonly finished: Promise<void>;
  /**
   * Stop accepting connections; resolves when the open ones have ended (idle ones at once). With
   * `graceMs`, connections still open after it are closed.
   */
  shutdown(graceMs?: number): Promise<void>;
}

/**
 * Proxied answers up to this size are read whole and written in one go: the chunk-by-chunk pipe
 * cost the router about a sixth of its CPU per request on small answers (profiled), and holding
 * 64 KiB per request is nothing next to the in-flight body budget.
 */
const STREAM_MIN_BYTES = 64 * 1024;

/**
 * Longest wait for the next chunk of a request body that is not wanted, once the answer is out:
 * a client that stops sending it has its connection closed.
 */
const LINGER_MS = 1000;

/**
 * Most bytes of an unwanted request body read (and dropped) after an early answer before the
 * connection is closed anyway. Reading the rest is what lets a client that is still uploading
 * see the answer (a 413, a 503 for the body budget): a socket closed with unread bytes in its
 * receive buffer is reset, and the reset can reach the client before the answer it was sent.
 * Twice the default body limit: a refused body of any allowed size is read to its end.
 */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Largest WebSocket message accepted (`ws` allows 100 MiB by default): status-stream clients
 * send nothing, and fleet frames are at most 1 MiB of JSON text.
 */
const MAX_WS_PAYLOAD_BYTES = 2 * 1024 * 1024;

/** Start serving; resolves once the server listens. */
export async function serveNodeHttp(
  handler: FetchHandler,
  opts: NodeServeOptions,
): Promise<NodeHttpServer> {
  const server = http.createServer({
    headersTimeout: opts.headersTimeoutMs,
    requestTimeout: opts.requestTimeoutMs,
    keepAliveTimeout: opts.keepAliveTimeoutMs ?? 5000,
    // Timeouts are checked on this period (Node's default of 30 s would let them run far over).
    connectionsCheckingInterval: Math.max(100, Math.min(1000, opts.headersTimeoutMs / 2)),
  } as http.ServerOptions);
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: MAX_WS_PAYLOAD_BYTES,
    // Only the dashboards' stream protocol is ever answered: never one that carries a key.
    handleProtocols: (offered) => answeredProtocol(offered) ?? false,
  });
  // A streamed answer the client stops taking is dropped after the request timeout.
  const stream = opts.streamResponses === true ? opts.requestTimeoutMs : undefined;
  const direct = opts.direct;
  const peers = opts.peers?.active ? opts.peers : undefined;
  if (peers) {
    server.on("connection", (socket: import("node:net").Socket) => {
      const release = peers.connect(socket.remoteAddress ?? "");
      if (!release) return socket.destroy(); // over SVC_MAX_CONNECTIONS_PER_PEER
      socket.once("close", release);
    });
  }
  server.on("request", (incoming, res) => {
    if (peers) {
      const release = peers.enter(incoming.socket.remoteAddress ?? "");
      if (!release) {
        const state: BodyState = { cancelled: true }; // the body is not read: close after
        const refusal = ownAnswer(incoming, errorResponse(peers.refusal()));
        return void writeResponse(incoming, res, refusal, state, undefined)
          .catch(() => res.destroy());
      }
      res.once("close", release);
    }
    serveOne(handler, direct, incoming, res, stream);
  });
  server.on(
    "upgrade",
    (incoming, socket, head) => upgradeOne(handler, wss, incoming, socket, head),
  );
  const finished = new Promise<void>((resolve) => server.once("close", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const addr = {
    hostname: opts.hostname,
    port: typeof address === "object" && address ? address.port : opts.port,
  };
  opts.onListen?.(addr);
  return {
    addr,
    finished,
    shutdown(graceMs?: number) {
      server.close();
      server.closeIdleConnections();
      if (graceMs !== undefined) {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        finished.then(() => clearTimeout(timer));
      }
      return finished;
    },
  };
}

/**
 * The request line and headers as a `Request` whose body (when there is one) reads `body`.
 * Headers go in as name/value pairs: handing `Request` a `Headers` object costs three times as
 * much (measured 18 vs 5 µs), most of it iterating the copy.
 */
function requestOf(
  incoming: http.IncomingMessage,
  url: string,
  signal?: AbortSignal,
  body?: BodySource,
): Request {
  const raw = incoming.rawHeaders;
  const headers: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) headers.push([raw[i], raw[i + 1]]);
  return new Request(url, {
    method: incoming.method,
    headers,
    signal,
    body: body && bodySourceStream(body),
  });
}

/** The request's URL as a `Request` holds it (dot segments resolved); throws when unusable. */
function urlOf(incoming: http.IncomingMessage): string {
  const path = incoming.url ?? "/";
  // The path is appended, never resolved against a base: `//host/x` stays a path, as Deno.serve
  // keeps it. Parsing normalises it the way a `Request` does.
  return new URL(path.startsWith("/") ? `http://${hostOf(incoming)}${path}` : path).href;
}

/** The Host header when it is a plain host[:port], else a placeholder (only the path matters). */
function hostOf(incoming: http.IncomingMessage): string {
  const host = incoming.headers.host;
  return host && /^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host)
    ? host
    : "localhost";
}

/** Per-request state of the body source. */
interface BodyState {
  /** The handler stopped reading (size limit, idle timeout, error): the connection is not reused. */
  cancelled: boolean;
}

/** The peer of `incoming`, as Deno.serve reports it. */
function remoteOf(incoming: http.IncomingMessage): ServeInfo["remoteAddr"] {
  const s = incoming.socket;
  return { transport: "tcp", hostname: s.remoteAddress ?? "", port: s.remotePort ?? 0 };
}

function serveOne(
  handler: FetchHandler,
  direct: DirectHandler | undefined,
  incoming: http.IncomingMessage,
  res: http.ServerResponse,
  stream: number | undefined,
): void {
  const gone = new AbortController();
  const state: BodyState = { cancelled: false };
  const method = incoming.method ?? "GET";
  let url: string;
  try {
    url = urlOf(incoming);
  } catch {
    // An absolute-form request target that is not a URL.
    return malformed(incoming, res, state);
  }
  const source = method === "GET" || method === "HEAD"
    ? undefined
    : nodeBodySource(incoming, () => new ClientGoneError(), () => {
      state.cancelled = true;
    });
  res.on("close", () => {
    if (!res.writableFinished) gone.abort(new ClientGoneError());
  });
  if (direct) {
    let claimed: Promise<DirectAnswer> | undefined;
    try {
      claimed = direct({
        method,
        url,
        header: (name) => rawHeaderValue(incoming.rawHeaders, name),
        signal: gone.signal,
        body: source,
      });
    } catch {
      claimed = Promise.reject();
    }
    if (claimed) {
      claimed
        .then((answer) => writeAnswer(incoming, res, answer, state))
        .catch(() => writeResponse(incoming, res, unexpected(incoming), state, undefined))
        .catch(() => res.destroy());
      return;
    }
  }
  let request: Request;
  try {
    request = requestOf(incoming, url, gone.signal, source);
  } catch {
    // Header bytes that a fetch Request refuses.
    return malformed(incoming, res, state);
  }
  const completed = new Promise<void>((resolve) => res.once("close", () => resolve()));
  const info: ServeInfo = { remoteAddr: remoteOf(incoming), completed, body: source };
  Promise.resolve()
    .then(() => handler(request, info))
    .catch(() => unexpected(incoming))
    .then((response) => writeResponse(incoming, res, response, state, stream))
    .catch(() => res.destroy());
}

/** 500 for a handler that failed instead of answering. */
function unexpected(incoming: http.IncomingMessage): Response {
  return ownAnswer(
    incoming,
    errorResponse(new ServiceError("INTERNAL_ERROR", "unexpected server error")),
  );
}

/** An answer of the server's own (no handler's steps ran): the request ids set as they do. */
function ownAnswer(incoming: http.IncomingMessage, response: Response): Response {
  const header = (name: string) => rawHeaderValue(incoming.rawHeaders, name);
  const ids = idHeaders(header(HeaderNames.requestId), header(HeaderNames.traceId), undefined);
  for (const [k, v] of Object.entries(ids)) response.headers.set(k, v);
  return response;
}

/** 400 for a request line or headers that cannot become a request. */
function malformed(
  incoming: http.IncomingMessage,
  res: http.ServerResponse,
  state: BodyState,
): void {
  void writeResponse(
    incoming,
    res,
    ownAnswer(
      incoming,
      errorResponse(new ServiceError("INVALID_INPUT", "malformed request line or headers")),
    ),
    state,
    undefined,
  );
}

/**
 * Write `response` (buffered, or streamed when `stream` gives how long a write may wait for the
 * client); a request whose body was not read to its end closes its connection.
 */
async function writeResponse(
  incoming: http.IncomingMessage,
  res: http.ServerResponse,
  response: Response,
  state: BodyState,
  stream: number | undefined,
): Promise<void> {
  // Only large answers of a known length stream (a proxied worker answer); the server's own
  // answers, and small proxied ones, are written whole with their length.
  const streamed = stream !== undefined && response.body !== null && incoming.method !== "HEAD" &&
    Number(response.headers.get("content-length") ?? -1) > STREAM_MIN_BYTES;
  const bytes = response.body === null || incoming.method === "HEAD" || streamed
    ? undefined
    : new Uint8Array(await response.arrayBuffer());
  if (res.destroyed) {
    await response.body?.cancel().catch(() => {});
    return;
  }
  res.statusCode = response.status;
  // `forEach`, not `for...of`: Deno's Headers iterator sorts the list again at every step.
  response.headers.forEach((v, k) => {
    if (k !== "set-cookie") res.setHeader(k, v);
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) res.setHeader("set-cookie", cookies);
  if (bytes !== undefined) res.setHeader("content-length", bytes.length);
  if (streamed) {
    closeIfUnread(incoming, res, state);
    await pipeBody(response.body!, res, stream);
  } else endAnswer(incoming, res, state, bytes);
}

/** Write a direct handler's answer (HEAD gets the headers only), then run its `afterWrite`. */
function writeAnswer(
  incoming: http.IncomingMessage,
  res: http.ServerResponse,
  answer: DirectAnswer,
  state: BodyState,
): void {
  try {
    if (res.destroyed) return;
    res.statusCode = answer.status;
    for (const k in answer.headers) res.setHeader(k, answer.headers[k]);
    res.setHeader("content-length", answer.body.length);
    endAnswer(incoming, res, state, incoming.method === "HEAD" ? undefined : answer.body);
  } finally {
    try {
      answer.afterWrite?.();
    } catch {
      // The answer is out; what follows it cannot change it.
    }
  }
}

/**
 * A request whose body was not read to its end cannot leave its connection in a known state:
 * the answer says `connection: close`. node:http then closes the socket as soon as the answer is
 * written (a client still sending may see a reset instead of its answer); the timer only bounds
 * a socket that stays open anyway. Streamed answers only: see {@link endAnswer} for the rest.
 */
function closeIfUnread(
  incoming: http.IncomingMessage,
  res: http.ServerResponse,
  state: BodyState,
): void {
  if (!state.cancelled && incoming.complete) return;
  res.setHeader("connection", "close");
  incoming.resume();
  const socket = incoming.socket;
  res.once("finish", () => setTimeout(() => socket.destroy(), LINGER_MS).unref?.());
}

/**
 * Write a whole answer. When the request's body was not read to its end (an early refusal), the
 * answer says `connection: close` and is written at once, but the response is ended (and the
 * socket closed) only once the rest of the body has been read and dropped: closing a socket with
 * unread bytes resets it, and the reset can overtake the answer, so a client still uploading
 * would see "connection reset" instead of its 413 or 503. The reading is bounded: at most
 * {@link DRAIN_MAX_BYTES}, with no pause over {@link LINGER_MS}; past either the socket is closed.
 */
function endAnswer(
  incoming: http.IncomingMessage,
  res: http.ServerResponse,
  state: BodyState,
  bytes: Uint8Array | undefined,
): void {
  if (incoming.complete) {
    // All of it arrived, yet the handler stopped reading: the connection is not reused.
    if (state.cancelled) res.setHeader("connection", "close");
    res.end(bytes);
    return;
  }
  res.setHeader("connection", "close");
  // The whole answer goes out now (its length is declared); only the end waits.
  if (bytes !== undefined && bytes.length > 0) res.write(bytes);
  else res.flushHeaders();
  drainBody(incoming, () => res.end(), () => incoming.socket.destroy());
}

/** Read and drop the rest of `incoming`; `done` at its end, `giveUp` past the bounds. */
function drainBody(incoming: http.IncomingMessage, done: () => void, giveUp: () => void): void {
  let drained = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let settled = false;
  const settle = (whole: boolean) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    incoming.off("data", onData);
    (whole ? done : giveUp)();
  };
  const idle = () => {
    clearTimeout(timer);
    timer = setTimeout(() => settle(false), LINGER_MS);
  };
  const onData = (chunk: Uint8Array) => {
    drained += chunk.length;
    if (drained > DRAIN_MAX_BYTES) settle(false);
    else idle();
  };
  incoming.on("data", onData);
  incoming.once("end", () => settle(true));
  incoming.once("aborted", () => settle(false));
  incoming.once("close", () => settle(incoming.complete));
  idle();
  incoming.resume();
}

/**
 * Write `body` to `res` chunk by chunk, waiting for the socket to drain (at most `stallMs`, then
 * the connection is dropped); a client that goes away cancels the body (a proxied answer then
 * stops being fetched).
 */
async function pipeBody(
  body: ReadableStream<Uint8Array>,
  res: http.ServerResponse,
  stallMs: number,
): Promise<void> {
  const reader = body.getReader();
  const gone = () => reader.cancel().catch(() => {});
  res.once("close", gone);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (res.destroyed) return;
      if (!res.write(value)) {
        await new Promise<void>((resolve) => {
          const go = () => {
            clearTimeout(timer);
            res.off("drain", go);
            res.off("close", go);
            resolve();
          };
          const timer = setTimeout(() => {
            res.destroy(); // 'close' follows: the body is cancelled, the loop ends
            go();
          }, stallMs);
          res.on("drain", go);
          res.on("close", go);
        });
      }
    }
    res.end();
  } catch {
    // The body failed (upstream gone): the client cannot get a whole answer.
    res.destroy();
  } finally {
    res.off("close", gone);
  }
}

/** Hand an upgrade request to the app; it accepts through shared/http/upgrade.ts or answers. */
function upgradeOne(
  handler: FetchHandler,
  wss: WebSocketServer,
  incoming: http.IncomingMessage,
  socket: Duplex,
  head: Uint8Array,
): void {
  // node:http hands an upgrade's socket over with no error listener of its own: a peer that
  // resets it (Chrome does, after a refused handshake) must not end the process.
  socket.on("error", () => socket.destroy());
  let accepted = false;
  let request: Request;
  try {
    request = requestOf(incoming, urlOf(incoming));
  } catch {
    socket.destroy();
    return;
  }
  registerUpgrade(request, (o: UpgradeOptions) => {
    let ws: import("ws").WebSocket | undefined;
    // Without verifyClient or compression, ws completes the handshake synchronously.
    wss.handleUpgrade(incoming, socket, head as Buffer, (w) => ws = w);
    if (!ws) throw new ServiceError("INVALID_INPUT", "WebSocket handshake refused");
    accepted = true;
    keepAlive(ws, o.idleTimeoutS);
    const w = ws;
    // A frame shared by many clients is sent as is: `ws` queues the same bytes for each.
    const shared = Object.assign(w, {
      sendText: (data: Uint8Array) => w.send(data, { binary: false }),
      // Stop reading a peer that is being closed (its frames would cost unmasking and decoding);
      // what the server still writes (an error, the close frame) goes out.
      pauseReading: () => (w as unknown as { _socket?: { pause(): void } })._socket?.pause(),
    });
    return { socket: shared as unknown as StreamSocket, response: new Response(null) };
  });
  const info: ServeInfo = { remoteAddr: remoteOf(incoming), completed: Promise.resolve() };
  Promise.resolve()
    .then(() => handler(request, info))
    .then(async (response) => {
      if (accepted || socket.destroyed) return;
      const body = new Uint8Array(await response.arrayBuffer());
      let headText = `HTTP/1.1 ${response.status} ${http.STATUS_CODES[response.status] ?? ""}\r\n`;
      for (const [k, v] of response.headers) headText += `${k}: ${v}\r\n`;
      headText += `content-length: ${body.length}\r\nconnection: close\r\n\r\n`;
      socket.write(headText);
      socket.end(body);
    })
    .catch(() => socket.destroy());
}

/** Ping every `idleS` seconds; a client that did not answer the last ping is dropped. */
function keepAlive(ws: import("ws").WebSocket, idleS: number): void {
  let answered = true;
  ws.on("pong", () => answered = true);
  const timer = setInterval(() => {
    if (!answered) return ws.terminate();
    answered = false;
    ws.ping();
  }, idleS * 1000);
  ws.on("close", () => clearInterval(timer));
}
