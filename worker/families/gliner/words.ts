/** GLiNER's word splitting: the words the model scores spans over, with character offsets. */

/** A word of the text and its character span `[start, end)` (JavaScript string indices). */
export interface Word {
  text: string;
  start: number;
  end: number;
}

// GLiNER's `\w+(?:[-_]\w+)*|\S`, with `\w` spelled out for Unicode (Python's `\w` matches any
// letter or digit, JavaScript's only ASCII). Combining marks stay in their word so decomposed
// text ("e\u0301") splits like its composed form.
const WORD_RE = /[\p{L}\p{N}\p{M}_]+(?:[-_][\p{L}\p{N}\p{M}_]+)*|\S/gu;

/** Split a text into GLiNER words with their character offsets. */
export function splitWords(text: string): Word[] {
  const words: Word[] = [];
  for (const m of text.matchAll(WORD_RE)) {
    words.push({ text: m[0], start: m.index, end: m.index + m[0].length });
  }
  return words;
}
