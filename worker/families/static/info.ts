/**
 * Static embeddings (model2vec, GloVe averages): a token-table lookup and mean pooling inside the
 * graph, served by the dense adapter's rank-2 path. No linear layers, so no LoRA.
 */
import { defineFamily, textGraph } from "../info.ts";
import { DENSE_OUTPUTS } from "../output_names.ts";

/** The static family. */
export const staticInfo = defineFamily("static", {
  lora: false,
  int8Probe: true,
  io: { inputs: ["text"], outputs: [] },
  graphs: textGraph(DENSE_OUTPUTS),
});
