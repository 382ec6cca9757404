/** GLiClass uni-encoder: every label in one prompt with the text, one logit per label. */
import { candidateLabels, multiLabelOf } from "../../service/extract/common.ts";
import { defineFamily, textGraph } from "../info.ts";

/** The gliclass family. */
export const gliclassInfo = defineFamily("gliclass", {
  lora: false,
  int8Probe: false,
  io: { inputs: ["text"], outputs: [] },
  graphs: textGraph(["logits"]),
  extract: {
    options: ["multi_label"],
    plan: (served, p, c) => ({
      work: {
        op: "extract",
        labels: candidateLabels(served, p),
        threshold: c.threshold,
        prompt: c.instruction,
        multiLabel: multiLabelOf(served, c.options),
      },
      outputs: ["classifications"],
    }),
  },
});
