/**
 * `@svc/fixture-models/tokenizer`: the hand-built BERT WordPiece tokenizer of the fixtures (its
 * `tokenizer.json` and `tokenizer_config.json`, extra special tokens, the special ids) and the
 * word list its vocabulary is made of.
 */
export { type ExtraToken, extraTokenIds, tokenizerConfig, tokenizerJson } from "./files.ts";
export { SPECIAL_IDS, VOCAB_SIZE } from "./vocab.ts";
export { WORDS } from "./words.ts";
