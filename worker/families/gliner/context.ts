/**
 * What every stage of a GLiNER model's work shares: the loaded model, its settings and bounds,
 * and the prompt arithmetic (label prompts, the room they leave, window rows, relation prompts).
 * Prompts repeat across the items of a batch, so each is built once (`memoLast`).
 */
import type { TextModel } from "../text/base.ts";
import { memoLast } from "../text/memo.ts";
import type { ExtractBudget } from "../extract_budget.ts";
import type { GlinerSettings } from "./config.ts";
import type { GlinerLayout } from "./decode.ts";
import { type LabelPack, packLabels, type PassShape } from "./cost.ts";
import { buildRow, type GlinerRow, promptIds, type RowPrompt } from "./rows.ts";
import { planWindows } from "./windows.ts";
import { splitWords } from "./words.ts";

/** A label prompt ready for rows. */
export type ReadyPrompt = { prompt: RowPrompt; leadTokens: number };

/** A label prompt ready for rows, or why the labels cannot be used. */
export type PromptPlan = ReadyPrompt | { error: string };

/** The relation pass's instruction and the token budget of each of its label prompts. */
export interface RelationLead {
  leadIds: number[][];
  leadTokens: number;
  /** Most tokens of one relation prompt: half of what the instruction leaves. */
  budget: number;
}

/** Span-level exports take the spans as inputs; token-level ones (multitask) do not. */
function layoutOf(model: TextModel): GlinerLayout {
  return model.session.inputNames.includes("span_idx") ? "span" : "token";
}

/** A loaded GLiNER model with its settings, bounds and prompt arithmetic. */
export class GlinerContext {
  /** Items of one batch share their labels and instruction: build that prompt once. */
  readonly firstPass: (key: string) => PromptPlan;
  /** The prompt tokens a label must not contain (it would add or end a label). */
  readonly reserved: ReadonlySet<number>;
  readonly layout: GlinerLayout;

  constructor(
    readonly model: TextModel,
    readonly s: GlinerSettings,
    /** Most padded tokens in one ONNX run: a long text's windows are run in slices. */
    readonly tokenBudget: number,
    /** Bounds of one item's work. */
    readonly budget: ExtractBudget,
  ) {
    this.reserved = new Set([s.entId, s.sepId]);
    this.layout = layoutOf(model);
    this.firstPass = memoLast((key) => {
      const [lead, ...labels] = JSON.parse(key) as string[];
      return this.plan(labels, lead);
    });
  }

  /** The first label that holds a prompt token, as an error message (one check per batch). */
  readonly badLabel = memoLast((key): string | undefined => {
    for (const label of JSON.parse(key) as string[]) {
      const bad = this.model.tokenizer.reservedTokenIn(label, this.reserved);
      if (bad) {
        return `label '${label}' contains the model's special token '${bad}'; labels are plain text`;
      }
    }
    return undefined;
  });

  /** The relation pass's instruction, tokenised once per batch. */
  readonly relationLead = memoLast((lead): RelationLead => {
    const tok = this.model.tokenizer;
    const leadIds = splitWords(lead).map((w) => tok.bodyIds(w.text, tok.maxLength));
    const leadTokens = leadIds.reduce((n, w) => n + w.length, 0);
    const budget = Math.max(2, Math.floor((this.room(0) - leadTokens) / 2));
    return { leadIds, leadTokens, budget };
  });

  /** Tokens of `<> {relation}` per relation type (the part of a relation label past its head). */
  readonly relationTokens = memoLast((key): number[] =>
    (JSON.parse(key) as string[]).map((r) =>
      this.model.tokenizer.bodyIds(`<> ${r}`, this.model.tokenizer.maxLength).length
    )
  );

  /** Words and tokens of a label prompt plus lead words, checked against the model's limits. */
  plan(labels: readonly string[], lead: string, labelOffset = 0): PromptPlan {
    const tok = this.model.tokenizer;
    const bad = this.badLabel(JSON.stringify(labels));
    if (bad) return { error: bad };
    const ids = promptIds(tok, labels, this.s.entId, this.s.sepId);
    const leadIds = splitWords(lead).map((w) => tok.bodyIds(w.text, tok.maxLength));
    const leadTokens = leadIds.reduce((n, w) => n + w.length, 0);
    const room = this.room(ids.length);
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
  room(promptTokens: number): number {
    const tok = this.model.tokenizer;
    return tok.maxLength - tok.template.prefix.length - tok.template.suffix.length - promptTokens;
  }

  /** The row arithmetic of a pass whose rows start with `lead` (cost.ts). */
  shape(lead: { leadIds: readonly (readonly number[])[]; leadTokens: number }): PassShape {
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

  /** Window rows of a text under one prompt. */
  rows(wordIds: readonly number[][], plan: ReadyPrompt): GlinerRow[] {
    const room = this.room(plan.prompt.ids.length);
    const lead = plan.prompt.leadIds.length;
    const windows = planWindows(
      wordIds.map((ids) => ids.length),
      this.s.maxWords - lead,
      room - plan.leadTokens,
      this.s.maxWidth - 1,
    );
    return windows.map((w) => buildRow(this.model.tokenizer, plan.prompt, wordIds, w, room));
  }

  /**
   * Split generated labels into prompts that leave at least half of the model's tokens (after
   * the instruction) for text; each prompt is read with every window of the text. `cache` holds
   * label tokens already computed.
   */
  chunks(
    labels: readonly string[],
    lead: RelationLead,
    cache: Map<string, number[]>,
  ): ReadyPrompt[] {
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
}
