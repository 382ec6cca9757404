/** The shared body reader: declared lengths are claims, the in-flight budget, the idle timeout. */
import assert from "node:assert/strict";
import { ServiceError } from "@svc/shared/errors";
import { BodyBudget } from "@svc/shared/http/body_budget";
import { readBodyLimited } from "@svc/shared/http/read_body";
import { FakeTime } from "../helpers/fake_time.ts";

const MiB = 1024 * 1024;

/** A POST whose body is the given chunks, the stream then staying open unless `end`. */
function streamed(
  chunks: Uint8Array[],
  opts: { end: boolean; contentLength?: number; onCancel?: () => void },
): Request {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const chunk of chunks) c.enqueue(chunk);
      if (opts.end) c.close();
    },
    cancel: opts.onCancel,
  });
  const headers: Record<string, string> = {};
  if (opts.contentLength !== undefined) headers["content-length"] = String(opts.contentLength);
  return new Request("http://x/", { method: "POST", body, headers });
}

async function rejection(p: Promise<unknown>): Promise<ServiceError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ServiceError, `expected a ServiceError, got ${err}`);
    return err;
  }
  throw new Error("expected a rejection");
}

Deno.test("readBody: a declared 32 MiB body that sends 10 bytes reserves 10 bytes, not 32 MiB", async () => {
  // Budget of 40 MiB: trusting the declared length would reserve most of it for 10 bytes.
  const budget = new BodyBudget(40 * MiB);
  let peak = 0;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new Uint8Array(10).fill(0x31));
    },
    pull(c) {
      peak = Math.max(peak, budget.used);
      c.enqueue(new Uint8Array(10).fill(0x32));
      c.close();
    },
  });
  const req = new Request("http://x/", {
    method: "POST",
    body,
    headers: { "content-length": "33554000" },
  });
  const bytes = await readBodyLimited(req, { maxBodyBytes: 64 * MiB, budget });
  assert.equal(bytes.length, 20);
  assert.ok(peak <= 64 * 1024, `reserved ${peak} bytes while 10 had arrived`);
  assert.equal(budget.used, 0, "everything is given back");
});

Deno.test("readBody: bodies past the in-flight budget get 503 QUEUE_FULL with Retry-After", async () => {
  const budget = new BodyBudget(100 * 1024);
  const chunk = () => new Uint8Array(60 * 1024);
  let cancelled = false;
  // The first body holds 60 KiB and waits for more; the second cannot fit beside it.
  const first = readBodyLimited(streamed([chunk()], { end: false }), {
    maxBodyBytes: MiB,
    budget,
  });
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(budget.used, 60 * 1024);
  const err = await rejection(
    readBodyLimited(
      streamed([chunk()], { end: false, onCancel: () => cancelled = true }),
      { maxBodyBytes: MiB, budget },
    ),
  );
  assert.equal(err.code, "QUEUE_FULL");
  assert.equal(err.status, 503);
  assert.equal(err.retryAfterS, 1);
  assert.match(err.message, /SVC_MAX_INFLIGHT_BODY_BYTES/);
  assert.ok(cancelled, "the refused body's stream is cancelled");
  assert.equal(budget.used, 60 * 1024, "the refused body gave its bytes back");
  void first.catch(() => {});
});

Deno.test("readBody: a body that stalls is abandoned with 408 after the idle timeout", async () => {
  let cancelled = false;
  const err = await rejection(
    readBodyLimited(
      streamed([new Uint8Array(10)], {
        end: false,
        contentLength: 33554000,
        onCancel: () => cancelled = true,
      }),
      { maxBodyBytes: 64 * MiB, bodyIdleTimeoutMs: 150 },
    ),
  );
  assert.equal(err.code, "REQUEST_TIMEOUT");
  assert.equal(err.status, 408);
  assert.match(err.message, /after 10 bytes \(SVC_BODY_IDLE_TIMEOUT_MS\)/);
  assert.ok(cancelled);
});

Deno.test("readBody: a body source (the server's) that stalls gets 408 and is cancelled", async () => {
  // The shape node_server.ts hands a handler: one chunk, then nothing until cancel ends the read.
  let cancels = 0;
  let waiting: ((c: Uint8Array | null) => void) | undefined;
  let chunks = [new Uint8Array(10)];
  const req = new Request("http://x/", { method: "POST" });
  const source = {
    read: () => {
      const next = chunks.shift();
      return next ? Promise.resolve(next) : new Promise<Uint8Array | null>((r) => waiting = r);
    },
    cancel: () => {
      cancels++;
      chunks = [];
      waiting?.(null);
    },
  };
  const err = await rejection(
    readBodyLimited(req, { maxBodyBytes: 64 * MiB, bodyIdleTimeoutMs: 150 }, source),
  );
  assert.equal(err.code, "REQUEST_TIMEOUT");
  assert.match(err.message, /after 10 bytes/);
  assert.ok(cancels >= 1, "the source was told to stop");
});

Deno.test("readBody: a slow body that keeps arriving is not cut by the idle timeout", async () => {
  using time = new FakeTime();
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      await new Promise((r) => setTimeout(r, 40));
      c.enqueue(Uint8Array.of(sent++));
      if (sent === 8) c.close();
    },
  });
  const read = readBodyLimited(
    new Request("http://x/", { method: "POST", body }),
    { maxBodyBytes: MiB, bodyIdleTimeoutMs: 150 },
  );
  // A byte every 40 ms: 320 ms in all, past the 150 ms bound, but never 150 ms without one.
  for (let i = 0; i < 8; i++) await time.tick(40);
  assert.equal(sent, 8);
  assert.deepEqual([...await read], [0, 1, 2, 3, 4, 5, 6, 7]);
});

Deno.test("readBody: many chunks are joined exactly, whatever their sizes", async () => {
  const sizes = [1, 70_000, 3, 200_000, 65_536, 12, 500_000];
  const chunks = sizes.map((n, k) => new Uint8Array(n).map((_, i) => (i * 7 + k) & 0xff));
  const expected = new Uint8Array(sizes.reduce((a, b) => a + b));
  let at = 0;
  for (const c of chunks) {
    expected.set(c, at);
    at += c.length;
  }
  const budget = new BodyBudget(4 * MiB);
  for (const contentLength of [undefined, expected.length]) {
    const bytes = await readBodyLimited(streamed(chunks, { end: true, contentLength }), {
      maxBodyBytes: 2 * MiB,
      budget,
    });
    assert.deepEqual(bytes, expected);
    assert.equal(budget.used, 0);
  }
});
