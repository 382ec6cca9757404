/**
 * Fan-out of one periodic message to many WebSocket clients. The message is built ONCE per
 * tick and the same string goes to every client, so a hundred dashboards cost one build, not a
 * hundred. The ticker runs only while at least one client is connected. Used by the worker's
 * /ws/status and the router's /ws/cluster-status.
 */

import { errorResponse, ServiceError } from "../errors.ts";
import { type StreamSocket, upgradeWebSocket } from "../http/upgrade.ts";
import { answeredProtocol, offeredProtocols } from "../http/ws_auth.ts";

/** Options of {@link Broadcaster}. */
export interface BroadcasterOptions {
  /** Tick period. */
  intervalMs: number;
  /** Builds the message of one tick. */
  build: () => Promise<string> | string;
  /**
   * A client with more than this many bytes still unsent skips frames until it catches up, so a
   * slow or frozen reader cannot make the server buffer without bound.
   */
  maxBufferedBytes?: number;
  /** Told when a build fails (the tick is skipped, the stream goes on). */
  onError?: (err: unknown) => void;
}

/** Sends one message per tick to every connected socket. */
export class Broadcaster {
  readonly #o: BroadcasterOptions;
  readonly #clients = new Set<StreamSocket>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #building = false;
  #closed = false;
  #builds = 0;

  constructor(opts: BroadcasterOptions) {
    this.#o = opts;
  }

  /** Clients currently receiving frames. */
  get clientCount(): number {
    return this.#clients.size;
  }

  /** Messages built so far (one per tick with clients; tests check it does not scale with them). */
  get buildCount(): number {
    return this.#builds;
  }

  /** True while the ticker runs. */
  get ticking(): boolean {
    return this.#timer !== undefined;
  }

  /** Serve `socket` from its open event until it closes. */
  add(socket: StreamSocket): void {
    if (this.#closed) {
      socket.addEventListener("open", () => socket.close(1001, "server closing"));
      return;
    }
    const join = () => {
      this.#clients.add(socket);
      if (this.#timer === undefined) {
        this.#timer = setInterval(() => this.#tick(), this.#o.intervalMs);
        // First frame right away rather than one period after the first client connects.
        this.#tick();
      }
    };
    const leave = () => {
      this.#clients.delete(socket);
      if (this.#clients.size === 0) this.#stopTicker();
    };
    if (socket.readyState === WebSocket.OPEN) join();
    else socket.addEventListener("open", join);
    socket.addEventListener("close", leave);
    socket.addEventListener("error", leave);
  }

  /** Close every client and stop ticking (process shutdown). */
  close(): void {
    this.#closed = true;
    this.#stopTicker();
    for (const s of this.#clients) {
      try {
        s.close(1001, "server closing");
      } catch {
        // Already closing.
      }
    }
    this.#clients.clear();
  }

  #stopTicker(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #tick(): Promise<void> {
    // A build slower than the period skips ticks instead of piling up.
    if (this.#building || this.#clients.size === 0) return;
    this.#building = true;
    let frame: string;
    try {
      frame = await this.#o.build();
      this.#builds++;
    } catch (err) {
      this.#o.onError?.(err);
      return;
    } finally {
      this.#building = false;
    }
    const max = this.#o.maxBufferedBytes ?? 1 << 20;
    for (const s of this.#clients) {
      if (s.readyState !== WebSocket.OPEN || s.bufferedAmount > max) continue;
      try {
        s.send(frame);
      } catch {
        // The socket died between the check and the send; its close event removes it.
      }
    }
  }
}

/** Viewers one stream serves at most; beyond it new ones get 503 (each costs a socket). */
export const MAX_STREAM_CLIENTS = 256;
/** Seconds without a pong before a silent client is dropped (Deno pings it). */
export const STREAM_IDLE_TIMEOUT_S = 10;

/**
 * Answer a GET on a status-stream path: 400 unless it is a WebSocket upgrade, 503 when the
 * stream is full, else upgrade and hand the socket to `broadcaster`.
 */
export function acceptStreamClient(req: Request, path: string, broadcaster: Broadcaster): Response {
  if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    return errorResponse(new ServiceError("INVALID_INPUT", `${path} is a WebSocket endpoint`), {
      upgrade: "websocket",
    });
  }
  if (broadcaster.clientCount >= MAX_STREAM_CLIENTS) {
    return errorResponse(
      new ServiceError("QUEUE_FULL", `too many ${path} clients`, { retryAfterS: 5 }),
    );
  }
  const protocol = answeredProtocol(offeredProtocols(req.headers.get("sec-websocket-protocol")));
  const { socket, response } = upgradeWebSocket(req, {
    idleTimeoutS: STREAM_IDLE_TIMEOUT_S,
    protocol,
  });
  broadcaster.add(socket);
  return response;
}
