/** GLiNER span models: entity types (and, on multitask models, relations) found as spans. */
import { configureGliner, glinerFiles } from "./detect.ts";
import { defineFamily, TOKEN_FEEDS } from "../info.ts";
import { planGliner } from "./plan.ts";

/** The gliner family. */
export const glinerInfo = defineFamily("gliner", {
  lora: false,
  int8Probe: false,
  io: { inputs: ["text"], outputs: ["entities", "data"] },
  // Span grids grow with words times widths times labels: a smaller batch bounds them.
  batchTokens: 4096,
  graphs: () => [{
    role: "model",
    feeds: [...TOKEN_FEEDS, "words_mask", "text_lengths", "span_idx", "span_mask"],
    reads: [["logits"]],
  }],
  detect: {
    configure: (ctx, _graphs, out) => configureGliner(ctx, out),
    supportFiles: glinerFiles,
  },
  extract: { plan: planGliner, options: ["entity_labels"], fillsSchema: true },
});
