/**
 * Documented bounds of extract requests (docs/extract.md). Each one keeps a request's prompt,
 * and so its cost, proportional to what the models were trained with.
 */

/**
 * Most labels one request may name (entity types, candidate classes or relation types). GLiNER
 * reads every label as a prompt before each window of text and NLI runs one pair per label;
 * real models are trained with a few dozen labels at most.
 */
export const MAX_LABELS = 64;

/** Longest label, in characters: a label is a short name ("person", "drug dosage"). */
export const MAX_LABEL_LENGTH = 100;

/**
 * Most entity types a relation request may name (`options.entity_labels`): they are the first
 * pass's prompt, and each entity found may become a head of the second pass.
 */
export const MAX_ENTITY_LABELS = 32;

/** Longest `params.instruction` of an extract request, in characters. */
export const MAX_INSTRUCTION_LENGTH = 500;

/** Longest NLI `options.hypothesis_template`, in characters (a short sentence around `{}`). */
export const MAX_TEMPLATE_LENGTH = 200;

/**
 * Most leaf fields an `output_schema` may define (properties, and properties of its nested
 * objects): each is a label of the span model's prompt.
 */
export const MAX_SCHEMA_FIELDS = 32;

/**
 * Most `enum` values of an `output_schema`, all fields together, and most characters of its string
 * values together. Span filling compiles every enum into a lower-cased lookup once per request;
 * these keep that, and the request's memory, small (an enum of 1000 strings of 30,000 characters
 * is 30 MB of keys for values no span of a few words can match).
 */
export const MAX_SCHEMA_ENUM_VALUES = 4096;
export const MAX_SCHEMA_ENUM_CHARS = 100_000;
