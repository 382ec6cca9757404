/**
 * Token counts of queued items before they are tokenised. Batches are formed on the main
 * thread, while tokenisation runs in the model's inference thread (on the main thread it would
 * block the event loop: 30–46 ms for 256 bench texts, measured); so the batcher estimates, and
 * each model's estimator learns its tokens per character from the exact counts the thread reports.
 *
 * Why it matters: the fixed guess of 4 characters a token over-counted the bench texts (whole
 * words) 1.57×, so a 4,096-token batch closed at ~27 items instead of ~42, and the thread sorted
 * and cut runs over a window too small to pad little (worker inference on 256-text requests 0.949
 * of raw ORT sorted over all texts; 0.970 once learned, measured in interleaved rounds).
 */
import type { WorkItem } from "../families/types.ts";
import { imageTokens } from "./sub_batches.ts";

/** Special tokens assumed around one text ([CLS] … [SEP]); the learned rate covers the rest. */
const SPECIAL_TOKENS = 2;

/** Tokens per character before anything is learned: about 4 characters a token (English). */
export const DEFAULT_TOKENS_PER_CHAR = 0.25;

/** Characters observed before the learned rate replaces the default (a few typical requests). */
export const MIN_OBSERVED_CHARS = 2_000;

/**
 * Observations are halved once this many characters are held, so the rate follows the model's
 * current traffic (a new language, a new client) within a few batches' worth of text.
 */
const DECAY_AT_CHARS = 200_000;

/** The learned rate stays within these bounds (byte-level tokenizers on CJK reach ~1.5). */
const MIN_RATE = 0.05;
const MAX_RATE = 2;

/** Characters of an item's text, or null when its count is not a matter of text length. */
function textChars(item: WorkItem): number | null {
  if (item.tokenIds || item.pixels) return null;
  return (item.text?.length ?? 0) + (item.query?.length ?? 0);
}

/** One model's estimator: estimates queued items, learns from the thread's exact counts. */
export class TokenEstimator {
  #chars = 0;
  #tokens = 0;

  /**
   * @param maxItemTokens the model's longest item: an item that reached it was truncated, and its
   * characters past the cut would teach a rate far too low, so it is not learned from.
   */
  constructor(readonly maxItemTokens = Infinity) {}

  /** Tokens per character in use (the default until enough text has been observed). */
  get tokensPerChar(): number {
    if (this.#chars < MIN_OBSERVED_CHARS) return DEFAULT_TOKENS_PER_CHAR;
    return Math.min(MAX_RATE, Math.max(MIN_RATE, this.#tokens / this.#chars));
  }

  /** Estimated tokens of one item (exact for token ids; per 32×32 patch for images). */
  estimate(item: WorkItem): number {
    if (item.tokenIds) return item.tokenIds.length + SPECIAL_TOKENS;
    if (item.pixels) {
      // An image costs about what a vision transformer sees: one token per 32×32 patch.
      return item.pixels.reduce((s, p) => s + imageTokens(p.width, p.height), 0) +
        Math.ceil((item.text?.length ?? 0) * DEFAULT_TOKENS_PER_CHAR);
    }
    return Math.ceil((textChars(item) ?? 0) * this.tokensPerChar) + SPECIAL_TOKENS;
  }

  /** Learn from an item the thread ran: `tokens` is its exact count, special tokens included. */
  observe(item: WorkItem, tokens: number): void {
    const chars = textChars(item);
    if (chars === null || chars === 0 || !(tokens > SPECIAL_TOKENS)) return;
    if (tokens >= this.maxItemTokens) return;
    this.#chars += chars;
    this.#tokens += tokens - SPECIAL_TOKENS;
    if (this.#chars >= DECAY_AT_CHARS) {
      this.#chars /= 2;
      this.#tokens /= 2;
    }
  }
}
