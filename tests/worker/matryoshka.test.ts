import assert from "node:assert/strict";
import { truncateDense } from "#worker/service/matryoshka.ts";
import { parseModelConfig } from "@svc/shared/catalog/schema";

const base = {
  id: "t/m",
  family: "dense",
  hub: { repo: "t/m", revision: "main" },
  files: { model: "m.onnx" },
  inputs: ["text"],
  outputs: ["dense"],
  max_sequence_length: 8,
};

Deno.test("truncateDense: slice then L2; with layer norm first when the model asks for it", () => {
  const v = new Float32Array([3, 4, 12, 0]);
  const plain = truncateDense(v, 2, parseModelConfig(base, "t"));
  assert.deepEqual(Array.from(plain), [Math.fround(3 / 5), Math.fround(4 / 5)], "3-4-5 triangle");
  const nomic = truncateDense(
    v,
    2,
    parseModelConfig({ ...base, family_options: { matryoshka_layer_norm: true } }, "t"),
  );
  // mean 4.75: centred [-1.75, -0.75, ...] → slice → L2 gives the centred direction.
  const n = Math.hypot(1.75, 0.75);
  assert.ok(Math.abs(nomic[0] - -1.75 / n) < 1e-5);
  assert.ok(Math.abs(nomic[1] - -0.75 / n) < 1e-5);
  assert.equal(truncateDense(v, 8, parseModelConfig(base, "t")), v, "no-op when not shorter");
});
