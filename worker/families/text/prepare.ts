/** Turning a work item into token ids: prefix, tokenisation, truncation, token-id input checks. */
import type { PreparedItem, WorkItem, WorkParams } from "../types.ts";
import type { TextTokenizer } from "./tokenizer.ts";

/** A tokenised text item. */
export interface TextItem extends PreparedItem {
  ids: number[];
  /** Attend only to the first `attend` tokens (defaults to all). */
  attend?: number;
}

/** Tokenise one item for a single-text model, truncating to the model's max length. */
export function prepareText(
  tok: TextTokenizer,
  item: WorkItem,
  index: number,
  params: WorkParams,
  vocabSize?: number,
): TextItem {
  if (item.tokenIds) {
    // Token ids from the client are body tokens; the model's special tokens are added around them.
    const { prefix, suffix } = tok.template;
    const room = Math.max(0, tok.maxLength - prefix.length - suffix.length);
    const limit = vocabSize ?? Number.MAX_SAFE_INTEGER;
    const bad = item.tokenIds.find((id) => !Number.isInteger(id) || id < 0 || id >= limit);
    if (bad !== undefined) {
      return {
        index,
        length: 0,
        ids: [],
        error: { code: "INVALID_INPUT", message: `token id ${bad} is outside the vocabulary` },
      };
    }
    const ids = [...prefix, ...item.tokenIds.slice(0, room), ...suffix];
    return { index, length: ids.length, ids, truncated: item.tokenIds.length > room };
  }
  const text = (params.prefix ?? "") + (item.text ?? "");
  const { ids, truncated } = tok.encode(text);
  return { index, length: ids.length, ids, truncated };
}
