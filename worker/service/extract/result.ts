/** One extract result from the thread's output for an item, as the plan says. */
import type { ExtractResult } from "@svc/shared/schemas/extract";
import type { ItemOutput } from "../../families/types.ts";
import type { ExtractPlan } from "./plan.ts";
import { withCodePointOffsets } from "./offsets.ts";
import { fillData } from "./fill.ts";

/** Build the ExtractResult of one item: its id (when sent) and exactly the planned lists. */
export function extractResult(
  plan: ExtractPlan,
  out: ItemOutput,
  text: string,
  id: string | undefined,
): ExtractResult {
  const result: ExtractResult = id === undefined ? {} : { id };
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
