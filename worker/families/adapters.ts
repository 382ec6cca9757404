/**
 * Which adapter runs which family. Imported only by the inference thread: every adapter pulls in
 * ONNX Runtime and the tokenizer, which must stay off the main thread (see `kinds.ts`).
 */
import type { Family } from "@svc/shared/catalog/schema";
import type { AdapterFactory } from "./types.ts";
import { createDenseAdapter, createStaticAdapter } from "./dense.ts";
import { createSparseAdapter } from "./sparse.ts";
import { createColbertAdapter } from "./colbert.ts";
import { createBgeM3Adapter } from "./bge_m3.ts";
import { createRerankerAdapter } from "./reranker.ts";
import { createTokenClassificationAdapter } from "./token_classification.ts";
import { createGlinerAdapter } from "./gliner.ts";
import { createZeroShotAdapter } from "./zero_shot.ts";
import { createGliclassAdapter } from "./gliclass.ts";
import { createClipAdapter } from "./clip.ts";
import { createDetectionAdapter } from "./detection.ts";
import { createZeroShotDetectionAdapter } from "./zero_shot_detection.ts";

/** Adapter factories by family: one for every family of the catalog schema. */
export const FAMILY_ADAPTERS: Record<Family, AdapterFactory> = {
  dense: createDenseAdapter,
  // Static embedding models (model2vec, GloVe averages) are a token-table lookup plus mean
  // pooling inside the graph: the dense adapter's rank-2 path serves them, refusing a text with
  // no known word (all zeros) instead of answering it.
  static: createStaticAdapter,
  sparse: createSparseAdapter,
  colbert: createColbertAdapter,
  bge_m3: createBgeM3Adapter,
  reranker: createRerankerAdapter,
  token_classification: createTokenClassificationAdapter,
  gliner: createGlinerAdapter,
  zero_shot: createZeroShotAdapter,
  gliclass: createGliclassAdapter,
  clip: createClipAdapter,
  detection: createDetectionAdapter,
  zero_shot_detection: createZeroShotDetectionAdapter,
};
