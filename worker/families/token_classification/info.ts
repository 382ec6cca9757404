/** Token classifiers (NER): a label per token, merged into entity spans. */
import { checkLabelList } from "../../service/extract/labels.ts";
import { MAX_LABELS } from "../../service/extract/limits.ts";
import { refuseInstruction } from "../../service/extract/common.ts";
import { configureId2label } from "../../catalog/detect/context.ts";
import { defineFamily, textGraph } from "../info.ts";

/** The token_classification family. */
export const tokenClassificationInfo = defineFamily("token_classification", {
  lora: false,
  int8Probe: false,
  io: { inputs: ["text"], outputs: ["entities"] },
  batchTokens: 4096,
  graphs: textGraph(["logits"]),
  detect: {
    architecture: (arch) => arch.endsWith("ForTokenClassification"),
    configure: (ctx, _graphs, out) => configureId2label(ctx, out),
  },
  extract: {
    plan(served, p, c) {
      refuseInstruction(served, c, "a token classifier reads the text alone");
      const labels = checkLabelList(p.labels, "params.labels", MAX_LABELS);
      return { work: { op: "extract", labels, threshold: c.threshold }, outputs: ["entities"] };
    },
  },
});
