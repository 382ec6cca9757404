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
  const { prefix, suffix } = tok.template;
  const room = Math.max(0, tok.maxLength - prefix.length - suffix.length);
  if (item.tokenIds) {
    // Token ids from the client are body tokens; the model's special tokens are added around them.
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
  const body = textBody(tok, params.prefix ?? "", item.text ?? "", room, params);
  if ("error" in body) return { index, length: 0, ids: [], error: body.error };
  const ids = [...prefix, ...body.ids, ...suffix];
  return { index, length: ids.length, ids, truncated: body.truncated };
}

/**
 * Body ids (no special tokens) of a prompt and a text within `room` tokens. By default the text
 * keeps its start: prompt and text are tokenised together and cut at `room`. `params.maxTokens`
 * caps the text's own tokens (the prompt not counted); `params.truncate` says what happens to a
 * text longer than its room: `start` drops its start (the prompt stays first), `none` answers the
 * item with an error instead. `truncated`: the model reads the text only in part.
 */
export function textBody(
  tok: TextTokenizer,
  prompt: string,
  text: string,
  room: number,
  params: Pick<WorkParams, "maxTokens" | "truncate">,
): { ids: number[]; truncated: boolean } | { error: { code: "INVALID_INPUT"; message: string } } {
  if (params.maxTokens === undefined && params.truncate === undefined) {
    const { ids, cut } = tok.bodyIdsCut(prompt + text, room);
    return { ids, truncated: cut };
  }
  const promptIds = prompt === "" ? [] : tok.bodyIds(prompt, room);
  const limit = Math.min(Math.max(0, room - promptIds.length), params.maxTokens ?? room);
  if (params.truncate === "start") {
    const tail = tok.bodyTailCut(text, limit);
    return { ids: [...promptIds, ...tail.ids], truncated: tail.cut };
  }
  // One token more than fits tells a text that is too long (the cost stays O(limit)).
  const ids = tok.bodyIds(prompt + text, promptIds.length + limit + 1);
  if (ids.length <= promptIds.length + limit) return { ids, truncated: false };
  if (params.truncate === "none") {
    const why = params.maxTokens !== undefined && limit === params.maxTokens
      ? `max_tokens ${limit}`
      : `the model's ${limit} tokens for text`;
    return {
      error: {
        code: "INVALID_INPUT",
        message: `a text is longer than ${why}, and truncation is off (truncate NONE)`,
      },
    };
  }
  return { ids: ids.slice(0, promptIds.length + limit), truncated: true };
}
