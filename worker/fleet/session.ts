/**
 * One socket of the fleet link, from dial to close: its timers, the router's timings, when the
 * router was last heard, and how the session ended. The link (`link.ts`) runs one session at a
 * time and decides from its end how soon to dial again.
 */
import {
  CLOSE_CODES,
  decodeRouterMessage,
  encodeMessage,
  type RegisteredMessage,
  type StreamGrant,
  type WorkerMessage,
} from "@svc/shared/fleet/protocol";
import type { StreamMux } from "@svc/shared/fleet/streams/mux";
import type { Logger } from "@svc/shared/log";
import { WebSocket as WsClient } from "ws";

/** Largest message taken from the router: control frames (1 MiB of JSON) and stream frames. */
const MAX_ROUTER_MESSAGE_BYTES = 2 * 1024 * 1024;

/** Bound on the TCP + TLS + HTTP upgrade of one dial. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Bound on waiting for `registered` after sending `register`. */
export const REGISTER_TIMEOUT_MS = 5_000;
/** Timings used until the router states its own (in `registered`). */
const DEFAULT_TIMINGS: RouterTimings = { heartbeat: 500, status: 1000, stale: 3000 };

/** The router's beat, in ms: how often to ping and send status, and when silence means gone. */
interface RouterTimings {
  heartbeat: number;
  status: number;
  stale: number;
}

/** How one socket session ended. */
export interface SessionEnd {
  /** The router had accepted the registration on this socket. */
  registered: boolean;
  /** Reconnect without backoff (the router went silent or closed a healthy session). */
  immediate: boolean;
  /** Back off to the cap (the router refused us; retrying fast will not help). */
  refused: boolean;
}

/** What a session needs from its link. */
export interface SessionHost {
  routerWsUrl: string;
  token: string;
  /** Open the socket (default: a WebSocket presenting the token; tests pass a scripted one). */
  dial?: (url: string, token: string) => WebSocket;
  /** The first frame, sent when the socket opens. */
  registerFrame(): WorkerMessage;
  /** A status frame, or undefined when no snapshot could be taken. */
  statusFrame(): WorkerMessage | undefined;
  /** The router accepted the registration. */
  onRegistered(msg: RegisteredMessage): void;
  /** The router acknowledged a drain notice. */
  onDrainAck(): void;
  /** A dial or registration failed (the link rate-limits these logs). */
  noteFailure(message: string): void;
  log: Logger;
  /**
   * Serve the router's request streams on the socket (connection transport; absent: requests
   * come over HTTP). `onViolation`: the router broke the stream protocol.
   */
  acceptStreams?(
    socket: WebSocket,
    grant: StreamGrant,
    onViolation: (reason: string) => void,
  ): StreamMux;
}

/**
 * Open a fleet socket to the router, presenting the worker token on the upgrade request. With
 * `ws` rather than Deno's WebSocket: its socket has TCP_NODELAY, which answers over the
 * connection need. Deno's client socket keeps Nagle's algorithm on, and an answer of a few KB
 * then waited for the router's delayed ACK: 45 ms per request at concurrency 1, measured (a
 * 1-item bench-small answer, and 8 fixture/dense items), against 2 ms over HTTP.
 */
function dialRouter(url: string, token: string): WebSocket {
  const ws = new WsClient(url, {
    headers: { authorization: `Bearer ${token}` },
    perMessageDeflate: false,
    maxPayload: MAX_ROUTER_MESSAGE_BYTES,
  });
  return ws as unknown as WebSocket;
}

/** One dial and, if it succeeds, one registered session; `ended` resolves when it is over. */
export class LinkSession {
  /** Resolves once, when the session is over and its timers are cleared. */
  readonly ended: Promise<SessionEnd>;
  readonly #host: SessionHost;
  readonly #ws: WebSocket | undefined;
  // Timers leave the set when they fire: status and heartbeat ticks re-arm until the end.
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #resolve!: (end: SessionEnd) => void;
  #timings = DEFAULT_TIMINGS;
  #lastFrame = Date.now();
  #registered = false;
  #refused = false;
  #finished = false;
  /** The router's request streams on this socket (connection transport). */
  #streams: StreamMux | undefined;

  /** Dial the router now. */
  constructor(host: SessionHost) {
    this.#host = host;
    this.ended = new Promise<SessionEnd>((resolve) => this.#resolve = resolve);
    let ws: WebSocket;
    try {
      ws = (host.dial ?? dialRouter)(host.routerWsUrl, host.token);
    } catch (err) {
      host.log("error", "cannot dial the router", { error: (err as Error).message });
      this.#finished = true;
      this.#resolve({ registered: false, immediate: false, refused: true });
      return;
    }
    this.#ws = ws;
    // Request streams arrive as binary messages: as bytes, not Blobs.
    ws.binaryType = "arraybuffer";
    // `ws` reports an error with no listener as an uncaught exception (closing a socket still
    // connecting does): one listener stays after the session detaches its handlers.
    ws.addEventListener("error", () => {});
    this.#later(() => {
      if (ws.readyState === WebSocket.CONNECTING) {
        host.noteFailure("router connection timed out");
        this.#finish({ registered: false, immediate: false, refused: false }, CLOSE_CODES.normal);
      }
    }, CONNECT_TIMEOUT_MS);
    ws.onopen = () => this.#opened();
    ws.onmessage = (ev) => this.#received(ev.data);
    ws.onerror = (ev) => this.#failed((ev as ErrorEvent).message ?? "");
    ws.onclose = (ev) => {
      // Going away: the router is shutting down (restart): dial again at once, it may be back.
      const immediate = this.#registered && ev.code === CLOSE_CODES.goingAway;
      this.#finish({ registered: false, immediate, refused: this.#refused });
    };
  }

  /** True while registered over an open socket. */
  get connected(): boolean {
    return !this.#finished && this.#registered && this.#ws?.readyState === WebSocket.OPEN;
  }

  /** Send a frame if the socket is open (frames to a closing socket are dropped). */
  send(msg: WorkerMessage | undefined): void {
    const ws = this.#ws;
    if (!msg || !ws || ws.readyState !== WebSocket.OPEN) return;
    try {
      ws.send(encodeMessage(msg));
    } catch {
      // The socket is closing; its close handler ends the session.
    }
  }

  /**
   * End the session from outside with `code`; resolves when the socket's close handshake is over
   * (at once when it was already closing). Callers bound the wait.
   */
  end(code: number, reason: string): Promise<void> {
    const ws = this.#ws;
    const closed = ws && !this.#finished && ws.readyState < WebSocket.CLOSING
      ? new Promise<void>((resolve) => ws.addEventListener("close", () => resolve()))
      : Promise.resolve();
    this.#finish({ registered: false, immediate: false, refused: false }, code, reason);
    return closed;
  }

  #later(fn: () => void, ms: number): void {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    this.#timers.add(t);
  }

  #opened(): void {
    this.#lastFrame = Date.now();
    this.send(this.#host.registerFrame());
    this.#later(() => {
      if (!this.#registered) {
        this.#host.noteFailure("router did not acknowledge the registration");
        this.#finish({ registered: false, immediate: false, refused: false }, CLOSE_CODES.normal);
      }
    }, REGISTER_TIMEOUT_MS);
  }

  #received(data: unknown): void {
    this.#lastFrame = Date.now();
    if (typeof data !== "string") {
      if (this.#streams) this.#streams.receive(data);
      else this.#host.log("warn", "binary frame from the router without request streams");
      return;
    }
    const decoded = decodeRouterMessage(data);
    if (!decoded.ok) {
      this.#host.log("warn", "invalid frame from router", { error: decoded.error });
      return;
    }
    const msg = decoded.message;
    switch (msg.type) {
      case "registered":
        this.#accepted(msg);
        return;
      case "ping":
        this.send({ type: "pong", t: msg.t });
        return;
      case "pong":
        return;
      case "ack":
        this.#host.onDrainAck();
        return;
      case "error":
        this.#refused = msg.code === "PROTOCOL_MISMATCH";
        this.#host.log(this.#refused ? "error" : "warn", "router refused the worker", {
          code: msg.code,
          message: msg.message,
        });
        return;
    }
  }

  #failed(message: string): void {
    if (/\b401\b/.test(message)) {
      this.#refused = true;
      this.#host.noteFailure(
        "router refused the worker token (HTTP 401): check SVC_WORKER_TOKEN",
      );
    } else if (/\b503\b/.test(message)) {
      // The fleet path answers 503 only at the router's fleet caps (the why is in its log).
      this.#host.noteFailure(
        "router refused the connection (HTTP 503): the fleet is at the router's " +
          "SVC_FLEET_MAX_CONNECTIONS or SVC_FLEET_MAX_STATUS_BYTES_PER_S (both derive from " +
          "SVC_FLEET_WORKERS); retrying with backoff",
      );
    } else if (!this.#registered) {
      this.#host.noteFailure(`cannot reach the router: ${message || "connection failed"}`);
    }
  }

  /** Registered: adopt the router's timings, send status at once and on its beat, heartbeat. */
  #accepted(msg: RegisteredMessage): void {
    if (this.#registered) return;
    this.#registered = true;
    this.#timings = {
      heartbeat: msg.heartbeat_interval_ms,
      status: msg.status_interval_ms,
      stale: msg.stale_after_ms,
    };
    this.#host.onRegistered(msg);
    if (msg.streams && this.#host.acceptStreams && this.#ws) {
      this.#streams = this.#host.acceptStreams(this.#ws, msg.streams, (reason) => {
        this.#host.log("error", "the router broke the request-stream protocol", { error: reason });
        this.#finish(
          { registered: true, immediate: false, refused: false },
          CLOSE_CODES.invalidMessage,
          "request stream protocol",
        );
      });
    }
    // Status at once (the router learns the load before routing), then on the router's beat.
    this.send(this.#host.statusFrame());
    this.#later(() => this.#statusTick(), this.#timings.status);
    this.#later(() => this.#heartbeat(), this.#timings.heartbeat);
  }

  #statusTick(): void {
    this.send(this.#host.statusFrame());
    this.#later(() => this.#statusTick(), this.#timings.status);
  }

  #heartbeat(): void {
    // A frozen router never closes its socket: silence past the bound means it is gone.
    const silentMs = Date.now() - this.#lastFrame;
    if (silentMs > this.#timings.stale) {
      this.#host.log("warn", "router silent past the heartbeat bound", { silent_ms: silentMs });
      this.#finish(
        { registered: true, immediate: true, refused: false },
        CLOSE_CODES.heartbeatTimeout,
        "heartbeat timeout",
      );
      return;
    }
    this.send({ type: "ping", t: Date.now() });
    this.#later(() => this.#heartbeat(), this.#timings.heartbeat);
  }

  #finish(end: SessionEnd, closeCode?: number, reason?: string): void {
    if (this.#finished) return;
    this.#finished = true;
    // Requests in flight on this socket are over: their work is dropped (the router answers 502).
    this.#streams?.close();
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    const ws = this.#ws!;
    // Detach: after a heartbeat timeout the old socket's onclose may never fire, and a late one
    // must not end the next session.
    ws.onopen =
      ws.onmessage =
      ws.onerror =
      ws.onclose =
        null;
    if (closeCode !== undefined && ws.readyState < WebSocket.CLOSING) {
      try {
        ws.close(closeCode, reason);
      } catch {
        // already closing
      }
    }
    this.#resolve({ ...end, registered: end.registered || this.#registered });
  }
}
