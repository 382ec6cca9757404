/** The token row of one window: `[CLS]`, label prompt, the window's sub-words, `[SEP]`. */
import type { TextTokenizer } from "../text/tokenizer.ts";
import type { WordWindow } from "./windows.ts";

/** One model row: the tokens of one window of one item. */
export interface GlinerRow {
  ids: number[];
  /** 0, except k (1-based within the window) on the first sub-token of the window's word k. */
  wordsMask: number[];
  /** Words in the window (`text_lengths`). */
  words: number;
  /** Index of the window's first word in the whole text. */
  offset: number;
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

/** Build the row of one window; word tokens past `room` are cut (only a lone huge word can). */
export function buildRow(
  tok: TextTokenizer,
  prompt: readonly number[],
  wordIds: readonly (readonly number[])[],
  w: WordWindow,
  room: number,
): GlinerRow {
  const { prefix, suffix } = tok.template;
  const ids = [...prefix, ...prompt];
  const wordsMask = new Array<number>(ids.length).fill(0);
  let used = 0;
  for (let k = w.start; k < w.end; k++) {
    const pieces = wordIds[k].slice(0, Math.max(0, room - used));
    pieces.forEach((id, i) => {
      ids.push(id);
      wordsMask.push(i === 0 ? k - w.start + 1 : 0);
    });
    used += pieces.length;
  }
  ids.push(...suffix);
  wordsMask.push(...suffix.map(() => 0));
  return { ids, wordsMask, words: w.end - w.start, offset: w.start };
}
