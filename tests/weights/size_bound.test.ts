/**
 * Issue 23.5: a weight file's size bound holds while it streams, not after. Before, a source that
 * sent no length had its whole body written (629 MB on disk before a 10 MiB adapter bound refused
 * it). Now the write stops as soon as the bound is passed (like `curl --max-filesize`), never
 * writes past it, deletes the partial file and names the bound; a stated length over the bound is
 * refused before the body is read.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FileTooLargeError, writeStreamAtomic } from "#worker/weights/atomic_file.ts";
import { createHttpClusterCache } from "#worker/weights/cluster_cache.ts";
import { WeightFileTooLargeError } from "#worker/weights/errors.ts";
import { createWeightStore } from "#worker/weights/store.ts";
import { partialFiles, within, withTempDir } from "./helpers.ts";
import { waitFor } from "../helpers/wait.ts";

const CHUNK = 64 * 1024;
const LIMIT = 1024 * 1024 + 100;

/** An endless body of CHUNK-sized chunks; `sent` counts what the consumer pulled. */
function endless(
  onPull?: () => Promise<void>,
): { stream: ReadableStream<Uint8Array>; sent(): number } {
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      await onPull?.();
      sent += CHUNK;
      ctrl.enqueue(new Uint8Array(CHUNK).fill(7));
    },
  }, { highWaterMark: 0 });
  return { stream, sent: () => sent };
}

Deno.test("size bound: an endless body stops at the bound; the disk never holds more than the bound", async () => {
  await withTempDir(async (dir) => {
    const dest = join(dir, "w.bin");
    let largest = 0;
    // Before each chunk is handed over, the partial file holds everything written so far.
    const body = endless(async () => {
      for (const path of await partialFiles(dir)) {
        largest = Math.max(largest, (await Deno.stat(path)).size);
      }
    });
    await assert.rejects(
      within(10_000, writeStreamAtomic(dest, body.stream, { maxBytes: LIMIT })),
      (e: unknown) => {
        assert.ok(e instanceof FileTooLargeError, String(e));
        assert.equal(e.maxBytes, LIMIT);
        assert.equal(e.received, 17 * CHUNK);
        assert.match(e.message, new RegExp(`more than ${LIMIT} bytes`));
        return true;
      },
    );
    // Sixteen chunks fit under the bound; the seventeenth was refused before it was written.
    assert.equal(largest, 16 * CHUNK);
    assert.ok(largest <= LIMIT);
    assert.equal(body.sent(), 17 * CHUNK, "the body was not read past the refused chunk");
    assert.deepEqual(await partialFiles(dir), [], "the partial file is deleted");
    assert.equal(await Deno.stat(dest).then(() => true, () => false), false);
  });
});

/**
 * A server on 127.0.0.1 whose every answer is `body()`; counts the bytes it sent, and the
 * answers whose body stopped (the client went away).
 */
function serve(
  answer: (count: (n: number) => void, signal: AbortSignal, ended: () => void) => Response,
): { url: string; sent(): number; ended(): number; close(): Promise<void> } {
  let sent = 0;
  let ended = 0;
  const stops = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => answer((n) => sent += n, stops.signal, () => ended++),
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    sent: () => sent,
    ended: () => ended,
    async close() {
      stops.abort();
      await server.shutdown();
    },
  };
}

/**
 * An endless chunked body (no Content-Length) that stops when the server closes, or when the
 * client goes away (then `ended` is called).
 */
function endlessResponse(
  count: (n: number) => void,
  signal: AbortSignal,
  ended: () => void,
  length?: number,
) {
  const headers: Record<string, string> = {};
  if (length !== undefined) headers["content-length"] = String(length);
  const body = new ReadableStream<Uint8Array>({
    pull(ctrl) {
      if (signal.aborted) return ctrl.close();
      count(CHUNK);
      ctrl.enqueue(new Uint8Array(CHUNK).fill(9));
    },
    cancel: ended,
  });
  return new Response(body, { headers });
}

Deno.test("size bound: an http cluster cache streaming without a length is cut off at the bound", async () => {
  const server = serve((count, signal, ended) => endlessResponse(count, signal, ended));
  try {
    await withTempDir(async (cacheDir) => {
      const store = createWeightStore({
        cacheDir,
        sources: [createHttpClusterCache({ location: server.url, timeoutMs: 5000 })],
      });
      const err = await within(
        20_000,
        store.ensureFiles("acme/huge", "main", { weights: "adapter_model.safetensors" }, {
          modelId: "acme/huge",
          maxBytes: { weights: LIMIT },
        }),
      ).then(() => null, (e: unknown) => e);
      assert.ok(err instanceof WeightFileTooLargeError, String(err));
      assert.equal(err.streamed, true);
      assert.match(
        err.message,
        new RegExp(
          `'adapter_model.safetensors' of acme/huge is larger than the ${LIMIT} bytes allowed ` +
            `\\(its download was stopped at \\d+ bytes\\)`,
        ),
      );
      assert.ok(err.size > LIMIT && err.size <= LIMIT + CHUNK, `stopped at ${err.size}`);
      assert.deepEqual(await partialFiles(cacheDir), []);
      // What the server sent before the connection was dropped: the bound plus what sockets
      // buffer, not an endless stream.
      await waitFor(() => server.ended() === 1, "the server's answer to end");
      console.log(`server sent ${server.sent()} bytes; stopped at ${err.size}`);
      assert.ok(server.sent() < LIMIT + 32 * 1024 * 1024, `server sent ${server.sent()} bytes`);
    });
  } finally {
    await server.close();
  }
});

Deno.test("size bound: a Content-Length over the bound is refused before the body is read", async () => {
  const declared = 500 * 1024 * 1024;
  const server = serve((count, signal, ended) => endlessResponse(count, signal, ended, declared));
  try {
    await withTempDir(async (cacheDir) => {
      const store = createWeightStore({
        cacheDir,
        sources: [createHttpClusterCache({ location: server.url, timeoutMs: 5000 })],
      });
      const err = await within(
        20_000,
        store.ensureFiles("acme/huge", "main", { weights: "w.bin" }, {
          maxBytes: { weights: LIMIT },
        }),
      ).then(() => null, (e: unknown) => e);
      assert.ok(err instanceof WeightFileTooLargeError, String(err));
      assert.equal(err.streamed, false);
      assert.match(err.message, new RegExp(`is ${declared} bytes, more than the ${LIMIT} allowed`));
      assert.deepEqual(await partialFiles(cacheDir), []);
      await waitFor(() => server.ended() === 1, "the server's answer to end");
      assert.ok(server.sent() < 32 * 1024 * 1024, `server sent ${server.sent()} bytes`);
    });
  } finally {
    await server.close();
  }
});
