/** Time bounds on HTTP calls and caller cancellation. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeHub } from "../fake_hub/server.ts";
import { createHubSource } from "#worker/weights/hub.ts";
import { createHttpClusterCache } from "#worker/weights/cluster_cache.ts";
import { createWeightStore } from "#worker/weights/store.ts";
import { fetchWithTimeout } from "#worker/weights/http.ts";
import { writeStreamAtomic } from "#worker/weights/atomic_file.ts";
import { ServiceError } from "@svc/shared/errors";
import type { WeightsError } from "#worker/weights/errors.ts";
import type { WeightFileRef, WeightSource } from "#worker/weights/types.ts";
import { bytes, partialFiles, tinyModel, within, withTempDir, writeRepo } from "./helpers.ts";
import { waitFor } from "../helpers/wait.ts";

const REPO = "acme/slowpoke";
const MODEL = "onnx/model.onnx";

Deno.test("timeout: a server that never answers is abandoned after timeoutMs", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(join(tmp, "hub"), REPO, tinyModel(31));
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    try {
      hub.fault(MODEL, "stall-headers");
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHubSource({ hubUrl: hub.url, timeoutMs: 300, idleTimeoutMs: 60_000 })],
      });
      // The message names the 300 ms bound, so that bound (not the idle one) ended the call;
      // `within` only keeps a broken build from hanging.
      const err = await within(20_000, store.ensureFiles(REPO, "main", { model: MODEL }))
        .then(() => null, (e: unknown) => e);
      assert.ok(err instanceof ServiceError && err.code === "MODEL_NOT_LOADED", String(err));
      assert.match(err.message, /no response within 300 ms/);
      assert.equal((err as WeightsError).failure, "timeout");
      assert.deepEqual(await partialFiles(join(tmp, "cache")), []);
    } finally {
      await hub.close();
    }
  });
});

Deno.test("timeout: a body that stops flowing is abandoned after idleTimeoutMs", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(join(tmp, "hub"), REPO, tinyModel(32));
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    try {
      hub.fault(MODEL, "stall-body", 2000);
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHttpClusterCache({ location: hub.staticUrl, idleTimeoutMs: 300 })],
      });
      const err = await within(20_000, store.ensureFiles(REPO, "main", { model: MODEL }))
        .then(() => null, (e: unknown) => e);
      assert.ok(err instanceof ServiceError, String(err));
      assert.match(err.message, /stalled/);
      assert.equal((err as WeightsError).failure, "timeout");
      assert.deepEqual(await partialFiles(join(tmp, "cache")), []);
    } finally {
      await hub.close();
    }
  });
});

Deno.test("timeout: fetchWithTimeout honours the caller's AbortSignal", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(tmp, REPO, tinyModel(33));
    const hub = await startFakeHub({ root: tmp });
    try {
      hub.fault(MODEL, "stall-headers");
      const ac = new AbortController();
      const call = fetchWithTimeout(`${hub.staticUrl}/${REPO}/${MODEL}`, {}, {
        timeoutMs: 60_000,
        signal: ac.signal,
      });
      call.catch(() => {});
      // Abort once the hub holds the request (stalled), not after a guessed delay.
      await waitFor(() => hub.requests.some((r) => r.path.endsWith(MODEL)), "request at the hub");
      ac.abort(new DOMException("stop", "AbortError"));
      await assert.rejects(within(20_000, call), { name: "AbortError" });
    } finally {
      await hub.close();
    }
  });
});

/** A source whose downloads wait for `release()`; exposes each download's signal. */
function heldSource(): WeightSource & { signals: AbortSignal[]; release: () => void } {
  let release!: () => void;
  const held = new Promise<void>((r) => release = r);
  const signals: AbortSignal[] = [];
  return {
    name: "held",
    signals,
    release: () => release(),
    async fetchTo(_ref: WeightFileRef, dest: string, signal?: AbortSignal): Promise<boolean> {
      signals.push(signal!);
      await Promise.race([
        held,
        new Promise((_, reject) => signal!.addEventListener("abort", () => reject(signal!.reason))),
      ]);
      await writeStreamAtomic(dest, ReadableStream.from([bytes(500, 1)]), { signal });
      return true;
    },
  };
}

/** Wait (bounded) until the store has started the download, instead of guessing with a sleep. */
async function untilStarted(source: { signals: AbortSignal[] }): Promise<void> {
  await waitFor(() => source.signals.length > 0, "the download to start", { everyMs: 5 });
  assert.equal(source.signals.length, 1, "one download");
}

Deno.test("abort: one caller leaving does not cancel a download another caller waits for", async () => {
  await withTempDir(async (tmp) => {
    const source = heldSource();
    const store = createWeightStore({ cacheDir: tmp, sources: [source] });
    const ac = new AbortController();
    const leaving = store.ensureFiles(REPO, "main", { w: "w.bin" }, { signal: ac.signal });
    const staying = store.ensureFiles(REPO, "main", { w: "w.bin" });
    await untilStarted(source);
    ac.abort(new DOMException("client went away", "AbortError"));
    await assert.rejects(within(10_000, leaving), { name: "AbortError" });
    assert.equal(source.signals[0].aborted, false);
    source.release();
    const paths = await within(10_000, staying);
    assert.deepEqual(await Deno.readFile(paths.w), bytes(500, 1));
    assert.equal(source.signals.length, 1);
  });
});

Deno.test("abort: when the last caller leaves, the download is cancelled and cleaned up", async () => {
  await withTempDir(async (tmp) => {
    const source = heldSource();
    const store = createWeightStore({ cacheDir: tmp, sources: [source] });
    const ac = new AbortController();
    const call = store.ensureFiles(REPO, "main", { w: "w.bin" }, { signal: ac.signal });
    await untilStarted(source);
    ac.abort(new DOMException("client went away", "AbortError"));
    await assert.rejects(within(10_000, call), { name: "AbortError" });
    assert.equal(source.signals[0].aborted, true);
    await waitFor(async () => (await partialFiles(tmp)).length === 0, "partial file removed");
    // A new caller starts a fresh download rather than joining the cancelled one.
    source.release();
    await within(10_000, store.ensureFiles(REPO, "main", { w: "w.bin" }));
    assert.equal(source.signals.length, 2);
  });
});
