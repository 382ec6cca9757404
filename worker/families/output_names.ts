/**
 * Graph output names the text families read, in order of preference (the first the graph has is
 * used). One list for the adapters and for `catalog:verify`, which checks real graphs against it;
 * imports nothing, so the verify task can read it without the adapters.
 */
import type { OutputType } from "@svc/shared/schemas/encode";

/** Dense (and static) encoders: token states to pool, or a pooled vector. */
export const DENSE_OUTPUTS = ["last_hidden_state", "sentence_embedding", "embeddings"] as const;
/** SPLADE: MLM logits over the vocabulary. */
export const SPARSE_OUTPUTS = ["logits", "output"] as const;
/** ColBERT: projected token vectors. */
export const COLBERT_OUTPUTS = ["contextual", "last_hidden_state", "output"] as const;
/** Cross-encoder rerankers: one logit per pair. */
export const RERANKER_OUTPUTS = ["logits", "output"] as const;
/** BGE-M3's heads by output type, the published export's name first. */
export const M3_HEAD_OUTPUTS: Readonly<Record<OutputType, readonly string[]>> = {
  dense: ["dense_vecs", "dense"],
  sparse: ["sparse_vecs", "sparse"],
  multivector: ["colbert_vecs", "colbert"],
};
