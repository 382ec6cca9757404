/**
 * What a LoRA adapter load costs the requests that do not use it: on fixture/bench-small (12
 * layers, H 384, real shape), base-model requests are timed back to back before and while an
 * adapter on every linear layer (72 weights, rank 16) is fetched, merged and opened. Run with
 * `deno run -P=tests tests/bench/lora_load.ts`; prints the latencies and the load's own steps.
 */
import { ensureFixtures } from "@svc/fixture-models";
import { benchSmall } from "@svc/fixture-models/models";
import type { EncoderWeights } from "@svc/fixture-models/models";
import {
  denseAdapter,
  LAYER_MODULES,
  type LayerModule,
  writeAdapter,
} from "@svc/fixture-models/lora";
import { startFakeHub } from "../fake_hub/server.ts";
import { type Json, postJson, startTestWorker } from "../worker/harness.ts";

const MODEL = "fixture/bench-small";
const LORA = "bench-lora/all-linear";
const TEXT = "a short query about retrieval models and their adapters";

function summary(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))].toFixed(1);
  return `n=${s.length} p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${s[s.length - 1].toFixed(1)} ms`;
}

async function timedBase(url: string): Promise<number> {
  const t0 = performance.now();
  const r = await postJson(`${url}/v1/encode/${MODEL}`, { items: [{ text: TEXT }] });
  if (r.status !== 200) throw new Error(`base request: ${r.status} ${JSON.stringify(r.body)}`);
  return performance.now() - t0;
}

await ensureFixtures(undefined, { bench: true });
const lora = denseAdapter(benchSmall().weights() as EncoderWeights, {
  repo: LORA,
  rank: 16,
  alpha: 32,
  modules: Object.keys(LAYER_MODULES) as LayerModule[],
  baseModel: MODEL,
  std: 0.02,
});
const root = await Deno.makeTempDir({ prefix: "svc-lora-bench-" });
await writeAdapter(root, lora);
const hub = await startFakeHub({ root });
const w = await startTestWorker({
  SVC_HUB_DISABLED: "0",
  SVC_HUB_URL: hub.url,
  SVC_LORA_WAIT_MS: "0",
});
try {
  for (let i = 0; i < 5; i++) await timedBase(w.url);
  const before: number[] = [];
  for (let i = 0; i < 40; i++) before.push(await timedBase(w.url));
  const first = await postJson(`${w.url}/v1/encode/${MODEL}`, {
    items: [{ text: TEXT }],
    params: { options: { lora_id: LORA } },
  });
  const during: number[] = [];
  const loaded = async () => {
    const info = (await (await fetch(`${w.url}/v1/models/${MODEL}`)).json()) as Json;
    return info.loras?.[0]?.state === "loaded";
  };
  // Bounded: an adapter that never loads ends the script instead of spinning on the worker.
  const until = Date.now() + 120_000;
  while (!(await loaded())) {
    if (Date.now() > until) {
      throw new Error(`adapter not loaded within 120 s:\n${w.logs.join("\n")}`);
    }
    during.push(await timedBase(w.url));
  }
  const event = w.logs.map((l) => JSON.parse(l)).find((o) => o.msg === "lora_loaded");
  console.log(`first adapter request: ${first.status} ${first.body.detail?.code ?? ""}`);
  console.log(`base before the load: ${summary(before)}`);
  console.log(`base during the load: ${during.length ? summary(during) : "n=0"}`);
  console.log(
    `load: fetch ${event.fetch_ms} ms, plan ${event.plan_ms} ms, merge ${event.merge_ms} ms ` +
      `(${event.patched_weights} weights), session ${event.session_ms} ms, total ${event.load_ms} ms, ` +
      `${(event.memory_bytes / 1e6).toFixed(1)} MB`,
  );
} finally {
  await w.close();
  await hub.close();
  await Deno.remove(root, { recursive: true });
}
