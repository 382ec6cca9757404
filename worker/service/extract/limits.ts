/**
 * Documented bounds of extract requests (README, "Extract"). Each one keeps a request's prompt,
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
