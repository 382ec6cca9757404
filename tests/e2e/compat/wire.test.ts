/**
 * Client compatibility, end to end with real processes on 127.0.0.1: the SIE-style client of
 * ./client (its own msgpack code, written from the wire rules) talks to a router and to a worker.
 * A request to a pool with no worker (scaled to zero) gets 202 and is followed until a worker joins;
 * every output dtype and output type decodes, through the router and straight from the worker, to
 * exactly what the wire rules compute from the float32 answer; the version header is read; the
 * router answers /health, /metrics and /ws/status the way the clients expect of it.
 *
 * The loading codes, with a worker whose weights come from a fake hub on 127.0.0.1: 503
 * `MODEL_LOADING` followed to success; 502 `MODEL_LOAD_FAILED` raised at once, a permanent cause
 * (weights not found) kept past the cool-down until the worker's cache changes, a transient one (a
 * broken download) loaded again by a request after it.
 */
import assert from "node:assert/strict";
import { VERSION } from "@svc/shared/version";
import {
  json,
  listeningUrl,
  type Proc,
  startRouterProc,
  startWorkerProc,
  stopAll,
  workerIds,
} from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";
import { CompatClient, ServiceCallError } from "../../compat/client/client.ts";
import { ensureFixtures } from "@svc/fixture-models";
import { startFakeHub } from "../../fake_hub/server.ts";
import { type StatusMessage, StatusMessageSchema } from "@svc/shared/schemas/status";
import { parseProm, sum } from "../../observability/helpers/prom_text.ts";
import { recordFrames, wsUrl } from "../../observability/helpers/ws.ts";
import { isWireArray, type WireArray } from "../../compat/client/msgpack.ts";
import { elements, rows, unpackBits } from "../../compat/client/numpy.ts";

const DTYPES = ["float32", "float16", "int8", "uint8", "binary", "ubinary"] as const;
type Dtype = typeof DTYPES[number];
const TEXTS = ["cats sleep on the warm mat", "hello world"];

/** Which model answers which output types (m3: all three from one pass). */
const CASES: { model: string; outputs: string[] }[] = [
  { model: "fixture/dense", outputs: ["dense"] },
  { model: "fixture/sparse", outputs: ["sparse"] },
  { model: "fixture/colbert", outputs: ["multivector"] },
  { model: "fixture/m3", outputs: ["dense", "sparse", "multivector"] },
];

/** The dtype string and element transform the wire rules give for `dtype`. */
const WIRE_TYPE: Record<Dtype, string> = {
  float32: "<f4",
  float16: "<f2",
  int8: "|i1",
  uint8: "|u1",
  binary: "|u1",
  ubinary: "|u1",
};

/** numpy's round: half to even (and an integer on the wire has no negative zero). */
function roundEven(x: number): number {
  const r = Math.round(x);
  return (r - x === 0.5 && r % 2 !== 0 ? r - 1 : r) + 0;
}

/** What one float32 vector becomes at `dtype`, computed here in float32 steps like numpy. */
function quantise(v: number[], dtype: "int8" | "uint8" | "binary"): number[] {
  const f = Math.fround;
  if (dtype === "binary") {
    const bytes = new Array(Math.ceil(v.length / 8)).fill(0);
    v.forEach((x, i) => {
      if (x > 0) bytes[i >> 3] |= 0x80 >> (i & 7);
    });
    return bytes;
  }
  if (dtype === "int8") {
    const max = Math.max(...v.map(Math.abs));
    return v.map((x) => (max === 0 ? 0 : roundEven(f(f(x / max) * 127))));
  }
  const min = Math.min(...v);
  const range = f(Math.max(...v) - min);
  return v.map((x) => (range === 0 ? 128 : roundEven(f(f(f(x - min) / range) * 255))));
}

function wire(v: unknown, what: string): WireArray {
  assert.ok(isWireArray(v), `${what}: a numpy map`);
  return v;
}

/** Check one returned vector at `dtype` against its float32 twin. */
function checkVector(got: WireArray, ref: number[], dtype: Dtype, what: string): void {
  assert.equal(got.dtype, WIRE_TYPE[dtype], `${what}: wire dtype`);
  const values = elements(got);
  switch (dtype) {
    case "float32":
      assert.deepEqual(values, ref, what);
      break;
    case "float16":
      ref.forEach((x, i) => {
        const tol = Math.max(Math.abs(x) * 2 ** -11, 2 ** -24);
        assert.ok(Math.abs(values[i] - x) <= tol, `${what}[${i}]: ${values[i]} vs ${x}`);
      });
      break;
    case "int8":
    case "uint8":
      assert.deepEqual(values, quantise(ref, dtype), what);
      break;
    case "binary":
    case "ubinary":
      assert.deepEqual(values, quantise(ref, "binary"), what);
      assert.deepEqual(unpackBits(values, ref.length), ref.map((x) => (x > 0 ? 1 : 0)), what);
      break;
  }
}

type Obj = Record<string, unknown>;

/** Check every output of one encode answer at `dtype` against the float32 answer. */
function checkItems(items: Obj[], refs: Obj[], outputs: string[], dtype: Dtype, what: string) {
  assert.equal(items.length, refs.length);
  items.forEach((item, i) => {
    const ref = refs[i];
    assert.deepEqual(Object.keys(item).sort(), ["id", ...outputs].sort(), `${what} item ${i}`);
    assert.equal(item.id, ref.id, "ids echoed");
    if (outputs.includes("dense")) {
      const d = item.dense as Obj;
      const r = ref.dense as Obj;
      assert.equal(d.dtype, dtype);
      assert.equal(d.dims, r.dims, "dims stay the float dimension");
      checkVector(wire(d.values, what), elements(wire(r.values, what)), dtype, `${what} dense`);
    }
    if (outputs.includes("sparse")) {
      const s = item.sparse as Obj;
      const r = ref.sparse as Obj;
      const idx = wire(s.indices, what);
      assert.equal(idx.dtype, "<i4", "sparse indices are int32");
      assert.deepEqual(elements(idx), elements(wire(r.indices, what)));
      // Only float16 applies to sparse values; the integer and binary dtypes leave float32.
      const sparseDtype: Dtype = dtype === "float16" ? "float16" : "float32";
      assert.equal(s.dtype, sparseDtype);
      checkVector(wire(s.values, what), elements(wire(r.values, what)), sparseDtype, `${what} sp`);
    }
    if (outputs.includes("multivector")) {
      const m = item.multivector as Obj;
      const r = m && (ref.multivector as Obj);
      const got = wire(m.values, what);
      const want = rows(wire(r.values, what));
      assert.equal(m.dtype, dtype);
      assert.equal(m.num_tokens, want.length);
      assert.equal(m.token_dims, r.token_dims);
      assert.equal(got.shape.length, 2, "one 2-D array, not a list of rows");
      const width = dtype === "binary" || dtype === "ubinary"
        ? Math.ceil((r.token_dims as number) / 8)
        : r.token_dims;
      assert.deepEqual(got.shape, [want.length, width]);
      const gotRows = rows(got);
      // Each token row is quantised on its own.
      want.forEach((row, t) => {
        const one: WireArray = {
          wireArray: true,
          dtype: got.dtype,
          shape: [gotRows[t].length],
          data: got.data.subarray(
            t * got.data.length / want.length,
            (t + 1) * got.data.length / want.length,
          ),
        };
        checkVector(one, row, dtype, `${what} token ${t}`);
      });
    }
  });
}

Deno.test({
  name: "compat: an SIE-style client through the router and the worker",
  fn: async (t) => {
    let router: Proc | undefined;
    let worker: Proc | undefined;
    try {
      const r = await startRouterProc("compat-router", {
        SVC_PROVISION_RETRY_AFTER_S: "1",
        SVC_MACHINE_PROFILES: "cpu", // a pool that scales to zero is configured
      });
      router = r.proc;

      // A first worker registers the fixture models (the router learns their bundle) and leaves:
      // the pool is back to zero, as after a scale-down.
      const seed = await startWorkerProc("compat-seed", r.url, { SVC_MACHINE_PROFILE: "cpu" });
      try {
        await waitFor(
          async () => (await workerIds(r.url)).length === 1,
          "the first worker",
          60_000,
        );
      } finally {
        await seed.stop();
      }
      await waitFor(async () => (await workerIds(r.url)).length === 0, "an empty pool", 20_000);

      await t.step("202 while the pool has no worker, followed until a worker joins", async () => {
        const client = new CompatClient({
          baseUrl: r.url,
          version: VERSION,
          machineProfile: "cpu",
        });
        const pending = client.encode("fixture/dense", [{ id: "a", text: TEXTS[0] }]);
        await waitFor(() => client.seen.some((s) => s.status === 202), "a 202", 20_000);
        const first = client.seen[0];
        assert.equal(first.status, 202);
        assert.equal(first.retryAfter, "1");
        worker = await startWorkerProc("compat-cpu", r.url, { SVC_MACHINE_PROFILE: "cpu" });
        const body = await pending;
        const items = body.items as Obj[];
        assert.equal(items[0].id, "a");
        assert.equal((items[0].dense as Obj).dims, 32);
        assert.equal(client.seen.at(-1)?.status, 200);
        assert.ok(client.seen.slice(0, -1).every((s) => s.status === 202));
        assert.equal(client.serverVersion, VERSION);
        assert.deepEqual(client.warnings, []);
      });
      await waitFor(async () => (await workerIds(r.url)).length === 1, "the worker", 60_000);
      // The worker's own port (it takes the router's requests over its connection).
      const workerUrl = await listeningUrl(worker!);

      for (const [target, baseUrl] of [["router", r.url], ["worker", workerUrl]]) {
        await t.step(`every dtype and output type decodes (${target})`, async () => {
          const client = new CompatClient({ baseUrl, version: VERSION, machineProfile: "cpu" });
          for (const c of CASES) {
            const items = TEXTS.map((text, i) => ({ id: `t${i}`, text }));
            const answer = (dtype: Dtype) =>
              client.encode(c.model, items, { output_types: c.outputs, output_dtype: dtype });
            const ref = await answer("float32");
            assert.equal(ref.model, c.model);
            const timing = ref.timing as Obj;
            for (const k of ["total_ms", "queue_ms", "tokenization_ms", "inference_ms"]) {
              assert.equal(typeof timing[k], "number", `timing.${k} is a plain number`);
            }
            for (const dtype of DTYPES) {
              const got = await answer(dtype);
              checkItems(
                got.items as Obj[],
                ref.items as Obj[],
                c.outputs,
                dtype,
                `${target} ${c.model} ${dtype}`,
              );
            }
          }
          assert.equal(client.serverVersion, VERSION);
          assert.deepEqual(client.warnings, []);
          assert.ok(client.seen.every((s) => s.status === 200));
        });
      }

      await t.step(
        "the router serves the workers' surface: /health, svc_* metrics, /ws/status",
        async () => {
          const h = await json(`${r.url}/health`);
          assert.equal(h.body.type, "gateway");
          const { total_qps, ...cluster } = h.body.cluster as Obj;
          assert.deepEqual(cluster, {
            worker_count: 1,
            gpu_count: 0,
            models_loaded: (h.body.loaded_models as string[]).length,
          });
          // The rate since this router's earlier /health calls (the test polled it).
          assert.ok(typeof total_qps === "number" && total_qps >= 0, String(total_qps));
          assert.deepEqual(h.body.live_gpu_types, ["cpu"]);
          assert.deepEqual(h.body.configured_gpu_types, ["cpu"]);
          const metricsText = await (await fetch(`${r.url}/metrics`)).text();
          const routed = sum(parseProm(metricsText), "svc_requests_total", {
            model: "fixture/dense",
            endpoint: "encode",
            status: "200",
          });
          assert.ok(routed >= 1 + DTYPES.length, `svc_requests_total on the router: ${routed}`);
          assert.ok(metricsText.includes("svc_router_requests_total"), "beside the router's own");
          const stream = recordFrames(wsUrl(r.url, "/ws/status"));
          try {
            await stream.opened;
            await waitFor(() => stream.frames.length > 0, "a router status frame", 10_000);
            const m = JSON.parse(stream.frames[0].data) as StatusMessage;
            StatusMessageSchema.parse(m); // the worker's schema (it keeps only its own fields)
            const dense = m.models.find((x) => x.name === "fixture/dense");
            assert.equal(dense?.state, "loaded");
            assert.deepEqual((dense as unknown as Obj).workers, [
              { id: "compat-cpu", pool: "cpu", state: "loaded", queue_depth: 0 },
            ]);
            const counted = (m.counters.svc_requests_total as { labels: Obj; value: number }[])
              .find((x) =>
                x.labels.model === "fixture/dense" && x.labels.endpoint === "encode" &&
                x.labels.status === "200"
              );
            assert.equal(counted?.value, routed, "the same counts as /metrics");
          } finally {
            await stream.close();
          }
        },
      );

      await t.step("score with a cross-encoder and with an encode model", async () => {
        const client = new CompatClient({
          baseUrl: r.url,
          version: VERSION,
          machineProfile: "cpu",
        });
        for (
          const [model, options] of [["fixture/reranker", undefined], ["fixture/m3", {}], [
            "fixture/m3",
            { output_type: "multivector" },
          ]] as const
        ) {
          const body = await client.score(
            model,
            { id: "q", text: "where do cats sleep" },
            [{ id: "a", text: TEXTS[0] }, { text: TEXTS[1] }],
            options,
          );
          assert.equal(body.query_id, "q");
          const scores = body.scores as Obj[];
          assert.equal(scores.length, 2);
          scores.forEach((e, rank) => {
            assert.equal(typeof e.score, "number", "a score is a plain float, never a numpy map");
            assert.equal(e.rank, rank);
          });
          // An item without an id is answered as `item-{i}` (SIE's rule).
          assert.deepEqual(scores.map((e) => e.item_id).sort(), ["a", "item-1"]);
        }
      });

      await t.step("a client of another release warns about the skew", async () => {
        for (const baseUrl of [r.url, workerUrl]) {
          const client = new CompatClient({ baseUrl, version: "0.99.0", machineProfile: "cpu" });
          await client.encode("fixture/dense", [{ text: "x" }]);
          await client.encode("fixture/dense", [{ text: "y" }]);
          assert.deepEqual(client.warnings, [
            `server version ${VERSION} differs from client version 0.99.0`,
          ]);
        }
      });
    } finally {
      await stopAll([worker, router]);
    }
  },
});

/** The load-failure cool-down of the loading test's worker. */
const COOLDOWN_MS = 2000;

/** The error the client raised (it must raise). */
async function raised(p: Promise<unknown>): Promise<ServiceCallError> {
  const err = await p.then(() => assert.fail("expected the client to raise"), (e) => e);
  assert.ok(err instanceof ServiceCallError, String(err));
  return err;
}

Deno.test({
  name:
    "compat: MODEL_LOADING followed to success, MODEL_LOAD_FAILED raised at once (router and worker processes)",
  fn: async (t) => {
    const fx = await ensureFixtures();
    // Weights come from a hub on 127.0.0.1 serving the fixtures, so loads take real downloads
    // and a download can be made to fail.
    const hub = await startFakeHub({ root: `${fx}/cache` });
    const modelsDir = await Deno.makeTempDir({ prefix: "compat-models-" });
    const cacheDir = await Deno.makeTempDir({ prefix: "compat-cache-" });
    let router: Proc | undefined;
    let worker: Proc | undefined;
    try {
      for (const name of ["dense", "sparse"]) {
        await Deno.copyFile(`${fx}/models/${name}.json`, `${modelsDir}/${name}.json`);
      }
      // fixture/dense's repository without the graph this entry names: not found anywhere.
      const entry = JSON.parse(await Deno.readTextFile(`${fx}/models/dense.json`));
      entry.id = "fixture/dense-missing";
      entry.files.model = "onnx/missing.onnx";
      await Deno.writeTextFile(`${modelsDir}/dense-missing.json`, JSON.stringify(entry));
      // Twins asked of the worker directly, so the router's steps still see first loads.
      await Deno.writeTextFile(
        `${modelsDir}/dense-missing-direct.json`,
        JSON.stringify({ ...entry, id: "fixture/dense-missing-direct" }),
      );
      const direct = JSON.parse(await Deno.readTextFile(`${fx}/models/dense.json`));
      await Deno.writeTextFile(
        `${modelsDir}/dense-direct.json`,
        JSON.stringify({ ...direct, id: "fixture/dense-direct" }),
      );

      const r = await startRouterProc("compat-load-router", {});
      router = r.proc;
      worker = await startWorkerProc("compat-load-worker", r.url, {
        SVC_MACHINE_PROFILE: "loadpool",
        SVC_MODELS_DIR: modelsDir,
        SVC_CACHE_DIR: cacheDir,
        SVC_CLUSTER_CACHE: "",
        SVC_HUB_URL: hub.url,
        // No wait: every load is still going on when its first request gives up.
        SVC_LOAD_WAIT_MS: "0",
        // Long enough that the client's next poll (every 100 ms) always lands inside it, even on
        // a loaded machine; a poll after it would start the next load.
        SVC_LOAD_FAILURE_COOLDOWN_MS: String(COOLDOWN_MS),
      });
      await waitFor(async () => (await workerIds(r.url)).length === 1, "the worker", 60_000);
      const client = () =>
        new CompatClient({
          baseUrl: r.url,
          version: VERSION,
          machineProfile: "loadpool",
          loadingRetries: 50,
          maxSleepMs: 100,
        });
      // Waits out the cool-down where nothing observable changes when it ends (that is what the
      // step asserts); a process cannot run on a fake clock.
      const past = (ms: number) => new Promise((res) => setTimeout(res, ms));
      const fetched = (suffix: string) =>
        hub.requests.filter((q) => q.path.endsWith(suffix) && !q.range).length;

      await t.step(
        "the worker itself speaks the same codes: MODEL_LOADING, MODEL_LOAD_FAILED",
        async () => {
          const workerUrl = await listeningUrl(worker!);
          const c = new CompatClient({
            baseUrl: workerUrl,
            version: VERSION,
            loadingRetries: 50,
            maxSleepMs: 100,
          });
          const body = await c.encode("fixture/dense-direct", [{ id: "a", text: TEXTS[0] }]);
          assert.equal(((body.items as Obj[])[0].dense as Obj).dims, 32);
          assert.deepEqual(c.seen[0], { status: 503, code: "MODEL_LOADING", retryAfter: "5" });
          assert.equal(c.seen.at(-1)?.status, 200);
          const err = await raised(c.encode("fixture/dense-missing-direct", [{ text: "x" }]));
          assert.deepEqual(
            [err.status, err.retryAfter, err.code, err.detail.permanent],
            [502, null, "MODEL_LOAD_FAILED", true],
          );
          assert.equal(c.seen.filter((s) => s.status === 502).length, 1, "raised on the first 502");
        },
      );

      await t.step(
        "503 MODEL_LOADING with Retry-After: 5, followed until the model answers",
        async () => {
          const c = client();
          const body = await c.encode("fixture/dense", [{ id: "a", text: TEXTS[0] }]);
          assert.equal(((body.items as Obj[])[0].dense as Obj).dims, 32);
          assert.deepEqual(c.seen[0], { status: 503, code: "MODEL_LOADING", retryAfter: "5" });
          assert.equal(c.seen.at(-1)?.status, 200);
          assert.ok(c.seen.slice(0, -1).every((s) => s.code === "MODEL_LOADING"));
        },
      );

      await t.step(
        "a load that cannot find its weights: 502 at once, no Retry-After, until the cache changes",
        async () => {
          const c = client();
          const err = await raised(c.encode("fixture/dense-missing", [{ text: "x" }]));
          assert.equal(err.status, 502);
          assert.equal(err.retryAfter, null);
          assert.equal(err.code, "MODEL_LOAD_FAILED");
          assert.deepEqual(
            [err.detail.error_class, err.detail.attempts, err.detail.permanent],
            ["not_found", 1, true],
          );
          assert.match(String(err.detail.message), /onnx\/missing\.onnx/);
          assert.equal(c.seen.filter((s) => s.status === 502).length, 1, "raised on the first 502");
          const asked = fetched("/onnx/missing.onnx");

          // Past the cool-down, with the caches unchanged: the same answer on the first call.
          await past(COOLDOWN_MS + 100);
          const again = client();
          const err2 = await raised(again.encode("fixture/dense-missing", [{ text: "x" }]));
          assert.deepEqual(again.seen, [{
            status: 502,
            code: "MODEL_LOAD_FAILED",
            retryAfter: null,
          }]);
          assert.equal(err2.detail.attempts, 1, "no new load");
          assert.equal(fetched("/onnx/missing.onnx"), asked, "the hub was not asked again");
          const info = await json(`${r.url}/v1/models/fixture%2Fdense-missing`, {
            headers: { "x-sie-machine-profile": "loadpool" },
          });
          assert.equal(info.body.state, "failed");
          assert.equal((info.body.last_error as Obj).code, "MODEL_LOAD_FAILED");

          // An operator puts the file into the worker's cache (renamed into place, like a download).
          const dir = `${cacheDir}/fixture/dense/@main/onnx`;
          await Deno.mkdir(dir, { recursive: true });
          await Deno.copyFile(`${fx}/cache/fixture/dense/onnx/model.onnx`, `${dir}/missing.tmp`);
          await Deno.rename(`${dir}/missing.tmp`, `${dir}/missing.onnx`);
          const fixed = client();
          const body = await fixed.encode("fixture/dense-missing", [{ text: "x" }]);
          assert.equal(((body.items as Obj[])[0].dense as Obj).dims, 32);
          assert.equal(fixed.seen[0].code, "MODEL_LOADING", "a new load started");
        },
      );

      await t.step(
        "a download that breaks: 502 at once (transient), loaded by a request after the cool-down",
        async () => {
          hub.fault("fixture/sparse/resolve/main/onnx/model.onnx", "error", 64);
          const c = client();
          const err = await raised(c.encode("fixture/sparse", [{ text: "x" }]));
          assert.equal(err.status, 502);
          assert.equal(err.retryAfter, null);
          assert.deepEqual(
            [err.code, err.detail.error_class, err.detail.attempts, err.detail.permanent],
            ["MODEL_LOAD_FAILED", "hub_unreachable", 1, false],
          );
          // Until the cool-down ends that answer is remembered (no new load); the first request
          // after it loads.
          let body: Obj | undefined;
          await waitFor(
            async () => {
              const later = client();
              const answer = await later.encode("fixture/sparse", [{ text: "x" }]).catch((e) => e);
              if (answer instanceof ServiceCallError) {
                assert.deepEqual([answer.status, answer.detail.attempts], [502, 1]);
                return false;
              }
              body = answer as Obj;
              return true;
            },
            "a load after the cool-down",
            { everyMs: 100 },
          );
          assert.ok((body!.items as Obj[])[0].sparse, "the fault was one-shot: the retry loaded");
        },
      );
    } finally {
      await stopAll([worker, router]);
      await hub.close();
      await Deno.remove(modelsDir, { recursive: true });
      await Deno.remove(cacheDir, { recursive: true });
    }
  },
});
