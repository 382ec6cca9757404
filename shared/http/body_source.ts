/**
 * Request bodies handed from the server to the body reader (shared/http/read_body.ts) without a
 * ReadableStream. Reading a stream costs its controller and a promise per chunk; the node:http
 * server hands the handler a plain pull source beside the `Request` (`env.body`, which
 * `readBodyLimited` takes), and the `Request`'s own body stream pulls from the same source.
 * Requests that come without one (Deno.serve, tests, `app.request`) are read from their stream.
 */

/** Pull-based request body: `read` resolves with the next chunk, or null at the end. */
export interface BodySource {
  /** The next chunk; null once the body is complete. Rejects when the client goes away. */
  read(): Promise<Uint8Array | null>;
  /** Stop reading: the rest of the body is not wanted (the connection is not reused). */
  cancel(): void;
}

/** A byte source with node's stream events (an `IncomingMessage`). */
export interface NodeReadable {
  on(event: "data", fn: (chunk: Uint8Array) => void): unknown;
  on(event: "end" | "aborted", fn: () => void): unknown;
  on(event: "error", fn: (err: Error) => void): unknown;
  pause(): unknown;
  resume(): unknown;
}

/**
 * A source over a node readable with backpressure: while a chunk waits unread the socket is
 * paused, so a handler that never reads holds one chunk at most. `gone` makes the error a
 * pending or later read rejects with (the client went away); `onCancel` runs once on cancel.
 */
export function nodeBodySource(
  incoming: NodeReadable,
  gone: () => Error,
  onCancel: () => void,
): BodySource {
  const queued: Uint8Array[] = [];
  let ended = false;
  let failed: Error | undefined;
  let cancelled = false;
  let waiter: { resolve(c: Uint8Array | null): void; reject(e: Error): void } | undefined;
  /** The pending read, taken so that it settles once. */
  const takeWaiter = () => {
    const w = waiter;
    waiter = undefined;
    return w;
  };
  incoming.on("data", (chunk) => {
    if (cancelled) return;
    const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const w = takeWaiter();
    if (w) return w.resolve(bytes);
    queued.push(bytes);
    incoming.pause();
  });
  incoming.on("end", () => {
    ended = true;
    takeWaiter()?.resolve(null);
  });
  const fail = () => {
    if (ended || failed) return;
    failed = gone();
    takeWaiter()?.reject(failed);
  };
  incoming.on("aborted", fail);
  incoming.on("error", fail);
  return {
    read() {
      const next = queued.shift();
      if (next !== undefined) {
        if (queued.length === 0 && !ended) incoming.resume();
        return Promise.resolve(next);
      }
      if (failed) return Promise.reject(failed);
      if (ended || cancelled) return Promise.resolve(null);
      // The waiter is in place before the socket flows again, whenever its next event comes.
      const arrived = new Promise<Uint8Array | null>((resolve, reject) => {
        waiter = { resolve, reject };
      });
      incoming.resume();
      return arrived;
    },
    cancel() {
      if (cancelled) return;
      cancelled = true;
      queued.length = 0;
      takeWaiter()?.resolve(null);
      onCancel();
    },
  };
}

/** A stream over `body` that takes a chunk only when asked for one (nothing while unread). */
export function bodySourceStream(body: BodySource): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const chunk = await body.read();
      if (chunk === null) controller.close();
      else controller.enqueue(chunk);
    },
    cancel: () => body.cancel(),
  }, { highWaterMark: 0 });
}
