/**
 * The bench's floors: the bare model server answers an encode body with a vector and its
 * timings, the bare proxy passes them on, and the diagnostics read them against raw and worker.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { decodeMsgpackResponse } from "../helpers/msgpack_response.ts";
import { benchSmall } from "@svc/fixture-models/models";
import { MODEL_PATH } from "@svc/fixture-models/models";
import { fileBytes } from "../fixtures/testing.ts";
import { assemble } from "./assemble.ts";
import { startFloor } from "./floor/start.ts";
import { encodeBody } from "./load_core.ts";
import { makePlan } from "./plan.ts";
import type { RoundData } from "./round.ts";
import { type Sample, sampleFromBatches, sampleFromRuns } from "./samples.ts";

Deno.test("bench floors: the bare server answers a vector with its timings; the bare proxy passes them on", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-floor-" });
  try {
    const model = benchSmall(1);
    const modelPath = join(dir, "model.onnx");
    await Deno.writeFile(modelPath, fileBytes(model.files(model.weights()), MODEL_PATH));
    await floorsAnswer(modelPath);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Start both floors on `modelPath` and check one answer of each. */
async function floorsAnswer(modelPath: string): Promise<void> {
  const server = await startFloor({ mode: "model", modelPath, threads: 1, ids: [101, 2023, 102] });
  try {
    const proxy = await startFloor({ mode: "proxy", upstream: server.url });
    try {
      for (const base of [server.url, proxy.url]) {
        const res = await fetch(`${base}/v1/encode/fixture%2Fbench-small`, {
          method: "POST",
          headers: { "content-type": "application/msgpack" },
          body: encodeBody(["any text: the floor runs its fixed ids"]),
        });
        assert.equal(res.status, 200, base);
        assert.equal(res.headers.get("content-type"), "application/msgpack");
        const inference = Number(res.headers.get("x-inference-time"));
        const total = Number(res.headers.get("x-total-time"));
        assert.ok(inference > 0 && total >= inference, `${inference} / ${total}`);
        const body = decodeMsgpackResponse(new Uint8Array(await res.arrayBuffer())) as {
          items: { dense: number[] }[];
        };
        assert.equal(body.items[0].dense.length, 384);
        assert.ok(body.items[0].dense.every(Number.isFinite));
      }
    } finally {
      await proxy.proc.kill();
    }
  } finally {
    await server.proc.kill();
  }
}

Deno.test("bench diagnostics: the worker against the floor, the router against the bare proxy, the large run's padding", async () => {
  const c1 = (p50: number, outsideServer: number): Sample => ({
    ...sampleFromRuns([p50, p50, p50], 16),
    outside: { serverP50: outsideServer, inferenceP50: outsideServer + 5 },
  });
  const batches = sampleFromBatches(1, 1000, 100);
  const round: RoundData = {
    rawThroughput: batches,
    rawThreads: 2,
    rawTokensPerSByThreads: { "2": 10_000 },
    rawInt8Throughput: batches,
    rawFp32SameThreadsTokensPerS: 10_000,
    workerThroughput: batches,
    workerLarge: batches,
    routerThroughput: batches,
    healthzMs: [1],
    rawSingle: sampleFromRuns([6, 6, 6], 16),
    workerSingle: c1(9, 1.0),
    routerSingle: c1(10.5, 2.25),
    floorSingle: c1(8, 0.5),
    floorProxySingle: c1(10, 1.75),
    throughputCounters: { tokens: 1, padded: 1, batchItems: 1, batches: 1 },
    largeCounters: { tokens: 90, padded: 100, batchItems: 6, batches: 2 },
  };
  const results = await assemble({
    plan: makePlan(true),
    rounds: [round],
    padding: [],
    routerWhy: null,
    loadAvgStart: [0, 0, 0],
    threads: { worker: 2, raw: 2, rawThreadsPerRound: [2], rawTokensPerSByThreads: {} },
    int8Cosines: [],
    durationS: 1,
    workerEntry: "worker/main.ts",
    throughputLengths: [16],
  });
  const d = results.diagnostics;
  assert.equal(d.floorC1OverRawP50Ms, 2);
  assert.equal(d.workerC1OverFloorP50Ms, 1);
  assert.equal(d.floorProxyAddedP50PairedMs, 0.75);
  assert.equal(d.routerOverFloorProxyP50Ms, 0.5);
  // The large-request run's own counters.
  assert.equal(d.largePadShare, 0.1);
  assert.equal(d.largeMeanBatchItems, 3);
  const floor = results.scenarios.find((s) => s.id === "floor_c1");
  assert.equal(floor?.median.p50Ms, 8);
});
