/**
 * Fan-out of one periodic message to many WebSocket clients: built once per tick, the same
 * string to every client, ticking only while someone listens. (The worker has its own copy:
 * router and worker share only `shared/`.)
 */

/** Sends one message per tick to every connected socket. */
export class FleetBroadcaster {
  readonly #clients = new Set<WebSocket>();
  readonly #intervalMs: number;
  readonly #build: () => Promise<string>;
  readonly #onError: (err: unknown) => void;
  #timer: ReturnType<typeof setInterval> | undefined;
  #building = false;

  constructor(intervalMs: number, build: () => Promise<string>, onError: (err: unknown) => void) {
    this.#intervalMs = intervalMs;
    this.#build = build;
    this.#onError = onError;
  }

  /** Clients currently receiving frames. */
  get clientCount(): number {
    return this.#clients.size;
  }

  /** Serve `socket` from its open event until it closes. */
  add(socket: WebSocket): void {
    socket.addEventListener("open", () => {
      this.#clients.add(socket);
      if (this.#timer === undefined) {
        this.#timer = setInterval(() => this.#tick(), this.#intervalMs);
        this.#tick(); // first frame now, not one period later
      }
    });
    const leave = () => {
      this.#clients.delete(socket);
      if (this.#clients.size === 0 && this.#timer !== undefined) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    };
    socket.addEventListener("close", leave);
    socket.addEventListener("error", leave);
  }

  async #tick(): Promise<void> {
    if (this.#building || this.#clients.size === 0) return;
    this.#building = true;
    let frame: string;
    try {
      frame = await this.#build();
    } catch (err) {
      this.#onError(err);
      return;
    } finally {
      this.#building = false;
    }
    for (const s of this.#clients) {
      // A client that stopped reading skips frames instead of growing the send buffer.
      if (s.readyState !== WebSocket.OPEN || s.bufferedAmount > 1 << 20) continue;
      try {
        s.send(frame);
      } catch {
        // Closed in between; its close event removes it.
      }
    }
  }
}
