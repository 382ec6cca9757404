/** NLI zero-shot classifiers: each candidate label scored as a hypothesis about the text. */
import { invalidInput } from "@svc/shared/errors";
import { checkLabel } from "../../service/extract/labels.ts";
import { MAX_TEMPLATE_LENGTH } from "../../service/extract/limits.ts";
import { candidateLabels, multiLabelOf } from "../../service/extract/common.ts";
import { configureId2label } from "../../catalog/detect/context.ts";
import { DetectionError, sayIt } from "../../catalog/detect/errors.ts";
import { nliHeads } from "../classification.ts";
import { defineFamily, textGraph } from "../info.ts";

/** The NLI template used when neither the request nor the catalog names one. */
const DEFAULT_HYPOTHESIS_TEMPLATE = "This example is {}.";

/** The zero_shot family. */
export const zeroShotInfo = defineFamily("zero_shot", {
  lora: false,
  int8Probe: false,
  io: { inputs: ["text"], outputs: ["classifications"] },
  graphs: textGraph(["logits"]),
  detect: {
    // The labels must name an entailment class (and a contradiction one, or none).
    configure: (ctx, _graphs, out) =>
      configureId2label(ctx, out, (labels) => {
        try {
          nliHeads(labels);
        } catch (err) {
          throw new DetectionError(
            "config.json",
            "id2label",
            (err as Error).message,
            sayIt("family", '"reranker"'),
          );
        }
      }),
  },
  extract: {
    options: ["hypothesis_template", "multi_label"],
    plan(served, p, c) {
      const labels = candidateLabels(served, p);
      const raw = c.options.hypothesis_template ??
        served.config.family_options.hypothesis_template ??
        DEFAULT_HYPOTHESIS_TEMPLATE;
      const template = checkLabel(raw, "options.hypothesis_template", MAX_TEMPLATE_LENGTH);
      if (template.split("{}").length !== 2) {
        throw invalidInput(
          "options.hypothesis_template must hold '{}' exactly once (where the label goes), " +
            `e.g. "${DEFAULT_HYPOTHESIS_TEMPLATE}"`,
        );
      }
      return {
        work: {
          op: "extract",
          labels,
          threshold: c.threshold,
          prompt: c.instruction,
          hypothesisTemplate: template,
          multiLabel: multiLabelOf(served, c.options),
        },
        outputs: ["classifications"],
      };
    },
  },
});
