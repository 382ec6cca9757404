import assert from "node:assert/strict";
import {
  parseSafetensorsHeader,
  readSafetensorsHeader,
  SafetensorsError,
  tensorFloat32,
} from "#worker/lora/safetensors.ts";
import { writeSafetensors } from "@svc/fixture-models/lora";

/** A safetensors file with a hand-written header and `data` bytes of tensor data. */
function rawFile(header: unknown, data = new Uint8Array(0), declared?: number): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(declared ?? json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

const parse = (file: Uint8Array, limits?: { maxHeaderBytes: number; maxTensors: number }) =>
  parseSafetensorsHeader(file, file.length, limits);

Deno.test("safetensors: F32, F16, BF16 and F64 tensors read back as float32, metadata kept", () => {
  // Values exactly representable in every stored type.
  const values = Float32Array.from([1.5, -0.25, 0, 3, -2, 0.125]);
  const file = writeSafetensors([
    { name: "a32", dims: [2, 3], data: values },
    { name: "a16", dims: [3, 2], data: values, dtype: "F16" },
    { name: "abf", dims: [6], data: values, dtype: "BF16" },
    { name: "a64", dims: [1, 6], data: values, dtype: "F64" },
  ], { format: "pt" });
  const h = parse(file);
  assert.deepEqual(h.metadata, { format: "pt" });
  assert.deepEqual([...h.tensors.keys()], ["a32", "a16", "abf", "a64"]);
  assert.deepEqual(h.tensors.get("a16")!.shape, [3, 2]);
  for (const t of h.tensors.values()) assert.deepEqual(tensorFloat32(file, t), values, t.name);
});

Deno.test("safetensors: F16 and BF16 round as the writer stored them", () => {
  const values = Float32Array.from([0.1, -1 / 3, 1000.7]);
  const file = writeSafetensors([
    { name: "h", dims: [3], data: values, dtype: "F16" },
    { name: "b", dims: [3], data: values, dtype: "BF16" },
  ]);
  const h = parse(file);
  const half = tensorFloat32(file, h.tensors.get("h")!);
  const brain = tensorFloat32(file, h.tensors.get("b")!);
  values.forEach((v, i) => {
    assert.ok(Math.abs(half[i] - v) <= Math.abs(v) * 1e-3, `f16 ${half[i]} vs ${v}`);
    assert.ok(Math.abs(brain[i] - v) <= Math.abs(v) * 8e-3, `bf16 ${brain[i]} vs ${v}`);
  });
});

Deno.test("safetensors: the header alone is read from a file, data bytes untouched", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const big = new Float32Array(100_000);
    const path = `${dir}/adapter_model.safetensors`;
    await Deno.writeFile(path, writeSafetensors([{ name: "w", dims: [1000, 100], data: big }]));
    const h = await readSafetensorsHeader(path);
    const t = h.tensors.get("w")!;
    assert.equal(t.end - t.start, 400_000);
    assert.equal(t.end, (await Deno.stat(path)).size);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("safetensors: malformed or hostile files are refused with a reason", () => {
  const f32 = (n: number) => new Uint8Array(4 * n);
  const cases: [string, Uint8Array, RegExp][] = [
    ["shorter than 8 bytes", new Uint8Array(4), /shorter than 8 bytes/],
    ["header past the end", rawFile({}, new Uint8Array(0), 1000), /past the end/],
    ["header over the bound", rawFile({}, new Uint8Array(0), 2 ** 40), /exceeds the limit/],
    [
      "not JSON",
      (() => {
        const f = rawFile({ a: 1 });
        f[8] = 0x78; // 'x'
        return f;
      })(),
      /not UTF-8 JSON/,
    ],
    ["not an object", rawFile([1, 2]), /not a JSON object/],
    [
      "unknown dtype",
      rawFile({ w: { dtype: "Q4", shape: [1], data_offsets: [0, 4] } }, f32(1)),
      /unknown dtype/,
    ],
    [
      "bytes do not match the shape",
      rawFile({ w: { dtype: "F32", shape: [2], data_offsets: [0, 12] } }, f32(3)),
      /do not hold shape/,
    ],
    [
      "offsets out of range",
      rawFile({ w: { dtype: "F32", shape: [2], data_offsets: [0, 8] } }, f32(1)),
      /out of range/,
    ],
    [
      "overlap",
      rawFile({
        a: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
        b: { dtype: "F32", shape: [2], data_offsets: [4, 12] },
      }, f32(3)),
      /overlaps/,
    ],
    [
      "hole",
      rawFile({ a: { dtype: "F32", shape: [1], data_offsets: [4, 8] } }, f32(2)),
      /hole/,
    ],
    [
      "trailing bytes",
      rawFile({ a: { dtype: "F32", shape: [1], data_offsets: [0, 4] } }, f32(2)),
      /do not cover/,
    ],
    [
      "shape that overflows",
      rawFile({ a: { dtype: "F32", shape: [2 ** 40, 2 ** 40], data_offsets: [0, 4] } }, f32(1)),
      /larger than the file/,
    ],
    [
      "negative dim",
      rawFile({ a: { dtype: "F32", shape: [-1], data_offsets: [0, 4] } }, f32(1)),
      /non-negative/,
    ],
    ["metadata not strings", rawFile({ __metadata__: { a: 1 } }), /not a string/],
  ];
  for (const [what, file, message] of cases) {
    assert.throws(
      () => parse(file),
      (e) => e instanceof SafetensorsError && message.test(e.message),
      what,
    );
  }
  const many = writeSafetensors(
    Array.from({ length: 5 }, (_, i) => ({ name: `t${i}`, dims: [1], data: new Float32Array(1) })),
  );
  assert.throws(
    () => parse(many, { maxHeaderBytes: 1 << 20, maxTensors: 4 }),
    /more than 4 tensors/,
  );
  assert.throws(() => parse(many, { maxHeaderBytes: 16, maxTensors: 100 }), /exceeds the limit/);
});

Deno.test("safetensors: integer tensors are listed but not read as floats", () => {
  const file = rawFile(
    { ids: { dtype: "I64", shape: [1], data_offsets: [0, 8] } },
    new Uint8Array(8),
  );
  const h = parse(file);
  assert.throws(() => tensorFloat32(file, h.tensors.get("ids")!), /not a float type/);
});
