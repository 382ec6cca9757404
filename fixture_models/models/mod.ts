/**
 * `@svc/fixture-models/models`: the fixture models one by one, and the facts about them that tests
 * assert against (file paths, labels, special tokens, limits of the graphs).
 */
export { MODEL_PATH } from "./common.ts";
export { dense, INT8_MODEL_PATH } from "./dense.ts";
export { benchSmall } from "./bench_small.ts";
export { DETR_LABELS } from "./detr.ts";
export { GLICLASS_MAX_TOKENS, GLICLASS_TOKENS, LABEL_ID } from "./gliclass.ts";
export { ENT_ID, GLINER_TOKENS, MAX_WIDTH, MAX_WORDS } from "./gliner.ts";
export { M3_COLBERT_DIM } from "./m3.ts";
export { NER_LABELS } from "./ner.ts";
export { NLI_LABELS } from "./nli.ts";
export type { EncoderWeights } from "../encoder/weights.ts";
