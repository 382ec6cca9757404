/** Dense text encoders: one vector per text, pooled from token states or by the graph. */
import { configureDense } from "./detect.ts";
import { defineFamily, textGraph } from "../info.ts";
import { DENSE_OUTPUTS } from "../output_names.ts";

/** The dense family. */
export const denseInfo = defineFamily("dense", {
  lora: true,
  int8Probe: true,
  io: { inputs: ["text"], outputs: ["dense"] },
  graphs: textGraph(DENSE_OUTPUTS),
  detect: { configure: (ctx, graphs, out) => configureDense(ctx, graphs.files.model, out) },
});
