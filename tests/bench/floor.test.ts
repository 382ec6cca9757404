/** The bench's diagnostics: the worker and router read against the floors and the raw runs. */
import assert from "node:assert/strict";
import { assemble } from "./assemble.ts";
import { makePlan } from "./plan.ts";
import type { RoundData } from "./round.ts";
import { type Sample, sampleFromBatches, sampleFromRuns } from "./samples.ts";

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
  // Outside inference (c1 adds 5 to outside the server): the worker 6, the floor 5.5.
  assert.equal(d.workerC1OverFloorPairedP50Ms, 0.5);
  assert.equal(d.floorProxyAddedP50PairedMs, 0.75);
  assert.equal(d.routerOverFloorProxyP50Ms, 0.5);
  // The large-request run's own counters.
  assert.equal(d.largePadShare, 0.1);
  assert.equal(d.largeMeanBatchItems, 3);
  const floor = results.scenarios.find((s) => s.id === "floor_c1");
  assert.equal(floor?.median.p50Ms, 8);
});
