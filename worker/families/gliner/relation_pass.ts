/**
 * The relation pass of a GLiNER multitask model: prompted with `"{head} <> {relation}"` labels
 * (`relations.ts`), the spans it finds are the tails. Heads are the entities a client named, else
 * the first pass's; when their prompts would take an item past its token bound, the
 * lowest-scoring heads are dropped until the pass fits.
 */
import type { ItemOutput, WorkParams } from "../types.ts";
import type { GlinerContext, ReadyPrompt, RelationLead } from "./context.ts";
import { passTokens } from "./cost.ts";
import { greedyFlat } from "./decode.ts";
import type { GlinerItem } from "./prepare.ts";
import {
  assembleRelations,
  MAX_RELATION_HEADS,
  relationHeads,
  relationLabels,
} from "./relations.ts";
import { type RowRef, runRows, spanText } from "./span_pass.ts";
import { TopSpans } from "./top_spans.ts";

/** The relation pass: heads × relation types as labels, tails are the spans found. */
export async function relationPass(
  g: GlinerContext,
  group: GlinerItem[],
  outputs: ItemOutput[],
  relations: readonly string[],
  params: WorkParams,
  threshold: number,
  gone: (i: number) => boolean,
): Promise<{ inferenceMs: number; postprocessingMs: number }> {
  const t0 = performance.now();
  const lead = g.relationLead(params.prompt ?? g.s.relationPrompt);
  const refs: RowRef[] = [];
  const heads = group.map((item, i): string[] => {
    if (gone(i)) return [];
    const { heads, plans } = relationPrompts(g, item, outputs[i], relations, lead);
    for (const plan of plans) {
      for (const row of g.rows(item.wordIds, plan)) {
        refs.push({ index: i, length: row.ids.length, row });
        // The item's usage counts every token the model reads for it.
        outputs[i].tokens += row.ids.length;
      }
    }
    return heads;
  });
  const found = group.map(() => new TopSpans(g.budget.maxSpansPerLabel));
  const prepMs = performance.now() - t0;
  const timing = await runRows(g, refs, threshold, found, gone);
  const t1 = performance.now();
  group.forEach((item, i) => {
    if (gone(i)) return;
    // The entities a client named are the only tails; spans of other text never compete.
    const named = item.heads ? new Set(item.heads) : undefined;
    const candidates = named
      ? found[i].spans().filter((s) => named.has(spanText(item, s)))
      : found[i].spans();
    const spans = greedyFlat(candidates, item.words.length);
    outputs[i].relations = heads[i].length === 0
      ? []
      : assembleRelations(spans, (s) => spanText(item, s), heads[i], relations);
  });
  timing.postprocessingMs += prepMs + performance.now() - t1;
  return timing;
}

/**
 * An item's heads and relation prompts. Its heads are its distinct entity texts (the best
 * MAX_RELATION_HEADS); when their prompts would take the item past its token bound (heads longer
 * than prepare assumed), the lowest-scoring heads are dropped until the pass fits.
 */
function relationPrompts(
  g: GlinerContext,
  item: GlinerItem,
  out: ItemOutput,
  relations: readonly string[],
  lead: RelationLead,
): { heads: string[]; plans: ReadyPrompt[] } {
  const tok = g.model.tokenizer;
  const usable = (text: string) => tok.reservedTokenIn(text, g.reserved) === undefined;
  const labelIds = new Map<string, number[]>();
  const wordTokens = item.wordIds.map((ids) => ids.length);
  const shape = g.shape(lead);
  for (let max = MAX_RELATION_HEADS; max > 0; max--) {
    // Heads the client named (item metadata) come first, else the first pass's entities.
    const heads = item.heads
      ? item.heads.filter(usable).slice(0, max)
      : relationHeads(out.entities ?? [], usable, max);
    if (heads.length === 0) break;
    const plans = g.chunks(relationLabels(heads, relations), lead, labelIds);
    const cost = passTokens(wordTokens, plans.map((p) => p.prompt.ids.length), shape).tokens;
    if (item.length + cost <= g.budget.maxItemTokens) return { heads, plans };
  }
  return { heads: [], plans: [] };
}
