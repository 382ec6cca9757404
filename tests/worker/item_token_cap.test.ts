/**
 * SVC_CPU_MAX_ITEM_TOKENS: on CPU an item longer than the cap is truncated to it (one item is one
 * ONNX run, whose attention grows with the square of its length); GPU keeps the model's length.
 */
import assert from "node:assert/strict";
import { BUILTIN_CATALOG } from "@svc/shared/catalog";
import { CPU_MAX_ITEM_TOKENS, itemTokenCap } from "#worker/inference/device_policy.ts";
import { postJson, withWorker } from "./harness.ts";
import { expectedDense, fixtureIds, maxDiff } from "./expected.ts";

Deno.test("itemTokenCap: CPU caps long-context entries, GPU and short entries unchanged", () => {
  const long = BUILTIN_CATALOG.find((c) => c.id === "BAAI/bge-m3")!;
  assert.equal(long.max_sequence_length, 8192);
  assert.equal(itemTokenCap(long, "cpu").max_sequence_length, CPU_MAX_ITEM_TOKENS);
  assert.equal(itemTokenCap(long, "cpu", 4096).max_sequence_length, 4096);
  assert.equal(itemTokenCap(long, "cuda").max_sequence_length, 8192);
  const short = BUILTIN_CATALOG.find((c) => c.id === "BAAI/bge-small-en-v1.5")!;
  assert.equal(itemTokenCap(short, "cpu"), short);
});

Deno.test("a CPU worker truncates an item to SVC_CPU_MAX_ITEM_TOKENS (reference run)", async () => {
  const long = Array(40).fill("cat").join(" ");
  assert.equal(fixtureIds("cat").length, 3, "one token per word");
  // [CLS] + 14 words + [SEP] = 16 tokens.
  const [want] = await expectedDense("dense", [Array(14).fill("cat").join(" ")]);
  const [full] = await expectedDense("dense", [long]);
  assert.ok(maxDiff(want, full) > 1e-4, "truncation changes the vector");
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}/v1/embeddings`, { model: "fixture/dense", input: long });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.usage.prompt_tokens, 16);
    assert.ok(maxDiff(r.body.data[0].embedding, want) < 1e-4);
    // ModelInfo reports the model's length, and the length this worker truncates at beside it.
    const info = await (await fetch(`${w.url}/v1/models/fixture%2Fdense`)).json();
    assert.equal(info.max_sequence_length, 128);
    assert.equal(info.max_item_tokens, 16);
    const listed = await (await fetch(`${w.url}/v1/models`)).json();
    const entry = listed.models.find((m: { name: string }) => m.name === "fixture/dense");
    assert.deepEqual([entry.max_sequence_length, entry.max_item_tokens], [128, 16]);
    // So does the status the stream reports.
    const status = w.instance.ctx.registry.statuses().find((s) => s.name === "fixture/dense");
    assert.deepEqual([status?.config.max_sequence_length, status?.maxItemTokens], [128, 16]);
  }, { SVC_CPU_MAX_ITEM_TOKENS: "16" });
});
