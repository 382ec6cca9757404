/**
 * JSON encoding of responses: typed arrays become lists (float16 bits as numbers, 2-D NdArrays as
 * lists of lists), everything else as JSON.stringify would write it.
 */

import { float16ToFloat32 } from "./float16.ts";
import { dtypeOf, isNdArray, isTypedArray, type TypedArray } from "./ndarray.ts";
import type { DType } from "./ndarray.ts";

/**
 * Numbers of a typed array as a JSON list. `join` formats like JSON for finite values; NaN and
 * ±Infinity (which JSON cannot carry) print as letters, so only then fall back to null per element.
 */
function listOf(a: TypedArray, dtype: DType): string {
  const v: TypedArray = dtype === "<f2" && a instanceof Uint16Array ? float16ToFloat32(a) : a;
  const s = v.join(",");
  if (!(v instanceof Float32Array || v instanceof Float64Array) || !/[NI]/.test(s)) return `[${s}]`;
  return JSON.stringify(Array.from(v, (x) => (Number.isFinite(x) ? x : null)));
}

/** Nested lists for an n-D array in C order. */
function nestedList(data: TypedArray, shape: readonly number[], dtype: DType): string {
  if (shape.length <= 1) return listOf(data, dtype);
  const inner = shape.slice(1);
  const stride = inner.reduce((p, d) => p * d, 1);
  const rows: string[] = new Array(shape[0]);
  for (let r = 0; r < shape[0]; r++) {
    rows[r] = nestedList(data.subarray(r * stride, (r + 1) * stride), inner, dtype);
  }
  return `[${rows.join(",")}]`;
}

/** Encode a response value as JSON text (typed arrays → lists). */
export function encodeJson(value: unknown): string {
  return write(value, 0) ?? "null";
}

const MAX_DEPTH = 64;

/** JSON text of `v`, or undefined where JSON.stringify would leave the value out. */
function write(v: unknown, depth: number): string | undefined {
  if (typeof v !== "object" || v === null) {
    return typeof v === "bigint" ? String(v) : JSON.stringify(v);
  }
  if (depth > MAX_DEPTH) throw new Error("response nests too deeply (cyclic value?)");
  if (isTypedArray(v)) return listOf(v, dtypeOf(v));
  if (isNdArray(v)) return nestedList(v.data, v.shape, v.dtype);
  if (Array.isArray(v)) {
    const parts: string[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) parts[i] = write(v[i], depth + 1) ?? "null";
    return `[${parts.join(",")}]`;
  }
  const entries = v instanceof Map
    ? Array.from(v, ([k, x]) => [String(k), x] as const)
    : Object.entries(v);
  const parts: string[] = [];
  for (const [k, x] of entries) {
    const s = write(x, depth + 1);
    if (s !== undefined) parts.push(`${JSON.stringify(k)}:${s}`);
  }
  return `{${parts.join(",")}}`;
}
