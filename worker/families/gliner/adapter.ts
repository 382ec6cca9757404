/**
 * GLiNER span NER family: the request's labels are put before the text as a prompt, the model
 * scores spans of up to `max_width` words against every label, and the best non-overlapping spans
 * above the threshold become entities. Texts longer than `max_len` words (or than the model's
 * token limit) are read in overlapping windows whose spans are merged. The same reading serves
 * structured data (spans per schema field, `fieldLabels`) and, on multitask models, relations
 * (a second pass prompted with `"{head} <> {relation}"` labels, see `gliner/relations.ts`).
 *
 * What an item costs is known once it is tokenised (`gliner/cost.ts`): every window under every
 * prompt. An item over `SVC_MAX_EXTRACT_ITEM_TOKENS` (its relation pass counted for the most heads
 * it can have) is refused before its batch runs; each label keeps its best spans only
 * (`gliner/top_spans.ts`); an item whose client left stops at its next ONNX run.
 */
import type {
  AdapterContext,
  ModelAdapter,
  RunControl,
  RunResult,
  WorkItem,
  WorkParams,
} from "../types.ts";
import { loadTextModel } from "../text/base.ts";
import { DEFAULT_EXTRACT_BUDGET } from "../extract_budget.ts";
import { loadGlinerSettings } from "./config.ts";
import { GlinerContext } from "./context.ts";
import { type GlinerItem, prepareItem } from "./prepare.ts";
import { relationPass } from "./relation_pass.ts";
import { entityPass } from "./span_pass.ts";

/** Build the GLiNER adapter. */
export async function createGlinerAdapter(ctx: AdapterContext): Promise<ModelAdapter<GlinerItem>> {
  const model = await loadTextModel(ctx);
  const settings = await loadGlinerSettings(ctx, model.tokenizer);
  return new GlinerAdapter(
    new GlinerContext(
      model,
      settings,
      ctx.runTokenBudget,
      ctx.extractBudget ?? DEFAULT_EXTRACT_BUDGET,
    ),
  );
}

/** The stages in order: prepare (`prepare.ts`), the entity pass, then any relation pass. */
class GlinerAdapter implements ModelAdapter<GlinerItem> {
  constructor(private readonly g: GlinerContext) {}

  prepare(item: WorkItem, index: number, params: WorkParams): GlinerItem {
    return prepareItem(this.g, item, index, params);
  }

  async run(group: GlinerItem[], params: WorkParams, control?: RunControl): Promise<RunResult> {
    const threshold = params.threshold ?? this.g.s.threshold;
    const gone = (i: number) => control?.gone(group[i].index) ?? false;
    const { outputs, ...timing } = await entityPass(this.g, group, params, threshold, gone);
    if (params.entityLabels && params.labels) {
      const more = await relationPass(
        this.g,
        group,
        outputs,
        params.labels,
        params,
        threshold,
        gone,
      );
      timing.inferenceMs += more.inferenceMs;
      timing.postprocessingMs += more.postprocessingMs;
    }
    return { outputs, ...timing };
  }

  async dispose(): Promise<void> {
    await this.g.model.session.session.release();
  }
}
