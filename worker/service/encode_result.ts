/** Model outputs → EncodeResult wire objects, with Matryoshka truncation and output dtypes. */
import { makeDenseVector, makeMultiVector, makeSparseVector } from "@svc/shared/codec/output_dtype";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import type { EncodeResult } from "@svc/shared/schemas/encode";
import type { ItemOutput } from "../families/types.ts";
import type { EncodePlan } from "./params.ts";
import { truncateDense } from "./matryoshka.ts";

/** One EncodeResult (without `id`), as docs/api.md describes it. */
export function toEncodeResult(
  out: ItemOutput,
  plan: EncodePlan,
  config: ModelConfig,
): Omit<EncodeResult, "id"> {
  const r: Omit<EncodeResult, "id"> = {};
  const { dtype, dimensions, outputTypes } = plan;
  if (outputTypes.includes("dense") && out.dense) {
    const v = dimensions !== undefined ? truncateDense(out.dense, dimensions, config) : out.dense;
    r.dense = makeDenseVector(v, dtype);
  }
  if (outputTypes.includes("sparse") && out.sparse) {
    const s = out.sparse;
    r.sparse = makeSparseVector(s.dims, s.indices, s.values, dtype);
  }
  if (outputTypes.includes("multivector") && out.multivector) {
    const m = out.multivector;
    r.multivector = makeMultiVector(m.values, m.numTokens, m.tokenDims, dtype);
  }
  return r;
}
