/** SPLADE-style sparse encoders: masked-LM logits over the vocabulary, per token. */
import { configureSparse } from "./detect.ts";
import { defineFamily, textGraph } from "../info.ts";
import { SPARSE_OUTPUTS } from "../output_names.ts";

/** The sparse family. */
export const sparseInfo = defineFamily("sparse", {
  lora: true,
  int8Probe: true,
  io: { inputs: ["text"], outputs: ["sparse"] },
  // Vocabulary-wide outputs per token: a smaller batch keeps the logits tensor bounded.
  batchTokens: 2048,
  graphs: textGraph(SPARSE_OUTPUTS),
  detect: { configure: configureSparse },
});
