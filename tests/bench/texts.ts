/**
 * Benchmark texts built from whole words of the fixture vocabulary: every word is one token, so
 * a text of n words is exactly n + 2 tokens ([CLS] and [SEP]) and token counts are predictable.
 */
import { Prng } from "@svc/fixture-models/prng";
import { WORDS } from "@svc/fixture-models/tokenizer";

/** One benchmark input and its token count (special tokens included). */
export interface BenchText {
  text: string;
  tokens: number;
}

/** Special tokens the fixture tokenizer adds around every single text. */
export const SPECIAL_TOKENS_PER_TEXT = 2;

/** A text of exactly `tokens` tokens (at least 3: [CLS], one word, [SEP]). */
export function textOfTokens(rng: Prng, tokens: number): BenchText {
  const words = Math.max(1, tokens - SPECIAL_TOKENS_PER_TEXT);
  const parts: string[] = new Array(words);
  for (let i = 0; i < words; i++) parts[i] = WORDS[rng.int(WORDS.length)];
  return { text: parts.join(" "), tokens: words + SPECIAL_TOKENS_PER_TEXT };
}

/** `count` texts with token counts uniform in [minTokens, maxTokens], fixed by `seed`. */
export function corpus(
  count: number,
  minTokens: number,
  maxTokens: number,
  seed: number,
): BenchText[] {
  const rng = new Prng(seed);
  const out: BenchText[] = [];
  for (let i = 0; i < count; i++) {
    out.push(textOfTokens(rng, minTokens + rng.int(maxTokens - minTokens + 1)));
  }
  return out;
}

/** Sum of the token counts. */
export function totalTokens(texts: readonly BenchText[]): number {
  return texts.reduce((s, t) => s + t.tokens, 0);
}
