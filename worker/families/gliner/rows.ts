/** The token row of one window: `[CLS]`, label prompt, prompt words, the window's words, `[SEP]`. */
import type { TextTokenizer } from "../text/tokenizer.ts";
import type { WordWindow } from "./windows.ts";

/** One model row: the tokens of one window of one item. */
export interface GlinerRow {
  ids: number[];
  /** 0, except k (1-based within the row) on the first sub-token of the row's word k. */
  wordsMask: number[];
  /** Words in the row (`text_lengths`): the lead words, then the window's text words. */
  words: number;
  /** Words of the request's instruction put before the text; spans touching them are dropped. */
  lead: number;
  /** Index of the window's first text word in the whole text. */
  offset: number;
  /** Labels this row's prompt names (the logits' class axis may be wider in a mixed batch). */
  labels: number;
  /** Index of the row's first label in the item's label list (rows may hold a slice of it). */
  labelOffset: number;
}

/** The label prompt: `<<ENT>>` and the label's tokens for each label, then `<<SEP>>`. */
export function promptIds(
  tok: TextTokenizer,
  labels: readonly string[],
  entId: number,
  sepId: number,
): number[] {
  const ids: number[] = [];
  for (const label of labels) ids.push(entId, ...tok.bodyIds(label, tok.maxLength));
  ids.push(sepId);
  return ids;
}

/** What one row is built from besides its window. */
export interface RowPrompt {
  /** Label prompt ids (`promptIds`). */
  ids: readonly number[];
  labels: number;
  labelOffset: number;
  /** Sub-word ids of each lead (instruction) word. */
  leadIds: readonly (readonly number[])[];
}

/** Build the row of one window; word tokens past `room` are cut (only a lone huge word can). */
export function buildRow(
  tok: TextTokenizer,
  prompt: RowPrompt,
  wordIds: readonly (readonly number[])[],
  w: WordWindow,
  room: number,
): GlinerRow {
  const { prefix, suffix } = tok.template;
  const ids = [...prefix, ...prompt.ids];
  const wordsMask = new Array<number>(ids.length).fill(0);
  let used = 0;
  let k = 0;
  const push = (pieces: readonly number[]) => {
    k++;
    pieces.forEach((id, i) => {
      ids.push(id);
      wordsMask.push(i === 0 ? k : 0);
    });
    used += pieces.length;
  };
  for (const lead of prompt.leadIds) push(lead);
  for (let j = w.start; j < w.end; j++) push(wordIds[j].slice(0, Math.max(0, room - used)));
  ids.push(...suffix);
  wordsMask.push(...suffix.map(() => 0));
  return {
    ids,
    wordsMask,
    words: k,
    lead: prompt.leadIds.length,
    offset: w.start,
    labels: prompt.labels,
    labelOffset: prompt.labelOffset,
  };
}
