/**
 * The cost model of GLiNER reading: how many tokens the model reads for a text under a set of
 * label prompts. Each prompt is read with every window of the text, and the longer the prompt the
 * less text a window holds, so the cost is about prompts × (text tokens / room) × model length.
 * The same arithmetic as the rows the adapter builds (windows.ts, rows.ts), on counts only.
 */
import { planWindows } from "./windows.ts";

/** What decides the rows of one pass besides its prompts. */
export interface PassShape {
  /** Tokens the model reads at most (`max_sequence_length`). */
  maxLength: number;
  /** Template tokens around every row (`[CLS]`, `[SEP]`). */
  templateTokens: number;
  /** Words per window (`max_len`). */
  maxWords: number;
  /** Words shared by consecutive windows (`max_width - 1`). */
  overlap: number;
  /** Instruction words read before the text of every window, and their tokens. */
  leadWords: number;
  leadTokens: number;
}

/** A prompt of consecutive labels: the first one's index, how many, and its tokens. */
export interface LabelPack {
  first: number;
  count: number;
  tokens: number;
}

/**
 * Pack labels of `sizes` tokens each (their `<<ENT>>` included) into prompts of at most `budget`
 * tokens with the closing `<<SEP>>`; a label too long to share a prompt gets one of its own.
 */
export function packLabels(sizes: readonly number[], budget: number): LabelPack[] {
  const packs: LabelPack[] = [];
  let first = 0;
  let tokens = 0;
  sizes.forEach((size, i) => {
    if (i > first && tokens + size + 1 > budget) {
      packs.push({ first, count: i - first, tokens: tokens + 1 });
      first = i;
      tokens = 0;
    }
    tokens += size;
  });
  if (sizes.length > first) packs.push({ first, count: sizes.length - first, tokens: tokens + 1 });
  return packs;
}

/** Tokens of one row: template, prompt, lead words, then window words cut to the row's room. */
export function rowTokens(
  shape: PassShape,
  promptTokens: number,
  windowTokens: number,
): number {
  const room = shape.maxLength - shape.templateTokens - promptTokens;
  const body = shape.leadTokens + Math.min(Math.max(0, room - shape.leadTokens), windowTokens);
  return shape.templateTokens + promptTokens + body;
}

/**
 * Tokens the model reads for a text of `wordTokens` (tokens of each word) under prompts of
 * `promptTokens` each: every window of the text with every prompt. Linear in words per distinct
 * prompt length.
 */
export function passTokens(
  wordTokens: readonly number[],
  promptTokens: readonly number[],
  shape: PassShape,
): { tokens: number; rows: number } {
  const byPrompt = new Map<number, { tokens: number; rows: number }>();
  let tokens = 0;
  let rows = 0;
  for (const p of promptTokens) {
    let cost = byPrompt.get(p);
    if (!cost) {
      const room = shape.maxLength - shape.templateTokens - p;
      const windows = planWindows(
        wordTokens,
        shape.maxWords - shape.leadWords,
        room - shape.leadTokens,
        shape.overlap,
      );
      cost = { tokens: 0, rows: windows.length };
      for (const w of windows) {
        let t = 0;
        for (let j = w.start; j < w.end; j++) t += wordTokens[j];
        cost.tokens += rowTokens(shape, p, t);
      }
      byPrompt.set(p, cost);
    }
    tokens += cost.tokens;
    rows += cost.rows;
  }
  return { tokens, rows };
}
