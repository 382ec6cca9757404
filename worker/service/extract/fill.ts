/**
 * Filling an output schema from spans: a scalar takes the best span whose text reads as its type
 * (and meets its constraints), an array every such span in text order; numbers, integers and
 * booleans are parsed from the span's text, and a span that does not parse is skipped.
 *
 * This runs on the main thread, so every step is linear in the spans (at most
 * SVC_MAX_SPANS_PER_LABEL per field): an enum is a lookup in the index compiled with the schema,
 * repeated values are dropped through a Set.
 */
import { enumKey, indexEnum, type SchemaField, type SchemaPlan } from "./output_schema.ts";

/** A span found for a field's label. */
export interface FieldSpan {
  text: string;
  score: number;
  /** Position in the text (orders an array's values). */
  start: number;
}

// An optional sign and currency sign, digits (thousands grouped by commas, or none), an optional
// decimal part and exponent: "42", "-3.5", "$1,299.99", "1e6".
const NUMBER_RE = /^([+-]?)\p{Sc}?\s?((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?)$/u;
const TRUE_WORDS = new Set(["true", "yes", "y"]);
const FALSE_WORDS = new Set(["false", "no", "n"]);

/** A number written in a span, undefined when the text is not one. */
export function parseNumber(text: string): number | undefined {
  const m = NUMBER_RE.exec(text.trim());
  if (!m) return undefined;
  const value = Number(m[1] + m[2].replaceAll(",", ""));
  return Number.isFinite(value) ? value : undefined;
}

/** A yes/no word in a span, undefined otherwise. */
export function parseBoolean(text: string): boolean | undefined {
  const word = text.trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return true;
  if (FALSE_WORDS.has(word)) return false;
  return undefined;
}

/** The value a span's text gives a field, or undefined when it does not read as one. */
export function coerce(text: string, f: SchemaField): string | number | boolean | undefined {
  let value: string | number | boolean | undefined;
  switch (f.type) {
    case "string": {
      const length = Array.from(text).length; // JSON schema counts code points
      if (f.minLength !== undefined && length < f.minLength) return undefined;
      if (f.maxLength !== undefined && length > f.maxLength) return undefined;
      if (f.enum) {
        // The schema's spelling wins: "paris" in the text fills "Paris".
        return lookUp(f, text);
      }
      return text;
    }
    case "boolean":
      value = parseBoolean(text);
      break;
    case "number":
    case "integer": {
      const n = parseNumber(text);
      if (n === undefined || (f.type === "integer" && !Number.isInteger(n))) return undefined;
      if (f.minimum !== undefined && n < f.minimum) return undefined;
      if (f.maximum !== undefined && n > f.maximum) return undefined;
      if (f.exclusiveMinimum !== undefined && n <= f.exclusiveMinimum) return undefined;
      if (f.exclusiveMaximum !== undefined && n >= f.exclusiveMaximum) return undefined;
      value = n;
      break;
    }
  }
  if (value !== undefined && f.enum) return lookUp(f, value);
  return value;
}

/** The enum value `value` matches (the schema's spelling), or undefined. */
function lookUp(
  f: SchemaField,
  value: string | number | boolean,
): string | number | boolean | undefined {
  // compileSchema indexes every enum; a field built by hand is indexed here.
  const hit = (f.enumIndex ?? indexEnum(f.enum!)).get(enumKey(value));
  // A string enum value only matches a string span, a number only a number.
  return hit !== undefined && typeof hit === typeof value ? hit : undefined;
}

/** Set an own property (a key such as `__proto__` stays data, never a prototype). */
function put(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** One field's value from its spans (best first), or undefined when none reads as its type. */
function valueOf(f: SchemaField, spans: readonly FieldSpan[]): unknown {
  if (!f.array) {
    for (const s of spans) {
      const v = coerce(s.text, f);
      if (v !== undefined) return v;
    }
    return undefined;
  }
  let found = spans.flatMap((s) => {
    const v = coerce(s.text, f);
    return v === undefined ? [] : [{ v, s }];
  });
  if (f.uniqueItems) {
    // Spans come best first: the best span of each value stays.
    const seen = new Set<unknown>();
    found = found.filter((x) => !seen.has(x.v) && seen.add(x.v));
  }
  if (f.maxItems !== undefined) found = found.slice(0, f.maxItems);
  found.sort((a, b) => a.s.start - b.s.start);
  return found.length > 0 ? found.map((x) => x.v) : undefined;
}

/**
 * The `data` of one item: `spans[k]` are the spans of `plan.labels[k]`, best first. A field not
 * found is left out, or null (a scalar) / [] (an array) when its object lists it as required; a
 * nested object appears when one of its fields is found or when it is required itself.
 */
export function fillData(plan: SchemaPlan, spans: readonly FieldSpan[][]): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  const nested = new Map<string, Record<string, unknown>>();
  for (const o of plan.objects) nested.set(o.name, {});
  plan.fields.forEach((f, i) => {
    let value = valueOf(f, spans[plan.labelOf[i]] ?? []);
    if (value === undefined && f.required) value = f.array ? [] : null;
    if (value === undefined) return;
    if (f.path.length === 1) put(data, f.path[0], value);
    else put(nested.get(f.path[0])!, f.path[1], value);
  });
  // Object properties go in schema order, after filling.
  const ordered: Record<string, unknown> = {};
  const order = new Map<string, number>();
  plan.fields.forEach((f, i) => order.has(f.path[0]) || order.set(f.path[0], i));
  for (const key of [...order.keys()]) {
    const obj = nested.get(key);
    if (obj === undefined) {
      if (Object.hasOwn(data, key)) put(ordered, key, data[key]);
      continue;
    }
    const required = plan.objects.find((o) => o.name === key)?.required ?? false;
    if (Object.keys(obj).length > 0 || required) put(ordered, key, obj);
  }
  return ordered;
}
