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
  ItemOutput,
  ModelAdapter,
  PreparedItem,
  RunControl,
  RunResult,
  WorkItem,
  WorkParams,
} from "./types.ts";
import { outputF32, runTimed } from "./onnx_session.ts";
import { assertFinite } from "./finite.ts";
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
import { type LabelPack, packLabels, type PassShape, passTokens } from "./gliner/cost.ts";
import { type SpanSink, TopSpans } from "./gliner/top_spans.ts";
import { DEFAULT_EXTRACT_BUDGET, type ExtractBudget, itemOverBudget } from "./extract_budget.ts";

/**
 * Tokens a head entity is assumed to take when a relation pass is costed before the heads are
 * known (most entity mentions are one or two words); a pass whose real heads are longer is cut
 * to the bound by dropping its lowest-scoring heads.
 */
const ASSUMED_HEAD_TOKENS = 2;

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

/** The relation pass's instruction and the token budget of each of its label prompts. */
interface RelationLead {
  leadIds: number[][];
  leadTokens: number;
  /** Most tokens of one relation prompt: half of what the instruction leaves. */
  budget: number;
}

/** Build the GLiNER adapter. */
export async function createGlinerAdapter(ctx: AdapterContext): Promise<ModelAdapter<GlinerItem>> {
  const model = await loadTextModel(ctx);
  const settings = await loadGlinerSettings(ctx, model.tokenizer);
  return new GlinerAdapter(
    model,
    settings,
    ctx.runTokenBudget,
    ctx.extractBudget ?? DEFAULT_EXTRACT_BUDGET,
  );
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
    /** Bounds of one item's work. */
    private readonly budget: ExtractBudget,
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

  /** The relation pass's instruction, tokenised once per batch. */
  readonly #relationLead = memoLast((lead): RelationLead => {
    const tok = this.model.tokenizer;
    const leadIds = splitWords(lead).map((w) => tok.bodyIds(w.text, tok.maxLength));
    const leadTokens = leadIds.reduce((n, w) => n + w.length, 0);
    const budget = Math.max(2, Math.floor((this.#room(0) - leadTokens) / 2));
    return { leadIds, leadTokens, budget };
  });

  /** Tokens of `<> {relation}` per relation type (the part of a relation label past its head). */
  readonly #relationTokens = memoLast((key): number[] =>
    (JSON.parse(key) as string[]).map((r) =>
      this.model.tokenizer.bodyIds(`<> ${r}`, this.model.tokenizer.maxLength).length
    )
  );

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

  /** The row arithmetic of a pass whose rows start with `lead` (cost.ts). */
  #shape(lead: { leadIds: readonly (readonly number[])[]; leadTokens: number }): PassShape {
    const tok = this.model.tokenizer;
    return {
      maxLength: tok.maxLength,
      templateTokens: tok.template.prefix.length + tok.template.suffix.length,
      maxWords: this.s.maxWords,
      overlap: this.s.maxWidth - 1,
      leadWords: lead.leadIds.length,
      leadTokens: lead.leadTokens,
    };
  }

  /**
   * Tokens of an item's relation pass before its heads are known: the most heads it can have
   * (distinct entity texts, at most MAX_RELATION_HEADS), each assumed ASSUMED_HEAD_TOKENS long.
   */
  #relationEstimate(
    wordTokens: readonly number[],
    relations: readonly string[],
    lead: RelationLead,
  ): { tokens: number; heads: number; prompts: number; rows: number } {
    const heads = Math.min(MAX_RELATION_HEADS, wordTokens.length);
    const rel = this.#relationTokens(JSON.stringify(relations));
    // Relation-major like relationLabels: `<<ENT>>`, the head, then `<> {relation}`.
    const sizes = rel.flatMap((r) =>
      new Array<number>(heads).fill(1 + Math.min(ASSUMED_HEAD_TOKENS + r, lead.budget - 2))
    );
    const packs = packLabels(sizes, lead.budget);
    const cost = passTokens(wordTokens, packs.map((p) => p.tokens), this.#shape(lead));
    return { ...cost, heads, prompts: packs.length };
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
    const relations = params.entityLabels && params.labels ? params.labels : undefined;
    // An item that names its entities (mentions) needs no entity pass, unless schema fields are
    // read in that pass too.
    const named = relations && item.heads?.length && !params.fieldLabels?.length
      ? item.heads
      : undefined;
    const labels = firstPassLabels(params);
    if (!named && labels.length === 0) {
      return fail("GLiNER models need params.labels (entity types)");
    }
    // In relation mode the instruction belongs to the relation pass.
    const lead = params.entityLabels ? "" : params.prompt ?? "";
    const plan = named ? undefined : this.#firstPass(JSON.stringify([lead, ...labels]));
    if (plan && "error" in plan) return fail(plan.error);
    if (relations) {
      // Relation types go into the second pass's labels: check them now.
      const bad = this.#badLabel(JSON.stringify(relations));
      if (bad) return fail(bad);
    }
    const words = splitWords(text);
    const room = this.#room(plan ? plan.prompt.ids.length : 0);
    // Texts repeat words a lot: tokenise each distinct word once.
    const cache = new Map<string, number[]>();
    const wordIds = words.map((w) => {
      let ids = cache.get(w.text);
      if (!ids) cache.set(w.text, ids = tok.bodyIds(w.text, room));
      return ids;
    });
    const rows = plan ? this.#rows(wordIds, plan) : [];
    const length = rows.reduce((n, r) => n + r.ids.length, 0);
    let cost = length;
    let what = plan
      ? `${plural(rows.length, "window")} of ${plural(plan.prompt.labels, "label")}`
      : "";
    if (named && relations) {
      // The heads are known: the relation pass is costed exactly, and refused whole rather
      // than cut (the client named every one of these entities).
      const bad = this.#badLabel(JSON.stringify(named));
      if (bad) return fail(bad);
      const rel = this.#namedRelationCost(wordIds, named, relations, params);
      cost += rel.tokens;
      what = `${plural(named.length, "entity", "entities")} × ` +
        `${plural(relations.length, "relation type")} in ${plural(rel.prompts, "prompt")}, ` +
        `${plural(rel.rows, "window")} in all`;
    } else if (relations && rows.length > 0) {
      const lead = this.#relationLead(params.prompt ?? this.s.relationPrompt);
      const rel = this.#relationEstimate(wordIds.map((ids) => ids.length), relations, lead);
      cost += rel.tokens;
      what += ` for entities, then up to ${rel.heads} heads × ${relations.length} ` +
        `relation types in ${rel.prompts} prompts, ${rel.rows} windows in all`;
    }
    if (cost > this.budget.maxItemTokens) return fail(itemOverBudget(cost, this.budget, what));
    return { index, length, cost, text, words, wordIds, rows, heads: item.heads };
  }

  /** Tokens of the relation pass over the heads a client named: their prompts × the windows. */
  #namedRelationCost(
    wordIds: readonly number[][],
    heads: readonly string[],
    relations: readonly string[],
    params: WorkParams,
  ): { tokens: number; prompts: number; rows: number } {
    const lead = this.#relationLead(params.prompt ?? this.s.relationPrompt);
    const plans = this.#chunks(relationLabels(heads, relations), lead, new Map());
    const cost = passTokens(
      wordIds.map((ids) => ids.length),
      plans.map((p) => p.prompt.ids.length),
      this.#shape(lead),
    );
    return { ...cost, prompts: plans.length };
  }

  /**
   * Run rows in token-budgeted slices; spans found go to `found[row's item]`. Rows of items whose
   * client went away (`gone`) are dropped from every slice not yet run.
   */
  async #runRows(
    refs: RowRef[],
    threshold: number,
    found: SpanSink[],
    gone: (g: number) => boolean,
  ): Promise<{ inferenceMs: number; postprocessingMs: number }> {
    refs.sort((a, b) => a.length - b.length);
    let inferenceMs = 0;
    let postprocessingMs = 0;
    for (const planned of planSubBatches(refs, this.tokenBudget)) {
      const slice = planned.filter((r) => !gone(r.index));
      if (slice.length === 0) continue;
      const rows = slice.map((r) => r.row);
      const feeds = glinerFeeds(this.model.session, rows, this.s.maxWidth);
      const { out, ms } = await runTimed(this.model.session, feeds);
      inferenceMs += ms;
      const t0 = performance.now();
      const { data, dims } = outputF32(out, ["logits"]);
      this.#checkDims(dims, rows);
      // A NaN logit would fall below any threshold: an empty answer instead of an error.
      assertFinite(data, "logits");
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

  async run(group: GlinerItem[], params: WorkParams, control?: RunControl): Promise<RunResult> {
    const threshold = params.threshold ?? this.s.threshold;
    const gone = (g: number) => control?.gone(group[g].index) ?? false;
    const found = group.map(() => new TopSpans(this.budget.maxSpansPerLabel));
    const refs = group.flatMap((item, g) =>
      item.rows.map((row): RowRef => ({ index: g, length: row.ids.length, row }))
    );
    const timing = await this.#runRows(refs, threshold, found, gone);
    const t0 = performance.now();
    const entityLabels = params.entityLabels ?? params.labels ?? [];
    const fieldLabels = params.fieldLabels ?? [];
    const outputs: ItemOutput[] = group.map((item, g) => {
      if (gone(g)) return { tokens: item.length };
      const n = entityLabels.length;
      const spans = found[g].spans();
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
    if (params.entityLabels && params.labels) {
      const more = await this.#relations(group, outputs, params.labels, params, threshold, gone);
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
    gone: (g: number) => boolean,
  ): Promise<{ inferenceMs: number; postprocessingMs: number }> {
    const t0 = performance.now();
    const lead = this.#relationLead(params.prompt ?? this.s.relationPrompt);
    const refs: RowRef[] = [];
    const heads = group.map((item, g): string[] => {
      if (gone(g)) return [];
      const { heads, plans } = this.#relationPrompts(item, outputs[g], relations, lead);
      for (const plan of plans) {
        for (const row of this.#rows(item.wordIds, plan)) {
          refs.push({ index: g, length: row.ids.length, row });
          // The item's usage counts every token the model reads for it.
          outputs[g].tokens += row.ids.length;
        }
      }
      return heads;
    });
    const found = group.map(() => new TopSpans(this.budget.maxSpansPerLabel));
    const prepMs = performance.now() - t0;
    const timing = await this.#runRows(refs, threshold, found, gone);
    const t1 = performance.now();
    group.forEach((item, g) => {
      if (gone(g)) return;
      // The entities a client named are the only tails; spans of other text never compete.
      const named = item.heads ? new Set(item.heads) : undefined;
      const candidates = named
        ? found[g].spans().filter((s) => named.has(spanText(item, s)))
        : found[g].spans();
      const spans = greedyFlat(candidates, item.words.length);
      outputs[g].relations = heads[g].length === 0
        ? []
        : assembleRelations(spans, (s) => spanText(item, s), heads[g], relations);
    });
    timing.postprocessingMs += prepMs + performance.now() - t1;
    return timing;
  }

  /**
   * An item's heads and relation prompts. Its heads are its distinct entity texts (the best
   * MAX_RELATION_HEADS); when their prompts would take the item past its token bound (heads longer
   * than prepare assumed), the lowest-scoring heads are dropped until the pass fits.
   */
  #relationPrompts(
    item: GlinerItem,
    out: ItemOutput,
    relations: readonly string[],
    lead: RelationLead,
  ): { heads: string[]; plans: { prompt: RowPrompt; leadTokens: number }[] } {
    const tok = this.model.tokenizer;
    const usable = (text: string) => tok.reservedTokenIn(text, this.#reserved) === undefined;
    const labelIds = new Map<string, number[]>();
    const wordTokens = item.wordIds.map((ids) => ids.length);
    const shape = this.#shape(lead);
    for (let max = MAX_RELATION_HEADS; max > 0; max--) {
      // Heads the client named (item metadata) come first, else the first pass's entities.
      const heads = item.heads
        ? item.heads.filter(usable).slice(0, max)
        : relationHeads(out.entities ?? [], usable, max);
      if (heads.length === 0) break;
      const plans = this.#chunks(relationLabels(heads, relations), lead, labelIds);
      const cost = passTokens(wordTokens, plans.map((p) => p.prompt.ids.length), shape).tokens;
      if (item.length + cost <= this.budget.maxItemTokens) return { heads, plans };
    }
    return { heads: [], plans: [] };
  }

  /**
   * Split generated labels into prompts that leave at least half of the model's tokens (after
   * the instruction) for text; each prompt is read with every window of the text. `cache` holds
   * label tokens already computed.
   */
  #chunks(
    labels: readonly string[],
    lead: RelationLead,
    cache: Map<string, number[]>,
  ): { prompt: RowPrompt; leadTokens: number }[] {
    const tok = this.model.tokenizer;
    const labelIds = labels.map((label) => {
      let ids = cache.get(label);
      if (!ids) cache.set(label, ids = [this.s.entId, ...tok.bodyIds(label, lead.budget - 2)]);
      return ids;
    });
    return packLabels(labelIds.map((ids) => ids.length), lead.budget).map((p: LabelPack) => {
      const ids = labelIds.slice(p.first, p.first + p.count).flat();
      ids.push(this.s.sepId);
      return {
        prompt: { ids, labels: p.count, labelOffset: p.first, leadIds: lead.leadIds },
        leadTokens: lead.leadTokens,
      };
    });
  }

  async dispose(): Promise<void> {
    await this.model.session.session.release();
  }
}

/** Labels of the first pass: entity types (or a relation model's entity labels), then fields. */
function firstPassLabels(params: WorkParams): string[] {
  return [...(params.entityLabels ?? params.labels ?? []), ...(params.fieldLabels ?? [])];
}

/** `n thing` or `n things` (or `n {many}`). */
function plural(n: number, thing: string, many = `${thing}s`): string {
  return `${n} ${n === 1 ? thing : many}`;
}

/** The text a span covers. */
function spanText(item: GlinerItem, s: SpanCandidate): string {
  return item.text.slice(item.words[s.start].start, item.words[s.end].end);
}
