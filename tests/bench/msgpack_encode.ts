/**
 * In-process micro-benchmark of the msgpack response encoder: the hand encoder
 * (shared/codec/msgpack_encode.ts) against msgpackr writing the same bytes (numpy arrays as a `Map`
 * with `Uint8Array` keys, so they stay `bin` keys in the wire order). Typical encode responses:
 * 1 and 64 items, dense float32 (768 dims) and multi-vector float32 (96 tokens x 128). Rounds are
 * interleaved A/B/A/B so a shared machine's noise hits both alike; each round times N encodes, and
 * the report gives each side's median per encode and the median of the per-round ratios with its
 * spread (25th-75th percentile). Both encoders are first checked to give identical bytes. A third
 * column times msgpackr alone on the numpy maps built beforehand (no walk): its lower bound.
 *
 *   deno run -P=tests tests/bench/msgpack_encode.ts [--rounds=15] [--ms=200]
 */
import { parseArgs } from "node:util";
import { Packr } from "msgpackr/pack";
import { encodeMsgpack } from "#shared/codec/msgpack_encode.ts";
import { bytesOf, dtypeOf, isNdArray, isTypedArray } from "#shared/codec/ndarray.ts";
import { makeDenseVector, makeMultiVector } from "@svc/shared/codec/output_dtype";

// --- the msgpackr candidate ----------------------------------------------------------------

// skipValues is in msgpackr's code (pack.js) but not in its type declarations: a variable, not a
// literal, so the extra property passes the type check.
const packrOptions = {
  useRecords: false,
  variableMapSize: true, // smallest map header, as the hand encoder writes
  encodeUndefinedAsNil: true, // undefined in a list is nil
  skipValues: [undefined], // an undefined property is left out
};
const packr = new Packr(packrOptions);
const key = (s: string) => new TextEncoder().encode(s);
const ND = key("nd");
const TYPE = key("type");
const KIND = key("kind");
const SHAPE = key("shape");
const DATA = key("data");
const EMPTY = new Uint8Array(0);
const MAX_DEPTH = 64;

function numpyMap(
  dtype: string,
  shape: readonly number[],
  bytes: Uint8Array,
): Map<Uint8Array, unknown> {
  return new Map<Uint8Array, unknown>([
    [ND, true],
    [TYPE, dtype],
    [KIND, EMPTY],
    [SHAPE, shape],
    [DATA, bytes],
  ]);
}

/** The response with every typed array or NdArray replaced by its numpy map. */
function toWire(v: unknown, depth: number): unknown {
  if (typeof v !== "object" || v === null) return v;
  if (depth > MAX_DEPTH) throw new Error("response nests too deeply (cyclic value?)");
  if (Array.isArray(v)) return v.map((x) => toWire(x, depth + 1));
  if (ArrayBuffer.isView(v)) {
    if (!isTypedArray(v)) throw new Error(`cannot encode ${v.constructor.name} in a response`);
    return numpyMap(dtypeOf(v), [v.length], bytesOf(v));
  }
  if (isNdArray(v)) return numpyMap(v.dtype, v.shape, bytesOf(v.data));
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) out[k] = toWire((v as Record<string, unknown>)[k], depth + 1);
  return out;
}

function encodeWithMsgpackr(value: unknown): Uint8Array {
  const packed = packr.pack(toWire(value, 0));
  return new Uint8Array(packed.buffer, packed.byteOffset, packed.byteLength);
}

// --- workloads -----------------------------------------------------------------------------

function floats(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    out[i] = s / 2 ** 32 - 0.5;
  }
  return out;
}

function response(items: number, kind: "dense" | "multivector"): unknown {
  return {
    model: "BAAI/bge-base-en-v1.5",
    items: Array.from({ length: items }, (_, i) => ({
      id: `doc-${i}`,
      ...(kind === "dense"
        ? { dense: makeDenseVector(floats(768, i + 1)) }
        : { multivector: makeMultiVector(floats(96 * 128, i + 1), 96, 128) }),
    })),
    timing: {
      total_ms: 12.25,
      queue_ms: 0.5,
      tokenization_ms: 1.5,
      inference_ms: 10.25,
      postprocessing_ms: null,
    },
  };
}

// --- measurement ---------------------------------------------------------------------------

function quantile(sorted: number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo);
}

/** Microseconds per call over about `ms` milliseconds (the count fixed once per workload). */
function time(fn: () => Uint8Array, n: number): number {
  let sink = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) sink += fn().length;
  const us = (performance.now() - t0) * 1000 / n;
  if (sink === 0) throw new Error("nothing encoded");
  return us;
}

const args = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "15" }, ms: { type: "string", default: "200" } },
});
const rounds = Number(args.values.rounds);
const roundMs = Number(args.values.ms);

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
console.log(
  `msgpack response encoding, ${rounds} interleaved rounds of ~${roundMs} ms per side; ` +
    "µs per encode (median), ratio = msgpackr / hand (median, p25-p75 of the per-round ratios)",
);
console.log("| workload | bytes | hand µs | msgpackr µs | msgpackr / hand | pack only / hand |");
console.log("| --- | --- | --- | --- | --- | --- |");
for (
  const [items, kind] of [[1, "dense"], [64, "dense"], [1, "multivector"], [
    64,
    "multivector",
  ]] as const
) {
  const value = response(items, kind);
  const a = encodeMsgpack(value);
  const b = encodeWithMsgpackr(value);
  if (hex(a) !== hex(b)) throw new Error(`${items} ${kind}: the encoders' bytes differ`);
  // Calls per round: enough for ~roundMs on the hand encoder (after a warm-up).
  for (let i = 0; i < 200; i++) encodeMsgpack(value), encodeWithMsgpackr(value);
  const probe = time(() => encodeMsgpack(value), 50);
  const n = Math.max(20, Math.round(roundMs * 1000 / probe));
  const prebuilt = toWire(value, 0);
  const packOnly = () => packr.pack(prebuilt);
  const hand: number[] = [];
  const mp: number[] = [];
  const ratio: number[] = [];
  const packRatio: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // Alternate which side goes first, so neither always runs on a warmer cache.
    const first = r % 2 === 0;
    const h1 = first ? time(() => encodeMsgpack(value), n) : NaN;
    const m = time(() => encodeWithMsgpackr(value), n);
    const h = first ? h1 : time(() => encodeMsgpack(value), n);
    const p = time(packOnly, n);
    hand.push(h);
    mp.push(m);
    ratio.push(m / h);
    packRatio.push(p / h);
  }
  for (const xs of [hand, mp, ratio, packRatio]) xs.sort((x, y) => x - y);
  console.log(
    `| ${items} × ${kind} | ${a.length} | ${quantile(hand, 0.5).toFixed(2)} | ` +
      `${quantile(mp, 0.5).toFixed(2)} | ${quantile(ratio, 0.5).toFixed(2)} ` +
      `(${quantile(ratio, 0.25).toFixed(2)}-${quantile(ratio, 0.75).toFixed(2)}) | ` +
      `${quantile(packRatio, 0.5).toFixed(2)} ` +
      `(${quantile(packRatio, 0.25).toFixed(2)}-${quantile(packRatio, 0.75).toFixed(2)}) |`,
  );
}
