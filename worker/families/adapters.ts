/**
 * Which adapter runs which family. Imported only by the inference thread: every adapter pulls in
 * ONNX Runtime and the tokenizer, which must stay off the main thread (it reads `infos.ts`).
 */
import type { Family } from "@svc/shared/catalog/schema";
import type { AdapterFactory } from "./types.ts";
import { createDenseAdapter, createStaticAdapter } from "./dense/adapter.ts";
import { createSparseAdapter } from "./sparse/adapter.ts";
import { createColbertAdapter } from "./colbert/adapter.ts";
import { createBgeM3Adapter } from "./bge_m3/adapter.ts";
import { createRerankerAdapter } from "./reranker/adapter.ts";
import { createTokenClassificationAdapter } from "./token_classification/adapter.ts";
import { createGlinerAdapter } from "./gliner/adapter.ts";
import { createZeroShotAdapter } from "./zero_shot/adapter.ts";
import { createGliclassAdapter } from "./gliclass/adapter.ts";
import { createClipAdapter } from "./clip/adapter.ts";
import { createDetectionAdapter } from "./detection/adapter.ts";
import { createZeroShotDetectionAdapter } from "./zero_shot_detection/adapter.ts";

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
