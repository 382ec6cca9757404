/** ColBERT late-interaction encoders: one projected vector per token. */
import { defineFamily, textGraph } from "../info.ts";
import { COLBERT_OUTPUTS } from "../output_names.ts";

/** The colbert family. */
export const colbertInfo = defineFamily("colbert", {
  lora: true,
  int8Probe: true,
  io: { inputs: ["text"], outputs: [] },
  graphs: textGraph(COLBERT_OUTPUTS),
});
