/**
 * Building response vectors at the requested `output_dtype` (docs/api.md "Output dtypes"): the worker hands
 * over float32 and gets the exact in-memory shape the codec sends.
 */

import type { DenseVector, MultiVector, OutputDtype, SparseVector } from "../schemas/encode.ts";
import {
  float32ToFloat16,
  packBits,
  packBitsRows,
  quantizeInt8,
  quantizeInt8Rows,
  quantizeUint8,
  quantizeUint8Rows,
} from "./float16.ts";
import { NdArray } from "./ndarray.ts";

/** A dense vector at `dtype`; `dims` stays the float dimension (also for packed bits). */
export function makeDenseVector(values: Float32Array, dtype: OutputDtype = "float32"): DenseVector {
  const dims = values.length;
  switch (dtype) {
    case "float32":
      return { dims, dtype, values };
    case "float16":
      return { dims, dtype, values: float32ToFloat16(values) };
    case "int8":
      return { dims, dtype, values: quantizeInt8(values) };
    case "uint8":
      return { dims, dtype, values: quantizeUint8(values) };
    case "binary":
    case "ubinary":
      return { dims, dtype, values: packBits(values) };
  }
}

/** A sparse vector; the integer and binary dtypes do not apply to sparse output: float32. */
export function makeSparseVector(
  dims: number,
  indices: Int32Array,
  values: Float32Array,
  dtype: OutputDtype = "float32",
): SparseVector {
  return dtype === "float16"
    ? { dims, dtype, indices, values: float32ToFloat16(values) }
    : { dims, dtype: "float32", indices, values };
}

/** A multi-vector from a row-major `numTokens` × `tokenDims` matrix; quantised per token row. */
export function makeMultiVector(
  data: Float32Array,
  numTokens: number,
  tokenDims: number,
  dtype: OutputDtype = "float32",
): MultiVector {
  const head = { token_dims: tokenDims, num_tokens: numTokens, dtype };
  switch (dtype) {
    case "float32":
      return { ...head, values: NdArray.matrix(data, numTokens, tokenDims) };
    case "float16":
      return { ...head, values: NdArray.matrix(float32ToFloat16(data), numTokens, tokenDims) };
    case "int8":
      return {
        ...head,
        values: NdArray.matrix(quantizeInt8Rows(data, numTokens, tokenDims), numTokens, tokenDims),
      };
    case "uint8":
      return {
        ...head,
        values: NdArray.matrix(quantizeUint8Rows(data, numTokens, tokenDims), numTokens, tokenDims),
      };
    case "binary":
    case "ubinary": {
      const packed = packBitsRows(data, numTokens, tokenDims);
      return { ...head, values: NdArray.matrix(packed, numTokens, Math.ceil(tokenDims / 8)) };
    }
  }
}
