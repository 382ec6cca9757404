/**
 * What each family feeds a graph and reads from it, for `catalog:verify`: the inputs a family can
 * provide (a graph may declare fewer) and the outputs it reads (each group: one of these names
 * must be there). The output names are the adapters' own (`worker/families/output_names.ts`).
 */
import type { Family, ModelConfig } from "@svc/shared/catalog/schema";
import {
  COLBERT_OUTPUTS,
  DENSE_OUTPUTS,
  M3_HEAD_OUTPUTS,
  RERANKER_OUTPUTS,
  SPARSE_OUTPUTS,
} from "@svc/worker";

/** The I/O contract of one ONNX file of a family. */
export interface GraphContract {
  /** Catalog file role holding the graph (`model`, `vision_model`). */
  role: string;
  /** Inputs the family can feed; every declared graph input must be one of them. */
  feeds: readonly string[];
  /** Outputs the family reads: for each group, one of its names must be a graph output. */
  reads: readonly (readonly string[])[];
}

const TOKENS = ["input_ids", "attention_mask", "token_type_ids"];
const GLINER = [...TOKENS, "words_mask", "text_lengths", "span_idx", "span_mask"];

const TEXT_OUTPUTS: Partial<Record<Family, readonly (readonly string[])[]>> = {
  dense: [DENSE_OUTPUTS],
  static: [DENSE_OUTPUTS],
  sparse: [SPARSE_OUTPUTS],
  colbert: [COLBERT_OUTPUTS],
  reranker: [RERANKER_OUTPUTS],
  token_classification: [["logits"]],
  zero_shot: [["logits"]],
  gliclass: [["logits"]],
};

/** The graphs of an entry and what its family expects of each. */
export function graphContracts(config: ModelConfig): GraphContract[] {
  const f = config.family;
  const text = TEXT_OUTPUTS[f];
  if (text) return [{ role: "model", feeds: TOKENS, reads: text }];
  switch (f) {
    case "bge_m3":
      return [{
        role: "model",
        feeds: TOKENS,
        reads: config.outputs.filter((o) => o in M3_HEAD_OUTPUTS).map((o) =>
          M3_HEAD_OUTPUTS[o as keyof typeof M3_HEAD_OUTPUTS]
        ),
      }];
    case "gliner":
      return [{ role: "model", feeds: GLINER, reads: [["logits"]] }];
    case "clip":
      return [
        { role: "model", feeds: ["input_ids", "attention_mask"], reads: [["text_embeds"]] },
        { role: "vision_model", feeds: ["pixel_values"], reads: [["image_embeds"]] },
      ];
    case "detection":
      return [{
        role: "model",
        feeds: ["pixel_values", "pixel_mask"],
        reads: [["logits"], ["pred_boxes"]],
      }];
    case "zero_shot_detection":
      return [{
        role: "model",
        feeds: ["input_ids", "attention_mask", "pixel_values"],
        reads: [["logits"], ["pred_boxes"]],
      }];
    default:
      return [];
  }
}

/** Mismatches between a graph's declared names and a contract (empty when it fits). */
export function contractProblems(
  c: GraphContract,
  inputNames: readonly string[],
  outputNames: readonly string[],
): string[] {
  const problems: string[] = [];
  const extra = inputNames.filter((n) => !c.feeds.includes(n));
  if (extra.length > 0) {
    problems.push(
      `${c.role}: graph input(s) ${extra.join(", ")} are not fed by the family ` +
        `(it feeds: ${c.feeds.join(", ")})`,
    );
  }
  for (const group of c.reads) {
    if (!group.some((n) => outputNames.includes(n))) {
      problems.push(
        `${c.role}: the family reads output ${group.join(" or ")}; ` +
          `the graph has ${outputNames.join(", ") || "none"}`,
      );
    }
  }
  return problems;
}
