/**
 * The tokenizer files of `glove/6B-100d`: a WordLevel vocabulary over the GloVe words (ids 0 and
 * 1 are `[UNK]` and `[PAD]`), a lowercase normalizer, BERT's whitespace+punctuation
 * pre-tokenizer and no post-processor, so no special tokens are added around a text.
 */

/** A JSON value as written to the model files. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** Token for words outside the vocabulary; its vector is zero and it is left out of the mean. */
export const UNK_TOKEN = "[UNK]";
/** Padding token; like `[UNK]` it has a zero vector and never counts. */
export const PAD_TOKEN = "[PAD]";
/** Id of `[UNK]`. */
export const UNK_ID = 0;
/** Id of `[PAD]`. */
export const PAD_ID = 1;
/** Id of the most frequent GloVe word; every id below it is a special token. */
export const FIRST_WORD_ID = 2;

// The character class @huggingface/tokenizers and the Rust library split on in BertPreTokenizer:
// Unicode punctuation plus every ASCII symbol.
const PUNCT = "\\p{P}\\u0021-\\u002F\\u003A-\\u0040\\u005B-\\u0060\\u007B-\\u007E";
const PIECE = new RegExp(`^(?:[^\\s${PUNCT}]+|[${PUNCT}])$`, "u");

/**
 * True when the pre-tokenizer can produce `word` as one piece after lowercasing. Other GloVe
 * entries (`well-known`, `e-mail`: the pre-tokenizer splits them at the hyphen) could never be
 * looked up, so they are left out of the vocabulary.
 */
export function isReachableWord(word: string): boolean {
  return PIECE.test(word) && word === word.toLowerCase();
}

function addedToken(id: number, content: string): Json {
  return {
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  };
}

/** `tokenizer.json` for `words` (ids from FIRST_WORD_ID on, in order). */
export function tokenizerJson(words: readonly string[]): Json {
  // A null prototype keeps a word such as "__proto__" an ordinary key.
  const vocab: { [token: string]: Json } = Object.create(null);
  vocab[UNK_TOKEN] = UNK_ID;
  vocab[PAD_TOKEN] = PAD_ID;
  words.forEach((w, i) => {
    if (Object.hasOwn(vocab, w)) throw new Error(`duplicate vocabulary word '${w}'`);
    vocab[w] = FIRST_WORD_ID + i;
  });
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [addedToken(UNK_ID, UNK_TOKEN), addedToken(PAD_ID, PAD_TOKEN)],
    normalizer: { type: "Lowercase" },
    pre_tokenizer: { type: "BertPreTokenizer" },
    // No post-processor: a GloVe average has no [CLS]/[SEP]; the worker learns an empty template.
    post_processor: null,
    decoder: null,
    model: { type: "WordLevel", vocab, unk_token: UNK_TOKEN },
  };
}

/**
 * `tokenizer_config.json`. @huggingface/tokenizers reads the unknown token of a WordLevel model
 * from here (not from tokenizer.json), so `unk_token` must be present or unknown words get no id.
 */
export function tokenizerConfig(maxLength: number): Json {
  return {
    tokenizer_class: "PreTrainedTokenizerFast",
    unk_token: UNK_TOKEN,
    pad_token: PAD_TOKEN,
    do_lower_case: true,
    model_max_length: maxLength,
    clean_up_tokenization_spaces: false,
  };
}
