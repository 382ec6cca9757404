/**
 * What each model family is, without loading it: the op it serves and whether this release has
 * an adapter for it. Imports nothing at run time: the main thread reads it (model gate), while
 * the adapters themselves (and ONNX Runtime with them) load only inside inference threads.
 */
import type { Family } from "@svc/shared/catalog/schema";
import type { Op } from "./types.ts";

export {
  ADAPTER_FAMILIES,
  type AdapterFamily,
  hasAdapter,
} from "@svc/shared/catalog/served_families";

// Every family names its op, so a family added to the catalog schema must be placed here.
const FAMILY_OPS: Record<Family, Op> = {
  dense: "encode",
  static: "encode",
  sparse: "encode",
  colbert: "encode",
  bge_m3: "encode",
  clip: "encode",
  reranker: "score",
  gliner: "extract",
  token_classification: "extract",
  zero_shot: "extract",
  gliclass: "extract",
  detection: "extract",
  zero_shot_detection: "extract",
};

/**
 * Families that take LoRA adapters: encode families whose graph is one text encoder loaded by
 * `text/base.ts` (a patched copy of it is what an adapter runs). Static models have no linear
 * layers; CLIP has two graphs.
 */
export const LORA_FAMILIES: readonly Family[] = ["dense", "sparse", "colbert", "bge_m3"];

/** True when models of `family` accept `options.lora_id`. */
export function supportsLora(family: Family): boolean {
  return LORA_FAMILIES.includes(family);
}

/** The op each family serves. */
export function familyOp(family: Family): Op {
  return FAMILY_OPS[family];
}

/**
 * Whether a family answers `op`: its own op, and `score` for every encode family too (items are
 * ranked by the similarity of their embeddings to the query's).
 */
export function familyServes(family: Family, op: Op): boolean {
  const own = FAMILY_OPS[family];
  return own === op || (op === "score" && own === "encode");
}
