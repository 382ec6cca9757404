/** Cross-encoder rerankers: one relevance logit per (query, document) pair. */
import { configureReranker } from "./detect.ts";
import { defineFamily, textGraph } from "../info.ts";
import { RERANKER_OUTPUTS } from "../output_names.ts";

/** The reranker family. */
export const rerankerInfo = defineFamily("reranker", {
  lora: false,
  int8Probe: true,
  io: { inputs: ["text"], outputs: ["score"] },
  graphs: textGraph(RERANKER_OUTPUTS),
  detect: { configure: (ctx, _graphs, out) => configureReranker(ctx, out) },
});
