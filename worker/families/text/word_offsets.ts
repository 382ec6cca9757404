/**
 * Character offsets for tokens. The tokenizer library gives ids but no offsets, so we tokenise
 * the text one whitespace-separated chunk at a time (ids equal the whole-text ids: every
 * pre-tokenizer we serve splits on whitespace) and place each chunk's tokens inside the chunk.
 * Offsets are JavaScript string indices (UTF-16 code units).
 */
import type { TextTokenizer } from "./tokenizer.ts";

/** Body tokens of a text (no special tokens) with the character span each one came from. */
export interface TokenSpans {
  ids: number[];
  /** Start offset (inclusive) of token i in the text. */
  starts: number[];
  /** End offset (exclusive) of token i in the text. */
  ends: number[];
  /** True when the text had more tokens than the limit (what follows them was not read). */
  truncated?: boolean;
}

/** A character range `[start, end)`. */
type Span = [number, number];

// Letter/digit runs and single other characters: the pieces BERT-style pre-tokenizers cut a
// chunk into ("Paris," → "Paris", ","). Marks stay with their letters ("e\u0301").
const PIECE_RE = /[\p{L}\p{N}\p{M}]+|[^\p{L}\p{N}\p{M}]/gu;
// Markers a token string carries that are not text: WordPiece continuation, SentencePiece and
// byte-level BPE word starts.
const MARKER_RE = /^(##|\u2581|\u0120)/;

/** Tokenise `text` into at most `limit` body tokens, each with its character span. */
export function tokenizeWithOffsets(tok: TextTokenizer, text: string, limit: number): TokenSpans {
  const out: TokenSpans = { ids: [], starts: [], ends: [] };
  const unknown = unknownIds(tok);
  const chunks = /\S+/g;
  let m = chunks.exec(text);
  for (; m && out.ids.length < limit; m = chunks.exec(text)) {
    const room = limit - out.ids.length;
    const ids = tok.bodyIds(m[0], room);
    if (ids.length === 0) continue; // e.g. only control characters: nothing the model sees
    // Only the chunk at the limit can be cut; one more token tells whether it was.
    const cut = ids.length === room && tok.bodyIds(m[0], room + 1).length > room;
    if (cut) out.truncated = true;
    const spans = alignChunk(tok, unknown, m[0], m.index, ids, cut);
    ids.forEach((id, i) => {
      out.ids.push(id);
      out.starts.push(spans[i][0]);
      out.ends.push(spans[i][1]);
    });
  }
  // The limit stopped the loop at chunk `m`: any chunk from there on that the model would have
  // read (it has a token) was left out.
  for (; m && !out.truncated; m = chunks.exec(text)) {
    if (tok.bodyIds(m[0], 1).length > 0) out.truncated = true;
  }
  return out;
}

/**
 * Spans of a chunk's tokens. Pieces are tokenised alone first: when their ids line up with the
 * chunk's, each token gets a span inside its piece; otherwise (tokenizers whose pieces differ
 * alone, e.g. SentencePiece) the whole chunk is aligned at once.
 */
function alignChunk(
  tok: TextTokenizer,
  unknown: Set<number>,
  chunk: string,
  at: number,
  ids: number[],
  truncated: boolean,
): Span[] {
  if (ids.length > 1) {
    const spans: Span[] = [];
    const pieces = PIECE_RE; // shared: JS runs one alignment at a time, so reset and reuse
    pieces.lastIndex = 0;
    for (let m = pieces.exec(chunk); m && spans.length < ids.length; m = pieces.exec(chunk)) {
      const want = ids.length - spans.length;
      const pieceIds = tok.bodyIds(m[0], want);
      if (!pieceIds.every((id, i) => id === ids[spans.length + i])) {
        spans.length = 0;
        break;
      }
      const cut = truncated && pieceIds.length === want;
      spans.push(...alignPiece(tok, unknown, m[0], at + m.index, pieceIds, cut));
    }
    if (spans.length === ids.length) return spans;
  }
  return alignPiece(tok, unknown, chunk, at, ids, truncated);
}

/**
 * Spans of the tokens of one piece: consecutive, sized by the token strings, when their lengths
 * add up to the piece (a cut piece may be longer); otherwise every token gets the whole piece
 * (normalisation changed the length, or an unknown token hides it), which keeps entity text an
 * exact substring of the input.
 */
function alignPiece(
  tok: TextTokenizer,
  unknown: Set<number>,
  piece: string,
  at: number,
  ids: number[],
  truncated: boolean,
): Span[] {
  const whole: Span[] = ids.map(() => [at, at + piece.length]);
  if (ids.length === 1 && !truncated) return whole;
  const lengths: number[] = [];
  for (const id of ids) {
    const surface = unknown.has(id) ? "" : (tok.idToken(id) ?? "").replace(MARKER_RE, "");
    if (surface.length === 0) return whole;
    lengths.push(surface.length);
  }
  const total = lengths.reduce((s, n) => s + n, 0);
  if (truncated ? total > piece.length : total !== piece.length) return whole;
  let pos = at;
  return lengths.map((n): Span => {
    const span: Span = [pos, pos + n];
    pos += n;
    return span;
  });
}

const UNKNOWN_IDS = new WeakMap<TextTokenizer, Set<number>>();

/**
 * Ids of the tokenizer's unknown tokens (their strings say nothing about the text's length),
 * computed once per tokenizer.
 */
function unknownIds(tok: TextTokenizer): Set<number> {
  const known = UNKNOWN_IDS.get(tok);
  if (known) return known;
  const ids = new Set<number>();
  UNKNOWN_IDS.set(tok, ids);
  for (const t of ["[UNK]", "<unk>"]) {
    const id = tok.tokenId(t);
    if (id !== undefined) ids.add(id);
  }
  return ids;
}
