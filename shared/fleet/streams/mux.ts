/**
 * Multiplexed request streams over one WebSocket, with credit per stream and per connection
 * (HTTP/2's scheme, shared/docs/transport.md §1): a sender may send body bytes only within both,
 * and a receiver grants more as its reader consumes them. The per-stream window keeps one slow
 * reader (a big upload, a slow client) from holding up the others; the connection window bounds
 * what one peer can make the other buffer, whatever the number of streams. Body frames are sent
 * round-robin (new streams first) and only while the socket holds less than
 * {@link HIGH_WATER_BYTES}: neither WebSocket here pushes back (Deno's `send()` is fire-and-forget;
 * `ws` queues), so the queue lives here, and a control frame (heartbeat, status, drain, credit,
 * reset) sent straight to the socket waits behind at most that much body data.
 *
 * One class serves both ends: the router opens streams (ids 1, 2, 3, ...), the worker accepts them.
 * A peer that breaks the framing, sends past its credit or names a stream never opened is a
 * violation: the owner closes the connection, and only that connection's streams fail.
 *
 * Why the dial-back socket and not a second, data-only connection: that one would need its own
 * authentication and binding to the registered worker, its own reconnect loop and keep-alive, and
 * a worker could be half-connected. It would only spare control frames the wait behind at most
 * HIGH_WATER_BYTES of data on the same TCP connection (milliseconds on a LAN, against heartbeat
 * bounds of seconds). Not measured side by side: the second connection was not built.
 */
import {
  creditFrame,
  dataFrame,
  decodeFrame,
  FRAME,
  headFrame,
  messageBytes,
  RESET,
  type ResetCode,
  resetFrame,
} from "./frames.ts";

/** Body bytes per DATA frame (and inline in a HEAD frame). */
export const MAX_DATA_BYTES = 64 * 1024;

/** Largest head (JSON) of a stream; heads carry allow-listed headers only. */
export const MAX_HEAD_BYTES = 32 * 1024;

/** Largest stream frame either end sends: a head with a full inline body. */
export const MAX_STREAM_FRAME_BYTES = 6 + 4 + MAX_HEAD_BYTES + MAX_DATA_BYTES;

/** Body data is handed to the socket only while it holds less than this. */
export const HIGH_WATER_BYTES = 256 * 1024;

/** How often a sender whose socket is full looks again (no drain event in Deno's WebSocket). */
const DRAIN_POLL_MS = 1;

/** Highest stream id; a connection that used them all is closed (its worker dials again). */
export const MAX_STREAM_ID = 0xffff_fff0;

/** Credit windows: what may be in flight unconsumed, per stream and for the connection. */
export interface StreamWindows {
  stream: number;
  connection: number;
}

/** What a connection's streams may cost. */
export interface MuxOptions {
  /** `opener`: the router (opens streams); `acceptor`: the worker. */
  role: "opener" | "acceptor";
  /** What this end lets its peer send unconsumed. */
  receive: StreamWindows;
  /** What the peer lets this end send (its receive windows). */
  send: StreamWindows;
  /** Streams open at once: an opener opens no more; an acceptor refuses more. */
  maxStreams: number;
  /** Largest binary message accepted. */
  maxFrameBytes: number;
  /** Where frames go (the fleet WebSocket). */
  sink: FrameSink;
  /** A stream the peer opened (acceptor only). */
  onOpen?(stream: MuxStream, head: unknown): void;
  /** The peer broke the protocol: close the connection (the mux is already closed). */
  onViolation(reason: string): void;
  /**
   * Opener: every stream id was used (after about 4 billion requests) and the last stream is over:
   * close the connection so that the worker dials a fresh one.
   */
  onIdsUsedUp?(): void;
  /** Highest stream id (tests use a small one); default {@link MAX_STREAM_ID}. */
  maxStreamId?: number;
}

/** What the mux needs of a socket. */
export interface FrameSink {
  send(frame: Uint8Array): void;
  /** Bytes queued in the socket, not yet written (framing included where the socket counts it). */
  readonly bufferedAmount: number;
}

/** What happens to a stream, as its owner hears it. */
export interface StreamEvents {
  /** The peer's HEAD arrived (`end`: no body follows). */
  head?(head: unknown, end: boolean): void;
  /** The peer reset the stream (its code), or the connection was lost (undefined). */
  aborted?(code: number | undefined): void;
  /** This side's last bytes and END were handed to the socket. */
  delivered?(): void;
}

/** The error a read of a stream that was reset or lost rejects with. */
export class StreamAbortedError extends Error {
  readonly code: number | undefined;
  constructor(code: number | undefined) {
    super(code === undefined ? "connection lost" : `stream reset (${code})`);
    this.code = code;
  }
}

/** One request stream. */
export class MuxStream {
  readonly id: number;
  events: StreamEvents;
  readonly #mux: StreamMux;
  // Outgoing.
  #headOut: unknown;
  #headSent = false;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #endWanted = false;
  #endSent = false;
  /** Body bytes the peer still accepts on this stream. */
  credit: number;
  // Incoming.
  #headIn = false;
  #chunks: Uint8Array[] = [];
  #inEnded = false;
  /** Body bytes the peer may still send before it is granted more. */
  #allowed: number;
  #ungranted = 0;
  #waiter: { resolve(c: Uint8Array | null): void; reject(e: Error): void } | undefined;
  #aborted: StreamAbortedError | undefined;

  constructor(mux: StreamMux, id: number, events: StreamEvents, credit: number, allowed: number) {
    this.#mux = mux;
    this.id = id;
    this.events = events;
    this.credit = credit;
    this.#allowed = allowed;
  }

  /** Every byte and the END of this side were handed to the socket. */
  get delivered(): boolean {
    return this.#endSent;
  }

  /** The stream was reset (by either side) or its connection lost. */
  get aborted(): boolean {
    return this.#aborted !== undefined;
  }

  /** The peer's side is over: its END arrived, or the stream was aborted. */
  get inputOver(): boolean {
    return this.#inEnded || this.#aborted !== undefined;
  }

  /** Send the head, then `body` (as much inline as credit allows), ending the side when `end`. */
  sendHead(head: unknown, body: readonly Uint8Array[], end: boolean): void {
    if (this.#aborted || this.#headOut !== undefined) return;
    this.#headOut = head;
    this.#queue(body, end);
  }

  /** Queue more body bytes (kept by reference until sent: they must not change). */
  write(body: readonly Uint8Array[], end: boolean): void {
    if (this.#aborted || this.#endWanted) return;
    this.#queue(body, end);
  }

  #queue(body: readonly Uint8Array[], end: boolean): void {
    for (const chunk of body) {
      if (chunk.length === 0) continue;
      this.#pending.push(chunk);
      this.#pendingBytes += chunk.length;
    }
    if (end) this.#endWanted = true;
    this.#mux.schedule(this);
  }

  /** Bytes queued to send, not yet handed to the socket. */
  get queuedBytes(): number {
    return this.#pendingBytes;
  }

  /** The next body chunk from the peer; null at its end. Rejects once the stream is aborted. */
  read(): Promise<Uint8Array | null> {
    const next = this.#chunks.shift();
    if (next !== undefined) {
      this.#consumed(next.length);
      return Promise.resolve(next);
    }
    if (this.#aborted) return Promise.reject(this.#aborted);
    if (this.#inEnded) {
      this.#mux.settle(this);
      return Promise.resolve(null);
    }
    return new Promise((resolve, reject) => this.#waiter = { resolve, reject });
  }

  /** Abandon the stream: tell the peer (RESET), drop what is queued either way. */
  reset(code: ResetCode = RESET.cancel): void {
    if (this.#aborted) return;
    this.#abort(code);
    // A stream the peer has never heard of (opened here, head still queued) ends here alone: a
    // RESET of an id it does not know is a violation that would close the whole connection.
    if (!this.#headSent && !this.#headIn) return this.#mux.settle(this);
    this.#mux.sendReset(this, code);
  }

  /** True when this side can send a frame now. */
  sendable(connCredit: number): boolean {
    if (this.#aborted || this.#endSent || this.#headOut === undefined) return false;
    if (!this.#headSent) return true;
    if (this.#pendingBytes > 0) return this.credit > 0 && connCredit > 0;
    return this.#endWanted;
  }

  /** Whether the head is still to go (new streams are served first). */
  get headPending(): boolean {
    return this.#headOut !== undefined && !this.#headSent;
  }

  /** Send one frame: the head (with what body fits), or one DATA frame; returns its body bytes. */
  flushOne(connCredit: number, sink: FrameSink): number {
    const n = Math.min(this.#pendingBytes, this.credit, connCredit, MAX_DATA_BYTES);
    const body = this.#take(n);
    const end = this.#endWanted && this.#pendingBytes === 0;
    if (!this.#headSent) {
      this.#headSent = true;
      sink.send(headFrame(this.id, this.#headOut, body, end));
    } else {
      sink.send(dataFrame(this.id, body, end));
    }
    this.credit -= n;
    if (end) {
      this.#endSent = true;
      this.#mux.settle(this);
      this.events.delivered?.();
    }
    return n;
  }

  /** The first `n` queued bytes, as one buffer. */
  #take(n: number): Uint8Array {
    this.#pendingBytes -= n;
    const first = this.#pending[0];
    if (n === 0) return new Uint8Array(0);
    if (first.length === n) return this.#pending.shift()!;
    if (first.length > n) {
      this.#pending[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const c = this.#pending[0];
      const k = Math.min(c.length, n - at);
      out.set(k === c.length ? c : c.subarray(0, k), at);
      at += k;
      if (k === c.length) this.#pending.shift();
      else this.#pending[0] = c.subarray(k);
    }
    return out;
  }

  /** The peer's HEAD (the mux checked it is the first). */
  headIn(head: unknown, body: Uint8Array, end: boolean): string | undefined {
    this.#headIn = true;
    const problem = this.dataIn(body, end);
    if (problem) return problem;
    this.events.head?.(head, end);
    return undefined;
  }

  /** Whether the peer's HEAD arrived. */
  get headReceived(): boolean {
    return this.#headIn;
  }

  /** Body bytes from the peer (the mux has counted them against the connection). */
  dataIn(body: Uint8Array, end: boolean): string | undefined {
    if (this.#inEnded) return "body bytes after the stream's END";
    if (body.length > this.#allowed) return "body bytes past the stream's credit";
    this.#allowed -= body.length;
    if (this.#aborted) {
      // Reset here but still on its way from the peer: given back at once.
      this.#mux.consumed(body.length);
      return undefined;
    }
    if (end) this.#inEnded = true;
    if (body.length > 0) {
      const w = this.#waiter;
      if (w) {
        this.#waiter = undefined;
        this.#consumed(body.length);
        w.resolve(body);
      } else {
        this.#chunks.push(body);
      }
    }
    if (end && this.#chunks.length === 0) {
      const w = this.#waiter;
      this.#waiter = undefined;
      w?.resolve(null);
      this.#mux.settle(this);
    }
    return undefined;
  }

  #consumed(n: number): void {
    this.#mux.consumed(n);
    if (this.#inEnded || this.#aborted) {
      if (this.#inEnded && this.#chunks.length === 0) this.#mux.settle(this);
      return;
    }
    this.#ungranted += n;
    const window = this.#mux.receiveWindows.stream;
    if (this.#ungranted >= window / 2) {
      this.#allowed += this.#ungranted;
      this.#mux.sendCredit(this.id, this.#ungranted);
      this.#ungranted = 0;
    }
  }

  /** Both sides are over (END both ways, read to the end). */
  get finished(): boolean {
    return this.#aborted !== undefined ||
      (this.#endSent && this.#inEnded && this.#chunks.length === 0);
  }

  /**
   * The peer reset the stream, or the connection went: drop everything, tell the owner. A reset
   * from a peer whose own side had ended (a whole answer, a whole request body) leaves what it
   * sent readable: only this side stops.
   */
  abortIn(code: number | undefined): void {
    if (this.#aborted) return;
    if (this.#inEnded && code !== undefined) {
      this.#pending = [];
      this.#pendingBytes = 0;
      this.#endSent = true;
      this.#mux.settle(this);
      this.events.aborted?.(code);
      return;
    }
    this.#abort(code);
    this.events.aborted?.(code);
  }

  #abort(code: number | undefined): void {
    this.#aborted = new StreamAbortedError(code);
    this.#pending = [];
    this.#pendingBytes = 0;
    const unread = this.#chunks.reduce((a, c) => a + c.length, 0);
    this.#chunks = [];
    if (unread > 0) this.#mux.consumed(unread);
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.reject(this.#aborted);
    this.#mux.settle(this);
  }
}

/** The streams of one connection. */
export class StreamMux {
  readonly #o: MuxOptions;
  readonly #streams = new Map<number, MuxStream>();
  /** Streams with a head to send (served first), then streams with body to send. */
  readonly #heads = new Set<MuxStream>();
  readonly #ready = new Set<MuxStream>();
  #connCredit: number;
  #connAllowed: number;
  #connUngranted = 0;
  /** Opener: the next id; acceptor: the highest id the peer opened. */
  #lastId = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(o: MuxOptions) {
    this.#o = o;
    this.#connCredit = o.send.connection;
    this.#connAllowed = o.receive.connection;
  }

  /** What this end lets its peer send. */
  get receiveWindows(): StreamWindows {
    return this.#o.receive;
  }

  /** Streams open now. */
  get openStreams(): number {
    return this.#streams.size;
  }

  /** Closed (violation, or the socket went). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Open a stream (opener); undefined when at the cap, closed, or out of ids. */
  open(events: StreamEvents): MuxStream | undefined {
    if (this.#closed || this.#o.role !== "opener") return undefined;
    if (this.#lastId >= (this.#o.maxStreamId ?? MAX_STREAM_ID)) {
      if (this.#streams.size === 0) this.#o.onIdsUsedUp?.();
      return undefined;
    }
    if (this.#streams.size >= this.#o.maxStreams) return undefined;
    const s = new MuxStream(
      this,
      ++this.#lastId,
      events,
      this.#o.send.stream,
      this.#o.receive.stream,
    );
    this.#streams.set(s.id, s);
    return s;
  }

  /** Handle one binary message from the peer. */
  receive(data: unknown): void {
    if (this.#closed) return;
    const bytes = messageBytes(data);
    if (!bytes) return this.#violation("binary message of an unknown kind");
    const d = decodeFrame(bytes, this.#o.maxFrameBytes);
    if (!d.ok) return this.#violation(d.error);
    const f = d.frame;
    if (f.type === FRAME.credit) {
      if (f.delta === 0) return; // carries nothing: never worth a pass over the streams
      if (f.id === 0) {
        const wasBlocked = this.#connCredit <= 0;
        this.#connCredit += f.delta;
        if (this.#connCredit > 2 ** 31) return this.#violation("connection credit overflow");
        // Only streams the connection's window held back need a new turn: a peer sending many
        // small updates must not buy a pass over every stream with each.
        if (wasBlocked) { for (const s of this.#streams.values()) this.schedule(s); }
        return;
      }
      const s = this.#streams.get(f.id);
      if (!s) {
        return this.#stale(f.id) ? undefined : this.#violation("CREDIT for an unknown stream");
      }
      s.credit += f.delta;
      if (s.credit > 2 ** 31) return this.#violation("stream credit overflow");
      return this.schedule(s);
    }
    if (f.type === FRAME.reset) {
      const s = this.#streams.get(f.id);
      if (!s) return this.#stale(f.id) ? undefined : this.#violation("RESET of an unknown stream");
      return s.abortIn(f.code);
    }
    // HEAD and DATA carry body bytes: counted against the connection first, whatever the stream.
    if (f.body.length > this.#connAllowed) {
      return this.#violation("body bytes past the connection's credit");
    }
    this.#connAllowed -= f.body.length;
    let s = this.#streams.get(f.id);
    if (f.type === FRAME.head) {
      if (!s && this.#o.role === "acceptor" && f.id > this.#lastId) {
        this.#lastId = f.id;
        s = new MuxStream(this, f.id, {}, this.#o.send.stream, this.#o.receive.stream);
        if (this.#streams.size >= this.#o.maxStreams) {
          this.consumed(f.body.length);
          this.sendReset(s, RESET.refused);
          return;
        }
        this.#streams.set(f.id, s);
        this.#o.onOpen?.(s, f.head);
      } else if (!s) {
        if (this.#stale(f.id)) return this.consumed(f.body.length);
        return this.#violation("HEAD for a stream never opened");
      } else if (s.headReceived) {
        return this.#violation("a second HEAD on a stream");
      }
      const problem = s.headIn(f.head, f.body, f.end);
      if (problem) return this.#violation(problem);
      return;
    }
    if (!s) {
      if (this.#stale(f.id)) return this.consumed(f.body.length);
      return this.#violation("DATA for a stream never opened");
    }
    if (!s.headReceived) return this.#violation("DATA before the stream's HEAD");
    const problem = s.dataIn(f.body, f.end);
    if (problem) this.#violation(problem);
  }

  /** A stream id that was open once and is over now (frames still on their way are ignored). */
  #stale(id: number): boolean {
    return id > 0 && id <= this.#lastId;
  }

  /** Close every stream (the socket went, or the peer broke the protocol). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#heads.clear();
    this.#ready.clear();
    const streams = [...this.#streams.values()];
    this.#streams.clear();
    for (const s of streams) s.abortIn(undefined);
  }

  #violation(reason: string): void {
    this.close();
    this.#o.onViolation(reason);
  }

  /** Queue `s` to send if it can; sends at once when the socket has room. */
  schedule(s: MuxStream): void {
    if (this.#closed || !s.sendable(this.#connCredit)) return;
    (s.headPending ? this.#heads : this.#ready).add(s);
    this.#pump();
  }

  #pump(): void {
    if (this.#timer !== undefined || this.#closed) return;
    const sink = this.#o.sink;
    for (;;) {
      const s = first(this.#heads) ?? first(this.#ready);
      if (!s) return;
      if (sink.bufferedAmount >= HIGH_WATER_BYTES) {
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.#pump();
        }, DRAIN_POLL_MS);
        return;
      }
      this.#heads.delete(s);
      this.#ready.delete(s);
      if (!s.sendable(this.#connCredit)) continue;
      try {
        this.#connCredit -= s.flushOne(this.#connCredit, sink);
      } catch {
        // The socket is closing: its close handler closes the mux.
        return;
      }
      if (s.sendable(this.#connCredit)) this.#ready.add(s);
    }
  }

  /** `n` body bytes of the peer's were consumed (read, or dropped): grant them back in batches. */
  consumed(n: number): void {
    if (this.#closed || n === 0) return;
    this.#connUngranted += n;
    if (this.#connUngranted >= this.#o.receive.connection / 2) {
      this.#connAllowed += this.#connUngranted;
      this.sendCredit(0, this.#connUngranted);
      this.#connUngranted = 0;
    }
  }

  /** Send a CREDIT frame. */
  sendCredit(id: number, delta: number): void {
    this.#sendNow(creditFrame(id, delta));
  }

  /** Send a RESET frame and forget the stream. */
  sendReset(s: MuxStream, code: ResetCode): void {
    this.#sendNow(resetFrame(s.id, code));
    this.settle(s);
  }

  #sendNow(frame: Uint8Array): void {
    if (this.#closed) return;
    try {
      this.#o.sink.send(frame);
    } catch {
      // The socket is closing: its close handler closes the mux.
    }
  }

  /** Forget `s` once both of its sides are over. */
  settle(s: MuxStream): void {
    if (!s.finished) return;
    if (!this.#streams.delete(s.id)) return;
    this.#heads.delete(s);
    this.#ready.delete(s);
    const usedUp = this.#lastId >= (this.#o.maxStreamId ?? MAX_STREAM_ID);
    if (usedUp && this.#streams.size === 0 && this.#o.role === "opener") this.#o.onIdsUsedUp?.();
  }
}

/** The first member of `set` in insertion order (the next stream to serve). */
function first<T>(set: Set<T>): T | undefined {
  for (const v of set) return v;
  return undefined;
}
