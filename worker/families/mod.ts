/** Family registry: which adapter runs which catalog family. */
import type { Family } from "@svc/shared/catalog/schema";
import type { AdapterFactory } from "./types.ts";
import { createDenseAdapter } from "./dense.ts";
import { createSparseAdapter } from "./sparse.ts";
import { createColbertAdapter } from "./colbert.ts";
import { createRerankerAdapter } from "./reranker.ts";
import { createTokenClassificationAdapter } from "./token_classification.ts";
import { createGlinerAdapter } from "./gliner.ts";

/** Adapter factories by family; families missing here are listed but cannot be loaded yet. */
export const FAMILY_ADAPTERS: Partial<Record<Family, AdapterFactory>> = {
  dense: createDenseAdapter,
  // Static embedding models (model2vec, GloVe averages) are a token-table lookup plus mean
  // pooling inside the graph: the dense adapter's rank-2 path serves them unchanged.
  static: createDenseAdapter,
  sparse: createSparseAdapter,
  colbert: createColbertAdapter,
  reranker: createRerankerAdapter,
  token_classification: createTokenClassificationAdapter,
  gliner: createGlinerAdapter,
};

/** The op each family serves. */
export function familyOp(family: Family): "encode" | "score" | "extract" {
  if (family === "reranker") return "score";
  if (["gliner", "token_classification", "zero_shot", "detection"].includes(family)) {
    return "extract";
  }
  return "encode";
}
