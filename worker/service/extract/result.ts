/**
 * One extract result from the thread's output for an item, as the plan says. Every result
 * carries `entities`, `relations`, `classifications` and `objects` (empty when the model fills
 * none: the SIE clients read all four on every result), and `data` when a schema was sent.
 */
import type { ExtractResult } from "@svc/shared/schemas/extract";
import type { ItemOutput } from "../../families/types.ts";
import type { ExtractPlan } from "./plan.ts";
import { withCodePointOffsets } from "./offsets.ts";
import { fillData } from "./fill.ts";
import { answeredId } from "../inputs.ts";

/** Build the ExtractResult of the item at `index`: its id, the four lists, and planned `data`. */
export function extractResult(
  plan: ExtractPlan,
  out: ItemOutput,
  text: string,
  id: string | undefined,
  index: number,
): ExtractResult {
  const result: ExtractResult = {
    id: answeredId(id, index),
    entities: [],
    relations: [],
    classifications: [],
    objects: [],
  };
  for (const list of plan.outputs) {
    switch (list) {
      case "entities":
        result.entities = withCodePointOffsets(text, out.entities ?? []);
        break;
      case "relations":
        result.relations = out.relations ?? [];
        break;
      case "objects":
        result.objects = out.objects ?? [];
        break;
      case "classifications":
        result.classifications = out.classifications ?? [];
        break;
      case "data":
        result.data = plan.schema ? fillData(plan.schema, out.fieldSpans ?? []) : {};
        break;
    }
  }
  return result;
}
