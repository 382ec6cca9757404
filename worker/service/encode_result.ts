/** Model outputs → EncodeResult wire objects, with Matryoshka truncation and output dtypes. */
import { NdArray } from "../../shared/codec/ndarray.ts";
import { float32ToFloat16, packBitsRows, quantizeInt8Rows } from "../../shared/codec/float16.ts";
import type { ItemOutput } from "../families/types.ts";
import type { ModelConfig } from "../../shared/catalog/schema.ts";
import { truncateDense } from "./matryoshka.ts";
import type { EncodePlan, OutputDtype } from "./params.ts";

/** Values of `rows × cols` float32 data in the requested dtype (2-D when `matrix`). */
export function convertRows(
  data: Float32Array,
  rows: number,
  cols: number,
  dtype: OutputDtype,
  matrix: boolean,
): NdArray | Float32Array | Uint16Array | Int8Array | Uint8Array {
  let out: Float32Array | Uint16Array | Int8Array | Uint8Array;
  let outCols = cols;
  switch (dtype) {
    case "float32":
      out = data;
      break;
    case "float16":
      out = float32ToFloat16(data);
      break;
    case "int8":
      out = quantizeInt8Rows(data, rows, cols);
      break;
    case "binary":
      out = packBitsRows(data, rows, cols);
      outCols = Math.ceil(cols / 8);
      break;
  }
  return matrix ? NdArray.matrix(out, rows, outCols) : out;
}

/** One EncodeResult (without `id`), per wire.md. */
export function toEncodeResult(
  out: ItemOutput,
  plan: EncodePlan,
  config: ModelConfig,
): Record<string, unknown> {
  const r: Record<string, unknown> = {};
  const { dtype, dimensions, params } = plan;
  if (params.outputTypes.includes("dense") && out.dense) {
    let v = out.dense;
    if (dimensions !== undefined) v = truncateDense(v, dimensions, config);
    r.dense = { dims: v.length, dtype, values: convertRows(v, 1, v.length, dtype, false) };
  }
  if (params.outputTypes.includes("sparse") && out.sparse) {
    // Sparse vectors ignore int8/binary: their values stay float32 (wire.md); float16 applies.
    const sd: OutputDtype = dtype === "float16" ? "float16" : "float32";
    const vals = out.sparse.values;
    r.sparse = {
      dims: out.sparse.dims,
      dtype: sd,
      indices: out.sparse.indices,
      values: convertRows(vals, 1, vals.length, sd, false),
    };
  }
  if (params.outputTypes.includes("multivector") && out.multivector) {
    const m = out.multivector;
    r.multivector = {
      token_dims: m.tokenDims,
      num_tokens: m.numTokens,
      dtype,
      values: convertRows(m.values, m.numTokens, m.tokenDims, dtype, true),
    };
  }
  return r;
}
