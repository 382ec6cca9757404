/**
 * GLiNER span NER family: the request's labels are put before the text as a prompt, the model
 * scores spans of up to `max_width` words against every label, and the best non-overlapping spans
 * above the threshold become entities. Texts longer than `max_len` words (or than the model's
 * token limit) are read in overlapping windows whose spans are merged. The same reading serves
 * structured data (spans per schema field, `fieldLabels`) and, on multitask models, relations
 * (a second pass prompted with `"{head} <> {relation}"` labels, see `gliner/relations.ts`).
 */
import type {
  AdapterContext,
  ItemOutput,
  ModelAdapter,
  PreparedItem,
  RunResult,
  WorkItem,
  WorkParams,
} from "./types.ts";
import { outputF32, runTimed } from "./onnx_session.ts";
import { loadTextModel, type TextModel } from "./text/base.ts";
import { planSubBatches } from "../scheduler/sub_batches.ts";
import { type GlinerSettings, loadGlinerSettings } from "./gliner/config.ts";
import { splitWords, type Word } from "./gliner/words.ts";
import { planWindows } from "./gliner/windows.ts";
import { buildRow, type GlinerRow, promptIds, type RowPrompt } from "./gliner/rows.ts";
import { memoLast } from "./text/memo.ts";
import { glinerFeeds } from "./gliner/feeds.ts";
import {
  collectSpans,
  type GlinerLayout,
  greedyFlat,
  greedyPerLabel,
  type SpanCandidate,
  toEntities,
} from "./gliner/decode.ts";
import {
  assembleRelations,
  MAX_RELATION_HEADS,
  relationHeads,
  relationLabels,
} from "./gliner/relations.ts";

/** An item split into words and window rows; `length` counts the tokens of all its rows. */
interface GlinerItem extends PreparedItem {
  text: string;
  words: Word[];
  /** Sub-word ids of each word (the relation pass builds new rows from them). */
  wordIds: number[][];
  rows: GlinerRow[];
  /** Relation heads the client named (else the first pass's entities are the heads). */
  heads?: string[];
}

/** A row waiting for the model, with the position of its item in the group. */
interface RowRef extends PreparedItem {
  row: GlinerRow;
}

/** A label prompt ready for rows, or why the labels cannot be used. */
type PromptPlan = { prompt: RowPrompt; leadTokens: number } | { error: string };

/** Build the GLiNER adapter. */
export async function createGlinerAdapter(ctx: AdapterContext): Promise<ModelAdapter<GlinerItem>> {
  const model = await loadTextModel(ctx);
  const settings = await loadGlinerSettings(ctx, model.tokenizer);
  return new GlinerAdapter(model, settings, ctx.runTokenBudget);
}

/** Span-level exports take the spans as inputs; token-level ones (multitask) do not. */
function layoutOf(model: TextModel): GlinerLayout {
  return model.session.inputNames.includes("span_idx") ? "span" : "token";
}

class GlinerAdapter implements ModelAdapter<GlinerItem> {
  /** Items of one batch share their labels and instruction: build that prompt once. */
  readonly #firstPass: (key: string) => PromptPlan;
  /** The prompt tokens a label must not contain (it would add or end a label). */
  readonly #reserved: ReadonlySet<number>;
  readonly #layout: GlinerLayout;

  constructor(
    private readonly model: TextModel,
    private readonly s: GlinerSettings,
    /** Most padded tokens in one ONNX run: a long text's windows are run in slices. */
    private readonly tokenBudget: number,
  ) {
    this.#reserved = new Set([s.entId, s.sepId]);
    this.#layout = layoutOf(model);
    this.#firstPass = memoLast((key) => {
      const [lead, ...labels] = JSON.parse(key) as string[];
      return this.#plan(labels, lead);
    });
  }

  /** The first label that holds a prompt token, as an error message (one check per batch). */
  readonly #badLabel = memoLast((key): string | undefined => {
    for (const label of JSON.parse(key) as string[]) {
      const bad = this.model.tokenizer.reservedTokenIn(label, this.#reserved);
      if (bad) {
        return `label '${label}' contains the model's special token '${bad}'; labels are plain text`;
      }
    }
    return undefined;
  });

  /** Words and tokens of a label prompt plus lead words, checked against the model's limits. */
  #plan(labels: readonly string[], lead: string, labelOffset = 0): PromptPlan {
    const tok = this.model.tokenizer;
    const bad = this.#badLabel(JSON.stringify(labels));
    if (bad) return { error: bad };
    const ids = promptIds(tok, labels, this.s.entId, this.s.sepId);
    const leadIds = splitWords(lead).map((w) => tok.bodyIds(w.text, tok.maxLength));
    const leadTokens = leadIds.reduce((n, w) => n + w.length, 0);
    const room = this.#room(ids.length);
    if (room < 1) {
      return {
        error: `the labels take ${ids.length} tokens; the model reads at most ${tok.maxLength}`,
      };
    }
    // The instruction is read before every window: it may take at most half of one.
    if (leadIds.length > this.s.maxWords / 2 || leadTokens > room / 2) {
      return {
        error: `the instruction takes ${leadIds.length} words (${leadTokens} tokens); ` +
          `with these labels at most ${Math.floor(this.s.maxWords / 2)} words and ` +
          `${Math.floor(room / 2)} tokens fit`,
      };
    }
    return { prompt: { ids, labels: labels.length, labelOffset, leadIds }, leadTokens };
  }

  /** Tokens left for lead words and text beside a label prompt of `promptTokens`. */
  #room(promptTokens: number): number {
    const tok = this.model.tokenizer;
    return tok.maxLength - tok.template.prefix.length - tok.template.suffix.length - promptTokens;
  }

  /** Window rows of a text under one prompt. */
  #rows(wordIds: readonly number[][], plan: { prompt: RowPrompt; leadTokens: number }) {
    const room = this.#room(plan.prompt.ids.length);
    const lead = plan.prompt.leadIds.length;
    const windows = planWindows(
      wordIds.map((ids) => ids.length),
      this.s.maxWords - lead,
      room - plan.leadTokens,
      this.s.maxWidth - 1,
    );
    return windows.map((w) => buildRow(this.model.tokenizer, plan.prompt, wordIds, w, room));
  }

  prepare(item: WorkItem, index: number, params: WorkParams): GlinerItem {
    const tok = this.model.tokenizer;
    const text = item.text ?? "";
    const fail = (message: string): GlinerItem => ({
      index,
      length: 0,
      text,
      words: [],
      wordIds: [],
      rows: [],
      error: { code: "INVALID_INPUT", message },
    });
    const labels = firstPassLabels(params);
    if (labels.length === 0) return fail("GLiNER models need params.labels (entity types)");
    // In relation mode the instruction belongs to the relation pass.
    const lead = params.entityLabels ? "" : params.prompt ?? "";
    const plan = this.#firstPass(JSON.stringify([lead, ...labels]));
    if ("error" in plan) return fail(plan.error);
    if (params.entityLabels) {
      // Relation types go into the second pass's labels: check them now.
      const bad = this.#badLabel(JSON.stringify(params.labels ?? []));
      if (bad) return fail(bad);
    }
    const words = splitWords(text);
    const room = this.#room(plan.prompt.ids.length);
    // Texts repeat words a lot: tokenise each distinct word once.
    const cache = new Map<string, number[]>();
    const wordIds = words.map((w) => {
      let ids = cache.get(w.text);
      if (!ids) cache.set(w.text, ids = tok.bodyIds(w.text, room));
      return ids;
    });
    const rows = this.#rows(wordIds, plan);
    const length = rows.reduce((n, r) => n + r.ids.length, 0);
    return { index, length, text, words, wordIds, rows, heads: item.heads };
  }

  /** Run rows in token-budgeted slices; spans found go to `found[row's item]`. */
  async #runRows(
    refs: RowRef[],
    threshold: number,
    found: SpanCandidate[][],
  ): Promise<{ inferenceMs: number; postprocessingMs: number }> {
    refs.sort((a, b) => a.length - b.length);
    let inferenceMs = 0;
    let postprocessingMs = 0;
    for (const slice of planSubBatches(refs, this.tokenBudget)) {
      const rows = slice.map((r) => r.row);
      const feeds = glinerFeeds(this.model.session, rows, this.s.maxWidth);
      const { out, ms } = await runTimed(this.model.session, feeds);
      inferenceMs += ms;
      const t0 = performance.now();
      const { data, dims } = outputF32(out, ["logits"]);
      this.#checkDims(dims, rows);
      slice.forEach((r, b) =>
        collectSpans(
          this.#layout,
          data,
          dims,
          b,
          r.row,
          this.s.maxWidth,
          threshold,
          found[r.index],
        )
      );
      postprocessingMs += performance.now() - t0;
    }
    return { inferenceMs, postprocessingMs };
  }

  #checkDims(dims: readonly number[], rows: readonly GlinerRow[]): void {
    const labels = Math.max(...rows.map((r) => r.labels));
    const ok = dims.length === 4 && dims[3] === labels &&
      (this.#layout === "span" ? dims[2] === this.s.maxWidth : dims[0] === 3);
    if (!ok) {
      const want = this.#layout === "span"
        ? `[B, W, ${this.s.maxWidth}, ${labels}]`
        : `[3, B, W, ${labels}]`;
      throw new Error(`GLiNER logits [${dims}] do not match the expected ${want}`);
    }
  }

  async run(group: GlinerItem[], params: WorkParams): Promise<RunResult> {
    const threshold = params.threshold ?? this.s.threshold;
    const found: SpanCandidate[][] = group.map(() => []);
    const refs = group.flatMap((item, g) =>
      item.rows.map((row): RowRef => ({ index: g, length: row.ids.length, row }))
    );
    const timing = await this.#runRows(refs, threshold, found);
    const t0 = performance.now();
    const entityLabels = params.entityLabels ?? params.labels ?? [];
    const fieldLabels = params.fieldLabels ?? [];
    const outputs: ItemOutput[] = group.map((item, g) => {
      const n = entityLabels.length;
      const entitySpans = greedyFlat(found[g].filter((s) => s.label < n), item.words.length);
      const out: ItemOutput = {
        entities: toEntities(entitySpans, item.words, entityLabels, item.text),
        tokens: item.length,
      };
      if (fieldLabels.length > 0) {
        const fields = found[g].filter((s) => s.label >= n).map((s) => ({
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
    if (params.entityLabels && params.labels) {
      const more = await this.#relations(group, outputs, params.labels, params, threshold);
      timing.inferenceMs += more.inferenceMs;
      timing.postprocessingMs += more.postprocessingMs;
    }
    return { outputs, ...timing };
  }

  /** The relation pass: heads × relation types as labels, tails are the spans found. */
  async #relations(
    group: GlinerItem[],
    outputs: ItemOutput[],
    relations: readonly string[],
    params: WorkParams,
    threshold: number,
  ): Promise<{ inferenceMs: number; postprocessingMs: number }> {
    const t0 = performance.now();
    const tok = this.model.tokenizer;
    const usable = (text: string) => tok.reservedTokenIn(text, this.#reserved) === undefined;
    const heads = group.map((item, g) =>
      item.heads
        ? item.heads.filter(usable).slice(0, MAX_RELATION_HEADS)
        : relationHeads(outputs[g].entities ?? [], usable)
    );
    const lead = params.prompt ?? this.s.relationPrompt;
    const refs: RowRef[] = [];
    group.forEach((item, g) => {
      if (heads[g].length === 0) return;
      for (const plan of this.#chunks(relationLabels(heads[g], relations), lead)) {
        for (const row of this.#rows(item.wordIds, plan)) {
          refs.push({ index: g, length: row.ids.length, row });
        }
      }
    });
    const found: SpanCandidate[][] = group.map(() => []);
    const prepMs = performance.now() - t0;
    const timing = await this.#runRows(refs, threshold, found);
    const t1 = performance.now();
    group.forEach((item, g) => {
      const spans = greedyFlat(found[g], item.words.length);
      outputs[g].relations = heads[g].length === 0
        ? []
        : assembleRelations(spans, (s) => spanText(item, s), heads[g], relations);
    });
    timing.postprocessingMs += prepMs + performance.now() - t1;
    return timing;
  }

  /**
   * Split generated labels into prompts that leave at least half of the model's tokens (after
   * the instruction) for text; each prompt is read with every window of the text.
   */
  #chunks(labels: readonly string[], lead: string): { prompt: RowPrompt; leadTokens: number }[] {
    const tok = this.model.tokenizer;
    const leadIds = splitWords(lead).map((w) => tok.bodyIds(w.text, tok.maxLength));
    const leadTokens = leadIds.reduce((n, w) => n + w.length, 0);
    const budget = Math.max(2, Math.floor((this.#room(0) - leadTokens) / 2));
    const plans: { prompt: RowPrompt; leadTokens: number }[] = [];
    let ids: number[] = [];
    let count = 0;
    const flush = (offset: number) => {
      if (count === 0) return;
      ids.push(this.s.sepId);
      plans.push({ prompt: { ids, labels: count, labelOffset: offset, leadIds }, leadTokens });
      ids = [];
      count = 0;
    };
    labels.forEach((label, i) => {
      const labelIds = [this.s.entId, ...tok.bodyIds(label, budget - 2)];
      if (count > 0 && ids.length + labelIds.length + 1 > budget) flush(i - count);
      ids.push(...labelIds);
      count++;
    });
    flush(labels.length - count);
    return plans;
  }

  async dispose(): Promise<void> {
    await this.model.session.session.release();
  }
}

/** Labels of the first pass: entity types (or a relation model's entity labels), then fields. */
function firstPassLabels(params: WorkParams): string[] {
  return [...(params.entityLabels ?? params.labels ?? []), ...(params.fieldLabels ?? [])];
}

/** The text a span covers. */
function spanText(item: GlinerItem, s: SpanCandidate): string {
  return item.text.slice(item.words[s.start].start, item.words[s.end].end);
}
