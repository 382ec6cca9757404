/**
 * `params.output_schema` for span models: a JSON schema whose leaf properties become span labels
 * and whose types say how a span's text becomes a value. Only the constructs span filling can
 * honour are accepted, so that every answer validates against the schema; anything else is a 400
 * that names the construct and where it is.
 */
import { invalidInput } from "@svc/shared/errors";
import { checkLabel } from "./labels.ts";
import { MAX_SCHEMA_ENUM_CHARS, MAX_SCHEMA_ENUM_VALUES, MAX_SCHEMA_FIELDS } from "./limits.ts";

/** The value types a span can be read as. */
export type ScalarType = "string" | "number" | "integer" | "boolean";

/** One leaf of the schema: where it goes, which label finds it, how its text is read. */
export interface SchemaField {
  /** Property names from the root (one, or two under a nested object). */
  path: string[];
  /** The span label: the property's description, else its name in words. */
  label: string;
  type: ScalarType;
  /** An array of values (all spans) rather than one value (the best span). */
  array: boolean;
  /** Listed in its object's `required`: null (a scalar) or [] (an array) when nothing is found. */
  required: boolean;
  /** Allowed values (`enum`); a span matching none is skipped. */
  enum?: readonly (string | number | boolean)[];
  /**
   * `enum` compiled once: a string by its lower-cased form (→ the schema's spelling, the first
   * one listed), a number or boolean as itself. A span is then matched in O(its length).
   */
  enumIndex?: ReadonlyMap<string | number | boolean, string | number | boolean>;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  /** Arrays: keep at most this many values (the best-scoring). */
  maxItems?: number;
  /** Arrays: drop repeated values. */
  uniqueItems?: boolean;
}

/** A nested object property: present when one of its fields is found, or when required. */
interface SchemaObject {
  name: string;
  required: boolean;
}

/** A compiled schema: its leaf fields and the distinct labels they are found with. */
export interface SchemaPlan {
  fields: SchemaField[];
  objects: SchemaObject[];
  /** Distinct field labels, in field order; `labelOf[i]` is field i's index here. */
  labels: string[];
  labelOf: number[];
}

/** Keywords that only annotate (never constrain) a schema or property. */
const ANNOTATIONS = new Set([
  "$schema",
  "$id",
  "$comment",
  "title",
  "description",
  "examples",
  "default",
]);
const SCALARS = new Set<string>(["string", "number", "integer", "boolean"]);
const SCALAR_KEYWORDS: Record<ScalarType, readonly string[]> = {
  string: ["enum", "minLength", "maxLength"],
  number: ["enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"],
  integer: ["enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"],
  boolean: ["enum"],
};
/** Longest label a description (or a name) may give, in characters. */
const MAX_FIELD_LABEL = 200;

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function fail(where: string, message: string): never {
  throw invalidInput(`${where}: ${message}`);
}

/** A property name as label words: `first_name` → `first name`. */
function nameWords(name: string): string {
  return name.replace(/[_-]+/g, " ").trim();
}

/** `type` as a type name and whether `null` is allowed (`["string", "null"]`). */
function typeOf(node: Json, where: string): { type: string; nullable: boolean } {
  const t = node.type;
  if (typeof t === "string") return { type: t, nullable: false };
  if (Array.isArray(t) && t.length === 2 && t.includes("null")) {
    const other = t.find((x) => x !== "null");
    if (typeof other === "string" && other !== "null") return { type: other, nullable: true };
  }
  if (t === undefined) fail(where, "every property needs a 'type'");
  return fail(where, `type ${JSON.stringify(t)} is not supported (one type, or [type, "null"])`);
}

const REFERENCES = new Set(["$ref", "$defs", "definitions", "$dynamicRef", "$anchor"]);
const COMBINATORS = new Set(["oneOf", "anyOf", "allOf", "not", "if", "then", "else"]);

/** Reject references and combinators first: they replace a type, so name them, not the type. */
function refuseStructure(node: Json, where: string): void {
  for (const key of Object.keys(node)) {
    if (REFERENCES.has(key)) {
      fail(`${where}.${key}`, "references are not supported; write the properties out");
    }
    if (COMBINATORS.has(key)) fail(`${where}.${key}`, "schema combinators are not supported");
  }
}

/** Reject any keyword outside `allowed` (and the annotations), naming it. */
function onlyKeywords(node: Json, allowed: readonly string[], where: string, what: string): void {
  refuseStructure(node, where);
  for (const key of Object.keys(node)) {
    if (ANNOTATIONS.has(key) || allowed.includes(key)) continue;
    fail(`${where}.${key}`, `'${key}' is not supported for ${what}`);
  }
}

function numberKeyword(node: Json, key: string, where: string): number | undefined {
  const v = node[key];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) fail(`${where}.${key}`, "must be a number");
  return v;
}

function countKeyword(node: Json, key: string, where: string): number | undefined {
  const v = numberKeyword(node, key, where);
  if (v !== undefined && (!Number.isInteger(v) || v < 0)) {
    fail(`${where}.${key}`, "must be a non-negative integer");
  }
  return v;
}

/** A scalar's constraints (`node` is the property, or an array's `items`). */
function scalarField(
  node: Json,
  type: ScalarType,
  where: string,
): Omit<SchemaField, "path" | "label" | "array" | "required"> {
  const field: Omit<SchemaField, "path" | "label" | "array" | "required"> = { type };
  if (node.enum !== undefined) {
    const values = node.enum;
    const ok = Array.isArray(values) && values.length > 0 &&
      values.every((v) =>
        type === "string"
          ? typeof v === "string"
          : type === "boolean"
          ? typeof v === "boolean"
          : typeof v === "number" && (type === "number" || Number.isInteger(v))
      );
    if (!ok) fail(`${where}.enum`, `must be a non-empty list of ${type} values`);
    field.enum = values as (string | number | boolean)[];
  }
  for (const key of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] as const) {
    const v = numberKeyword(node, key, where);
    if (v !== undefined) field[key] = v;
  }
  for (const key of ["minLength", "maxLength"] as const) {
    const v = countKeyword(node, key, where);
    if (v !== undefined) field[key] = v;
  }
  return field;
}

/** `required`: names of properties of this object. */
function requiredOf(node: Json, properties: Json, where: string): Set<string> {
  const r = node.required;
  if (r === undefined) return new Set();
  if (!Array.isArray(r) || !r.every((n) => typeof n === "string")) {
    fail(`${where}.required`, "must be a list of property names");
  }
  for (const n of r as string[]) {
    if (!Object.hasOwn(properties, n)) {
      fail(`${where}.required`, `names '${n}', which is not a property`);
    }
  }
  return new Set(r as string[]);
}

/** The `properties` of an object node, checked. */
function propertiesOf(node: Json, where: string): Json {
  const p = node.properties;
  if (!isObject(p) || Object.keys(p).length === 0) {
    fail(where, "an object needs 'properties' with at least one property");
  }
  if (node.additionalProperties !== undefined && typeof node.additionalProperties !== "boolean") {
    fail(`${where}.additionalProperties`, "only true or false is supported");
  }
  return p;
}

/**
 * Compile `params.output_schema`: the root is `type: "object"` with `properties`; a property is a
 * scalar (string, number, integer, boolean, optionally with `null`), an array of scalars, or an
 * object (one level deep) of those. Throws INVALID_INPUT naming any other construct.
 */
export function compileSchema(schema: unknown): SchemaPlan {
  const root = "params.output_schema";
  if (!isObject(schema)) fail(root, "must be a JSON schema object");
  refuseStructure(schema, root);
  if (schema.type !== "object") fail(`${root}.type`, "the root must be type 'object'");
  onlyKeywords(
    schema,
    ["type", "properties", "required", "additionalProperties"],
    root,
    "the root",
  );
  const fields: SchemaField[] = [];
  const objects: SchemaObject[] = [];
  const addLeaf = (node: Json, path: string[], required: boolean, where: string, label: string) => {
    refuseStructure(node, where);
    const { type, nullable } = typeOf(node, where);
    if (type === "array") {
      if (nullable) {
        fail(`${where}.type`, "an array cannot also be null (an empty list means none)");
      }
      onlyKeywords(node, ["type", "items", "maxItems", "uniqueItems"], where, "an array");
      const items = node.items;
      if (!isObject(items)) fail(`${where}.items`, "an array needs 'items' with a scalar type");
      const it = typeOf(items, `${where}.items`);
      if (it.type === "object" || it.type === "array") {
        fail(
          `${where}.items`,
          `arrays of ${it.type}s are not supported: span filling finds values, it cannot group ` +
            `them into records`,
        );
      }
      if (!SCALARS.has(it.type)) fail(`${where}.items.type`, `unknown type '${it.type}'`);
      const t = it.type as ScalarType;
      onlyKeywords(items, ["type", ...SCALAR_KEYWORDS[t]], `${where}.items`, `${t} items`);
      const uniqueItems = node.uniqueItems;
      if (uniqueItems !== undefined && typeof uniqueItems !== "boolean") {
        fail(`${where}.uniqueItems`, "must be true or false");
      }
      fields.push({
        path,
        label,
        array: true,
        required,
        ...scalarField(items, t, `${where}.items`),
        maxItems: countKeyword(node, "maxItems", where),
        uniqueItems: uniqueItems === true,
      });
      return;
    }
    if (type === "object") {
      fail(where, "objects go one level deep under the root and cannot be nullable");
    }
    if (!SCALARS.has(type)) fail(`${where}.type`, `unknown type '${type}'`);
    const t = type as ScalarType;
    onlyKeywords(node, ["type", ...SCALAR_KEYWORDS[t]], where, `a ${t}`);
    fields.push({ path, label, array: false, required, ...scalarField(node, t, where) });
  };
  const labelFor = (node: Json, fallback: string, where: string): string => {
    const d = node.description;
    if (d !== undefined && typeof d !== "string") fail(`${where}.description`, "must be a string");
    const label = typeof d === "string" && d.trim().length > 0 ? d : fallback;
    return checkLabel(label, `${where} (its label)`, MAX_FIELD_LABEL);
  };
  const properties = propertiesOf(schema, root);
  const required = requiredOf(schema, properties, root);
  for (const [name, node] of Object.entries(properties)) {
    const where = `${root}.properties.${name}`;
    if (!isObject(node)) fail(where, "must be a schema object");
    refuseStructure(node, where);
    if (node.type === "object") {
      onlyKeywords(
        node,
        ["type", "properties", "required", "additionalProperties"],
        where,
        "an object",
      );
      const inner = propertiesOf(node, where);
      const innerRequired = requiredOf(node, inner, where);
      objects.push({ name, required: required.has(name) });
      for (const [child, childNode] of Object.entries(inner)) {
        const at = `${where}.properties.${child}`;
        if (!isObject(childNode)) fail(at, "must be a schema object");
        refuseStructure(childNode, at);
        if (childNode.type === "object") {
          fail(
            at,
            "nested objects go one level deep (a property of the root may be an object of values)",
          );
        }
        const fallback = `${nameWords(name)} ${nameWords(child)}`;
        addLeaf(
          childNode,
          [name, child],
          innerRequired.has(child),
          at,
          labelFor(childNode, fallback, at),
        );
      }
      continue;
    }
    addLeaf(
      node,
      [name],
      required.has(name),
      where,
      labelFor(node, nameWords(name) || name, where),
    );
  }
  if (fields.length > MAX_SCHEMA_FIELDS) {
    fail(root, `has ${fields.length} fields; at most ${MAX_SCHEMA_FIELDS}`);
  }
  compileEnums(fields, root);
  const labels: string[] = [];
  const labelOf = fields.map((f) => {
    const at = labels.indexOf(f.label);
    return at >= 0 ? at : labels.push(f.label) - 1;
  });
  return { fields, objects, labels, labelOf };
}

/** The key a value is looked up by: strings match case-insensitively. */
export function enumKey(v: string | number | boolean): string | number | boolean {
  return typeof v === "string" ? v.toLowerCase() : v;
}

/**
 * Check the schema's enums against MAX_SCHEMA_ENUM_VALUES / MAX_SCHEMA_ENUM_CHARS (before anything
 * is built from them), then index each one by {@link enumKey}.
 */
function compileEnums(fields: SchemaField[], root: string): void {
  let values = 0;
  let chars = 0;
  for (const f of fields) {
    if (!f.enum) continue;
    values += f.enum.length;
    for (const v of f.enum) if (typeof v === "string") chars += v.length;
  }
  if (values > MAX_SCHEMA_ENUM_VALUES || chars > MAX_SCHEMA_ENUM_CHARS) {
    fail(
      root,
      `its enums hold ${values} values of ${chars} characters together; at most ` +
        `${MAX_SCHEMA_ENUM_VALUES} values and ${MAX_SCHEMA_ENUM_CHARS} characters`,
    );
  }
  for (const f of fields) if (f.enum) f.enumIndex = indexEnum(f.enum);
}

/** An enum's values by {@link enumKey}; the first spelling listed wins. */
export function indexEnum(
  values: readonly (string | number | boolean)[],
): Map<string | number | boolean, string | number | boolean> {
  const index = new Map<string | number | boolean, string | number | boolean>();
  for (const v of values) {
    const key = enumKey(v);
    if (!index.has(key)) index.set(key, v);
  }
  return index;
}
