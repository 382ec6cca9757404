/**
 * How much work one extract item may ask of its model. Extraction multiplies: GLiNER reads the
 * label prompt with every window of the text (and on multitask models again for every prompt of
 * heads × relation types), NLI reads the text once per label. The inference thread counts an
 * item's tokens exactly once it is tokenised, before any of its batch runs, and refuses an item
 * over the bound with a 400; span models keep only the best spans of each label, so memory does
 * not grow with the threshold.
 */

/** The bounds, from the worker's settings (`SVC_MAX_EXTRACT_ITEM_TOKENS`, `SVC_MAX_SPANS_PER_LABEL`). */
export interface ExtractBudget {
  /** Most tokens the model may read for one item, every run of it together. */
  maxItemTokens: number;
  /** Most candidate spans kept per label and item (the best-scoring), whatever the threshold. */
  maxSpansPerLabel: number;
  /** Most tokens the model may read for one request, all its items together. */
  maxRequestTokens: number;
}

/**
 * Defaults. 65,536 tokens let GLiNER read a text of the longest allowed string (100,000
 * characters, about 25,000 tokens) with 64 labels, window by window; a relation pass of 16 heads
 * × 64 relation types fits a text of about 2 KB. 1,024 spans per label is more mentions of one
 * type than a text of that length holds.
 */
export const DEFAULT_EXTRACT_BUDGET: ExtractBudget = Object.freeze({
  maxItemTokens: 65_536,
  maxSpansPerLabel: 1024,
  maxRequestTokens: 262_144,
});

/**
 * The 400 message of a request whose items together pass the request bound: `tokens` as the
 * cost model counts them, for `items` items.
 */
export function requestOverBudget(tokens: number, items: number, budget: ExtractBudget): string {
  return `the request needs ${tokens} model tokens for its ${items} items (windows × label ` +
    `prompts, every pass); at most ${budget.maxRequestTokens} ` +
    `(SVC_MAX_EXTRACT_REQUEST_TOKENS): send fewer items or labels per request`;
}

/** The 400 message of an item whose work passes the bound; `what` says where the tokens go. */
export function itemOverBudget(tokens: number, budget: ExtractBudget, what: string): string {
  return `the item needs ${tokens} model tokens (${what}); at most ${budget.maxItemTokens} ` +
    `(SVC_MAX_EXTRACT_ITEM_TOKENS): send a shorter text or fewer labels`;
}
