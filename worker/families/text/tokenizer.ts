/** A model's text tokenizer: tokenizer.json through @huggingface/tokenizers, with truncation. */
import { basename } from "node:path";
import {
  DEFAULT_MODEL_JSON_BOUNDS,
  ModelFileError,
  type ModelJsonBounds,
  readModelJson,
} from "../../weights/model_json.ts";
import { Tokenizer } from "@huggingface/tokenizers";

/** Token ids of one text, special tokens included. */
export interface TokenizedText {
  ids: number[];
  /** Segment ids (0 for a single text; 0/1 for a pair, all 0 for RoBERTa-style tokenizers). */
  typeIds?: number[];
  /** True when the text (or a text of the pair) was cut to fit the length. */
  truncated?: boolean;
}

/**
 * Wraps the library tokenizer. The library does not truncate, so we learn the special-token
 * template once (what goes before and after the body) and truncate the body ourselves.
 */
export class TextTokenizer {
  readonly #tok: Tokenizer;
  readonly #prefix: number[];
  readonly #suffix: number[];
  readonly #pair: PairTemplate;
  /** Ids of the added tokens flagged special, except the unknown token (text can produce it). */
  readonly #specialIds: ReadonlySet<number>;
  readonly maxLength: number;
  /** Number of ids the tokenizer can produce (added tokens included). */
  readonly vocabSize: number;
  /** Ids of the added tokens flagged `special` in tokenizer.json (CLS, SEP, PAD, UNK, MASK...). */
  readonly specialIds: ReadonlySet<number>;

  constructor(tokenizerJson: unknown, tokenizerConfig: unknown, maxLength: number) {
    this.#tok = new Tokenizer(tokenizerJson as object, (tokenizerConfig ?? {}) as object);
    this.maxLength = maxLength;
    let top = -1;
    for (const id of this.#tok.get_vocab(true).values()) if (id > top) top = id;
    this.vocabSize = top + 1;
    this.specialIds = specialAddedIds(tokenizerJson);
    const probe = "hello world";
    const body = this.#tok.encode(probe, { add_special_tokens: false }).ids;
    const full = this.#tok.encode(probe, { add_special_tokens: true }).ids;
    const at = indexOfRun(full, body);
    this.#prefix = at >= 0 ? full.slice(0, at) : [];
    this.#suffix = at >= 0 ? full.slice(at + body.length) : [];
    this.#pair = learnPairTemplate(this.#tok, zeroPairTypes(tokenizerJson));
    this.#specialIds = specialIdsOf(tokenizerJson, this.#tok);
  }

  /**
   * The first special token (or one of `reserved`, a family's prompt tokens) that `text`
   * tokenises to, undefined when there is none: such a text would change the prompt's structure.
   */
  reservedTokenIn(text: string, reserved: ReadonlySet<number> = new Set()): string | undefined {
    for (const id of this.#tok.encode(text, { add_special_tokens: false }).ids) {
      if (this.#specialIds.has(id) || reserved.has(id)) {
        return this.#tok.id_to_token(id) ?? `#${id}`;
      }
    }
    return undefined;
  }

  /** Ids of a special or ordinary token, undefined when absent. */
  tokenId(token: string): number | undefined {
    return this.#tok.token_to_id(token);
  }

  /** Token string of an id. */
  idToken(id: number): string | undefined {
    return this.#tok.id_to_token(id);
  }

  /** Special tokens put before and after every single text. */
  get template(): { prefix: readonly number[]; suffix: readonly number[] } {
    return { prefix: this.#prefix, suffix: this.#suffix };
  }

  /** Body tokens of a text (no special tokens), at most `limit` of them. */
  bodyIds(text: string, limit: number): number[] {
    return this.bodyIdsCut(text, limit).ids;
  }

  /** {@link bodyIds}, and whether the text had more tokens than `limit` (it was cut). */
  bodyIdsCut(text: string, limit: number): { ids: number[]; cut: boolean } {
    // Cap the characters fed to the tokenizer so a huge text costs O(limit), not O(text);
    // fall back to the whole text in the rare case the cut produced too few tokens. A capped
    // prefix that fills the limit leaves text unread: cut.
    const cap = Math.max(64, limit * 24);
    if (text.length > cap) {
      const ids = this.#tok.encode(text.slice(0, cap), { add_special_tokens: false }).ids;
      if (ids.length >= limit) return { ids: ids.slice(0, limit), cut: true };
    }
    const ids = this.#tok.encode(text, { add_special_tokens: false }).ids;
    return ids.length > limit ? { ids: ids.slice(0, limit), cut: true } : { ids, cut: false };
  }

  /**
   * The last `limit` body tokens of a text (its start dropped). Only the text's end is tokenised
   * (from a word boundary, so that the first word read is whole) unless that gives too few tokens.
   * `cut`: the text had more tokens than `limit` (its start was dropped).
   */
  bodyTailCut(text: string, limit: number): { ids: number[]; cut: boolean } {
    if (limit <= 0) return { ids: [], cut: this.bodyIds(text, 1).length > 0 };
    const cap = Math.max(64, limit * 24);
    if (text.length > cap) {
      let tail = text.slice(-cap);
      const space = tail.search(/\s/);
      if (space >= 0 && space < 64) tail = tail.slice(space + 1);
      const ids = this.#tok.encode(tail, { add_special_tokens: false }).ids;
      // More than needed: the first token, maybe cut from a longer word, is not kept.
      if (ids.length > limit) return { ids: ids.slice(-limit), cut: true };
    }
    const ids = this.#tok.encode(text, { add_special_tokens: false }).ids;
    return ids.length > limit ? { ids: ids.slice(-limit), cut: true } : { ids, cut: false };
  }

  /** Body tokens a text pair may hold in total (the limit minus the pair's special tokens). */
  pairRoom(max = this.maxLength): number {
    const t = this.#pair;
    return Math.max(2, max - t.prefix.length - t.middle.length - t.suffix.length);
  }

  /**
   * Encode a text pair (query, document) with segment ids, truncated longest-first. Either text
   * may come as body ids (at most `pairRoom` of them) tokenised once for many pairs.
   */
  encodePair(
    a: string | readonly number[],
    b: string | readonly number[],
    max = this.maxLength,
  ): TokenizedText {
    const t = this.#pair;
    const room = this.pairRoom(max);
    const aBody = typeof a === "string" ? this.bodyIdsCut(a, room) : { ids: a, cut: false };
    const bBody = typeof b === "string" ? this.bodyIdsCut(b, room) : { ids: b, cut: false };
    const [aIds, bIds] = [aBody.ids, bBody.ids];
    const [na, nb] = splitRoom(aIds.length, bIds.length, room);
    const ids = [...t.prefix, ...aIds.slice(0, na), ...t.middle, ...bIds.slice(0, nb), ...t.suffix];
    const typeIds = [
      ...t.prefixTypes,
      ...new Array<number>(na).fill(t.typeA),
      ...t.middleTypes,
      ...new Array<number>(nb).fill(t.typeB),
      ...t.suffixTypes,
    ];
    const truncated = aBody.cut || bBody.cut || na < aIds.length || nb < bIds.length;
    return { ids, typeIds, truncated };
  }

  /** Encode one text with the model's special tokens, truncated to `maxLength` (or `max`). */
  encode(text: string, max = this.maxLength): TokenizedText {
    const room = Math.max(0, max - this.#prefix.length - this.#suffix.length);
    const body = this.bodyIdsCut(text, room);
    return { ids: [...this.#prefix, ...body.ids, ...this.#suffix], truncated: body.cut };
  }
}

/** Ids of `tokenizer.json`'s special added tokens, without the unknown token. */
function specialIdsOf(json: unknown, tok: Tokenizer): Set<number> {
  const j = json as { model?: { unk_token?: unknown; unk_id?: unknown } };
  const ids = specialAddedIds(json);
  // WordPiece and BPE name their unknown token, Unigram (SentencePiece) gives its id.
  const unk = typeof j.model?.unk_token === "string"
    ? tok.token_to_id(j.model.unk_token)
    : undefined;
  if (unk !== undefined) ids.delete(unk);
  if (typeof j.model?.unk_id === "number") ids.delete(j.model.unk_id);
  return ids;
}

/** Where the special tokens and segment ids go around a text pair, learnt from one probe. */
interface PairTemplate {
  prefix: number[];
  middle: number[];
  suffix: number[];
  /** Segment id of each special token, and of the first and second text. */
  prefixTypes: number[];
  middleTypes: number[];
  suffixTypes: number[];
  typeA: number;
  typeB: number;
}

/**
 * True when the post-processor is RoBERTa's (alone or in a Sequence): RoBERTa and XLM-R have one
 * segment, and the Rust library and transformers.js give a pair all-zero type ids, while the JS
 * library answers 0/1, which a graph declaring `token_type_ids` (type vocabulary of 1) would
 * read out of range or as a segment it never learnt.
 */
export function zeroPairTypes(tokenizerJson: unknown): boolean {
  const isRoberta = (p: unknown): boolean => {
    const pp = p as { type?: unknown; processors?: unknown } | null;
    if (pp?.type === "RobertaProcessing") return true;
    return pp?.type === "Sequence" && Array.isArray(pp.processors) && pp.processors.some(isRoberta);
  };
  return isRoberta((tokenizerJson as { post_processor?: unknown } | null)?.post_processor);
}

function learnPairTemplate(tok: Tokenizer, zeroTypes: boolean): PairTemplate {
  const a = tok.encode("hello", { add_special_tokens: false }).ids;
  const b = tok.encode("world", { add_special_tokens: false }).ids;
  const full = tok.encode("hello", { text_pair: "world", return_token_type_ids: true });
  const types = zeroTypes || !full.token_type_ids ? full.ids.map(() => 0) : full.token_type_ids;
  const i = indexOfRun(full.ids, a);
  const j = i < 0 ? -1 : i + a.length + indexOfRun(full.ids.slice(i + a.length), b);
  if (i < 0 || j < i + a.length) {
    // No pair template: plain concatenation, one segment.
    return {
      prefix: [],
      middle: [],
      suffix: [],
      prefixTypes: [],
      middleTypes: [],
      suffixTypes: [],
      typeA: 0,
      typeB: 0,
    };
  }
  return {
    prefix: full.ids.slice(0, i),
    middle: full.ids.slice(i + a.length, j),
    suffix: full.ids.slice(j + b.length),
    prefixTypes: types.slice(0, i),
    middleTypes: types.slice(i + a.length, j),
    suffixTypes: types.slice(j + b.length),
    typeA: types[i],
    typeB: types[j],
  };
}

/** Split `room` tokens between two texts, cutting the longer one first (longest-first). */
export function splitRoom(aLen: number, bLen: number, room: number): [number, number] {
  if (aLen + bLen <= room) return [aLen, bLen];
  const half = Math.floor(room / 2);
  if (aLen <= half) return [aLen, room - aLen];
  if (bLen <= room - half) return [room - bLen, bLen];
  return [room - half, half];
}

/** Ids of `added_tokens` entries with `special: true` (an absent or odd list gives none). */
function specialAddedIds(tokenizerJson: unknown): Set<number> {
  const ids = new Set<number>();
  const added = (tokenizerJson as { added_tokens?: unknown } | null)?.added_tokens;
  if (!Array.isArray(added)) return ids;
  for (const t of added) {
    const e = t as { id?: unknown; special?: unknown } | null;
    if (e?.special === true && typeof e.id === "number") ids.add(e.id);
  }
  return ids;
}

function indexOfRun(hay: number[], needle: number[]): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/**
 * Read and parse a model's JSON file within `bounds` (a `tokenizer.json` gets the tokenizers'
 * size bound); undefined when the path is missing. Errors name the file and quote nothing of it.
 */
export async function readJsonFile(
  path: string | undefined,
  bounds: ModelJsonBounds = DEFAULT_MODEL_JSON_BOUNDS,
): Promise<unknown> {
  if (!path) return undefined;
  const kind = basename(path) === "tokenizer.json" ? "tokenizer" : "config";
  return await readModelJson(path, bounds, kind);
}

/** Load a model's tokenizer from its files (`tokenizer`, optional `tokenizer_config`). */
export async function loadTextTokenizer(
  files: Record<string, string>,
  maxLength: number,
  bounds: ModelJsonBounds = DEFAULT_MODEL_JSON_BOUNDS,
): Promise<TextTokenizer> {
  if (!files.tokenizer) throw new Error("model has no tokenizer file");
  const json = await readJsonFile(files.tokenizer, bounds);
  const cfgPath = files.tokenizer_config ??
    files.tokenizer.replace(/tokenizer\.json$/, "tokenizer_config.json");
  let cfg: unknown = {};
  try {
    cfg = await readJsonFile(cfgPath, bounds);
  } catch {
    // Optional: an absent or unreadable one leaves the defaults (its bounds held all the same).
    cfg = {};
  }
  try {
    return new TextTokenizer(json, cfg, maxLength);
  } catch (err) {
    // The tokenizer library's reason, when it quotes nothing (no quotes, no long text).
    const why = (err as Error).message;
    const safe = /^[\w\s.,:;()/-]{1,200}$/.test(why) ? ` (${why})` : "";
    throw new ModelFileError(
      basename(files.tokenizer),
      `is not a tokenizer this worker reads${safe}`,
    );
  }
}
