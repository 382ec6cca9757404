/**
 * Running GLiNER rows: token-budgeted ONNX runs whose logits become span candidates per item
 * (each label keeps its best spans only, `top_spans.ts`), and the first pass that turns them
 * into entities and schema-field spans. An item whose client left stops at its next ONNX run.
 */
import type { ItemOutput, PreparedItem, RunResult, WorkParams } from "../types.ts";
import { outputF32, runTimed } from "../onnx_session.ts";
import { assertFinite } from "../finite.ts";
import { planSubBatches } from "../../scheduler/sub_batches.ts";
import type { GlinerContext } from "./context.ts";
import {
  collectSpans,
  greedyFlat,
  greedyPerLabel,
  type SpanCandidate,
  toEntities,
} from "./decode.ts";
import { glinerFeeds } from "./feeds.ts";
import type { GlinerItem } from "./prepare.ts";
import type { GlinerRow } from "./rows.ts";
import { type SpanSink, TopSpans } from "./top_spans.ts";

/** A row waiting for the model, with the position of its item in the group. */
export interface RowRef extends PreparedItem {
  row: GlinerRow;
}

/**
 * Run rows in token-budgeted slices; spans found go to `found[row's item]`. Rows of items whose
 * client went away (`gone`) are dropped from every slice not yet run.
 */
export async function runRows(
  g: GlinerContext,
  refs: RowRef[],
  threshold: number,
  found: SpanSink[],
  gone: (i: number) => boolean,
): Promise<{ inferenceMs: number; postprocessingMs: number }> {
  refs.sort((a, b) => a.length - b.length);
  let inferenceMs = 0;
  let postprocessingMs = 0;
  for (const planned of planSubBatches(refs, g.tokenBudget)) {
    const slice = planned.filter((r) => !gone(r.index));
    if (slice.length === 0) continue;
    const rows = slice.map((r) => r.row);
    const feeds = glinerFeeds(g.model.session, rows, g.s.maxWidth);
    const { out, ms } = await runTimed(g.model.session, feeds);
    inferenceMs += ms;
    const t0 = performance.now();
    const { data, dims } = outputF32(out, ["logits"]);
    checkDims(g, dims, rows);
    // A NaN logit would fall below any threshold: an empty answer instead of an error.
    assertFinite(data, "logits");
    slice.forEach((r, b) =>
      collectSpans(
        g.layout,
        data,
        dims,
        b,
        r.row,
        g.s.maxWidth,
        threshold,
        found[r.index],
      )
    );
    postprocessingMs += performance.now() - t0;
  }
  return { inferenceMs, postprocessingMs };
}

function checkDims(g: GlinerContext, dims: readonly number[], rows: readonly GlinerRow[]): void {
  const labels = Math.max(...rows.map((r) => r.labels));
  const ok = dims.length === 4 && dims[3] === labels &&
    (g.layout === "span" ? dims[2] === g.s.maxWidth : dims[0] === 3);
  if (!ok) {
    const want = g.layout === "span"
      ? `[B, W, ${g.s.maxWidth}, ${labels}]`
      : `[3, B, W, ${labels}]`;
    throw new Error(`GLiNER logits [${dims}] do not match the expected ${want}`);
  }
}

/** The first pass: entities of the request's types, and the spans of schema fields. */
export async function entityPass(
  g: GlinerContext,
  group: GlinerItem[],
  params: WorkParams,
  threshold: number,
  gone: (i: number) => boolean,
): Promise<RunResult> {
  const found = group.map(() => new TopSpans(g.budget.maxSpansPerLabel));
  const refs = group.flatMap((item, i) =>
    item.rows.map((row): RowRef => ({ index: i, length: row.ids.length, row }))
  );
  const timing = await runRows(g, refs, threshold, found, gone);
  const t0 = performance.now();
  const entityLabels = params.entityLabels ?? params.labels ?? [];
  const fieldLabels = params.fieldLabels ?? [];
  const outputs: ItemOutput[] = group.map((item, i) => {
    if (gone(i)) return { tokens: item.length };
    const n = entityLabels.length;
    const spans = found[i].spans();
    const entitySpans = greedyFlat(spans.filter((s) => s.label < n), item.words.length);
    const out: ItemOutput = {
      entities: toEntities(entitySpans, item.words, entityLabels, item.text),
      tokens: item.length,
    };
    if (fieldLabels.length > 0) {
      const fields = spans.filter((s) => s.label >= n).map((s) => ({
        ...s,
        label: s.label - n,
      }));
      out.fieldSpans = greedyPerLabel(fields, item.words.length, fieldLabels.length).map((list) =>
        list.map((s) => ({
          text: spanText(item, s),
          score: s.score,
          start: item.words[s.start].start,
        }))
      );
    }
    return out;
  });
  timing.postprocessingMs += performance.now() - t0;
  return { outputs, ...timing };
}

/** The text a span covers. */
export function spanText(item: GlinerItem, s: SpanCandidate): string {
  return item.text.slice(item.words[s.start].start, item.words[s.end].end);
}
