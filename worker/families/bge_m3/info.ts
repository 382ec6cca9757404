/** BGE-M3: one graph, three heads (dense, sparse and multi-vector). */
import { defineFamily, TOKEN_FEEDS } from "../info.ts";
import { M3_HEAD_OUTPUTS } from "../output_names.ts";

/** The bge_m3 family. */
export const bgeM3Info = defineFamily("bge_m3", {
  lora: true,
  int8Probe: true,
  io: { inputs: ["text"], outputs: [] },
  // The heads the entry serves are the outputs the graph must have.
  graphs: (config) => [{
    role: "model",
    feeds: TOKEN_FEEDS,
    reads: config.outputs.filter((o) => o in M3_HEAD_OUTPUTS).map((o) =>
      M3_HEAD_OUTPUTS[o as keyof typeof M3_HEAD_OUTPUTS]
    ),
  }],
});
