/**
 * Fan-out of one periodic message to many WebSocket clients. The message is built ONCE per
 * tick and the same frame goes to every client, so a hundred dashboards cost one build, not a
 * hundred; sockets that can send prepared bytes (`ws`, under the node:http server) share one
 * encoded copy. A client that has not taken the previous frames skips ticks instead of having
 * copies queued for it. The ticker runs only while at least one client is connected. Used by the
 * worker's /ws/status and the router's /ws/cluster-status and /ws/status; the streams of one
 * process share one cap on subscribers ({@link StreamSlots}).
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
   * slow or frozen reader holds at most about one frame (default 64 KiB).
   */
  maxBufferedBytes?: number;
  /** The subscriber cap this stream shares with the process's other streams. */
  slots?: StreamSlots;
  /** Told when a build fails (the tick is skipped, the stream goes on). */
  onError?: (err: unknown) => void;
}

/** Default of {@link BroadcasterOptions.maxBufferedBytes}. */
const MAX_BUFFERED_BYTES = 64 * 1024;

/** Viewers one process serves at most by default, all streams together (each costs a socket). */
export const MAX_STREAM_CLIENTS = 64;

/** A cap on stream subscribers, shared by the streams of one process. */
export class StreamSlots {
  readonly max: number;
  #used = 0;

  constructor(max: number) {
    this.max = max;
  }

  /** Subscribers holding a slot. */
  get used(): number {
    return this.#used;
  }

  /** Take a slot; false when none is left. */
  take(): boolean {
    if (this.#used >= this.max) return false;
    this.#used++;
    return true;
  }

  /** Give a slot back. */
  release(): void {
    this.#used = Math.max(0, this.#used - 1);
  }
}

const utf8 = new TextEncoder();

/** Sends one message per tick to every connected socket. */
export class Broadcaster {
  readonly #o: BroadcasterOptions;
  readonly #slots: StreamSlots;
  readonly #clients = new Set<StreamSocket>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #building = false;
  #closed = false;
  #builds = 0;

  constructor(opts: BroadcasterOptions) {
    this.#o = opts;
    this.#slots = opts.slots ?? new StreamSlots(MAX_STREAM_CLIENTS);
  }

  /** True when no subscriber slot is left (new clients get 503). */
  get full(): boolean {
    return this.#slots.used >= this.#slots.max;
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

  /** Serve `socket` from its open event until it closes (it holds a slot meanwhile). */
  add(socket: StreamSocket): void {
    if (this.#closed || !this.#slots.take()) {
      socket.addEventListener("open", () => socket.close(1001, "server closing"));
      return;
    }
    let left = false;
    const join = () => {
      if (left) return;
      this.#clients.add(socket);
      if (this.#timer === undefined) {
        this.#timer = setInterval(() => this.#tick(), this.#o.intervalMs);
        // First frame right away rather than one period after the first client connects.
        this.#tick();
      }
    };
    const leave = () => {
      if (left) return;
      left = true;
      this.#slots.release();
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
    const max = this.#o.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
    let bytes: Uint8Array | undefined;
    for (const s of this.#clients) {
      if (s.readyState !== WebSocket.OPEN || s.bufferedAmount > max) continue;
      try {
        if (s.sendText) s.sendText(bytes ??= utf8.encode(frame));
        else s.send(frame);
      } catch {
        // The socket died between the check and the send; its close event removes it.
      }
    }
  }
}

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
  if (broadcaster.full) {
    return errorResponse(
      new ServiceError(
        "QUEUE_FULL",
        `too many status stream clients (SVC_MAX_STATUS_SUBSCRIBERS)`,
        { retryAfterS: 5 },
      ),
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
