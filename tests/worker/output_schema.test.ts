/**
 * output_schema compilation and span filling, with hand-built spans and hand-computed values;
 * every filled object is validated against its schema with Ajv (a JSON-schema validator).
 */
import assert from "node:assert/strict";
import { Ajv } from "ajv";
import { ServiceError } from "@svc/shared/errors";
import { compileSchema } from "#worker/service/extract/output_schema.ts";
import {
  coerce,
  type FieldSpan,
  fillData,
  parseBoolean,
  parseNumber,
} from "#worker/service/extract/fill.ts";

const ajv = new Ajv({ strict: true, allErrors: true });

/** Spans for each label of a plan, from `{label: [[text, score, start]...]}`. */
function spansFor(
  labels: string[],
  by: Record<string, [string, number, number][]>,
): FieldSpan[][] {
  return labels.map((l) =>
    (by[l] ?? []).map(([text, score, start]) => ({ text, score, start }))
      .sort((a, b) => b.score - a.score)
  );
}

const ORDER = {
  type: "object",
  properties: {
    customer: { type: "string", description: "customer name" },
    quantity: { type: "integer" },
    unit_price: { type: "number", description: "price per unit" },
    express: { type: "boolean", description: "express shipping" },
    cities: { type: "array", items: { type: "string" }, description: "city" },
    status: { type: "string", enum: ["Open", "Closed"] },
  },
  required: ["customer", "quantity"],
};

Deno.test("compileSchema: labels from descriptions or names in words; shared labels found once", () => {
  const plan = compileSchema({
    ...ORDER,
    properties: { ...ORDER.properties, buyer: { type: "string", description: "customer name" } },
  });
  assert.deepEqual(
    plan.fields.map((f) => [f.path.join("."), f.label, f.type, f.array, f.required]),
    [
      ["customer", "customer name", "string", false, true],
      ["quantity", "quantity", "integer", false, true],
      ["unit_price", "price per unit", "number", false, false],
      ["express", "express shipping", "boolean", false, false],
      ["cities", "city", "string", true, false],
      ["status", "status", "string", false, false],
      ["buyer", "customer name", "string", false, false],
    ],
  );
  assert.deepEqual(plan.labels, [
    "customer name",
    "quantity",
    "price per unit",
    "express shipping",
    "city",
    "status",
  ]);
  assert.deepEqual(plan.labelOf, [0, 1, 2, 3, 4, 5, 0]);
  const nested = compileSchema({
    type: "object",
    properties: {
      author: {
        type: "object",
        properties: {
          first_name: { type: "string" },
          age: { type: "integer", description: "age" },
        },
        required: ["first_name"],
      },
    },
  });
  assert.deepEqual(nested.fields.map((f) => [f.path.join("."), f.label, f.required]), [
    ["author.first_name", "author first name", true],
    ["author.age", "age", false],
  ]);
});

Deno.test("compileSchema: unsupported constructs are a 400 naming them", () => {
  const bad: [string, unknown, RegExp][] = [
    ["not an object", [1], /must be a JSON schema object/],
    ["root not object", { type: "array", items: { type: "string" } }, /root must be type 'object'/],
    ["no properties", { type: "object" }, /properties/],
    [
      "$ref",
      { type: "object", properties: { a: { $ref: "#/$defs/x" } } },
      /properties\.a\.\$ref: references/,
    ],
    [
      "$defs at the root",
      { type: "object", properties: { a: { type: "string" } }, $defs: {} },
      /\$defs/,
    ],
    [
      "oneOf",
      { type: "object", properties: { a: { oneOf: [{ type: "string" }] } } },
      /oneOf: schema combinators/,
    ],
    ["two levels of objects", {
      type: "object",
      properties: {
        a: {
          type: "object",
          properties: { b: { type: "object", properties: { c: { type: "string" } } } },
        },
      },
    }, /properties\.a\.properties\.b: nested objects go one level deep/],
    ["array of objects", {
      type: "object",
      properties: {
        people: { type: "array", items: { type: "object", properties: { n: { type: "string" } } } },
      },
    }, /people\.items: arrays of objects are not supported/],
    [
      "unknown type",
      { type: "object", properties: { d: { type: "date" } } },
      /d\.type: unknown type 'date'/,
    ],
    [
      "union type",
      { type: "object", properties: { d: { type: ["string", "number"] } } },
      /not supported/,
    ],
    [
      "pattern",
      { type: "object", properties: { s: { type: "string", pattern: "^a" } } },
      /s\.pattern: 'pattern' is not supported/,
    ],
    [
      "format",
      { type: "object", properties: { s: { type: "string", format: "email" } } },
      /s\.format/,
    ],
    ["minItems", {
      type: "object",
      properties: { s: { type: "array", items: { type: "string" }, minItems: 1 } },
    }, /minItems/],
    [
      "required unknown",
      { type: "object", properties: { a: { type: "string" } }, required: ["b"] },
      /names 'b'/,
    ],
    ["enum of the wrong type", {
      type: "object",
      properties: { n: { type: "integer", enum: [1.5] } },
    }, /enum/],
    ["control character label", {
      type: "object",
      properties: { a: { type: "string", description: "x\ny" } },
    }, /control character/],
    ["missing type", { type: "object", properties: { a: { description: "x" } } }, /needs a 'type'/],
    ["too many fields", {
      type: "object",
      properties: Object.fromEntries(
        Array.from({ length: 33 }, (_, i) => [`f${i}`, { type: "string" }]),
      ),
    }, /33 fields; at most 32/],
  ];
  for (const [what, schema, message] of bad) {
    assert.throws(() => compileSchema(schema), (e: unknown) => {
      assert.ok(e instanceof ServiceError && e.code === "INVALID_INPUT", what);
      assert.match((e as Error).message, message, what);
      return true;
    }, what);
  }
});

Deno.test("coercion: numbers, integers and booleans are read from the span text", () => {
  const cases: [string, number | undefined][] = [
    ["42", 42],
    ["-3.5", -3.5],
    ["$1,299.99", 1299.99],
    ["€ 20", 20],
    ["1e3", 1000],
    ["1,000,000", 1_000_000],
    ["12,34", undefined],
    ["3.5.1", undefined],
    ["50%", undefined],
    ["forty", undefined],
    ["1e999", undefined],
  ];
  for (const [text, want] of cases) assert.equal(parseNumber(text), want, text);
  assert.equal(parseBoolean("Yes"), true);
  assert.equal(parseBoolean("no"), false);
  assert.equal(parseBoolean("maybe"), undefined);
  const plan = compileSchema({
    type: "object",
    properties: {
      n: { type: "integer", minimum: 1, exclusiveMaximum: 10 },
      city: { type: "string", enum: ["Paris", "London"] },
      code: { type: "string", minLength: 2, maxLength: 3 },
    },
  });
  const [n, city, code] = plan.fields;
  assert.equal(coerce("3.0", n), 3);
  assert.equal(coerce("3.5", n), undefined, "not an integer");
  assert.equal(coerce("0", n), undefined, "below minimum");
  assert.equal(coerce("10", n), undefined, "at the exclusive maximum");
  assert.equal(coerce("paris", city), "Paris", "the schema's spelling");
  assert.equal(coerce("Rome", city), undefined);
  assert.equal(coerce("😀😀", code), "😀😀", "lengths count code points");
  assert.equal(coerce("😀😀😀😀", code), undefined);
});

Deno.test("fillData: best parsing span for scalars, all for arrays in text order; required → null / []", () => {
  const plan = compileSchema(ORDER);
  // Hand-computed: quantity's best span "twelve" does not parse, the next one "12" does;
  // price "$3.50" → 3.5; express "yes" → true; cities in text order; status "closed" → "Closed".
  const data = fillData(
    plan,
    spansFor(plan.labels, {
      "customer name": [["Alice", 0.9, 0], ["Bob", 0.7, 40]],
      quantity: [["twelve", 0.95, 10], ["12", 0.6, 20]],
      "price per unit": [["$3.50", 0.8, 25]],
      "express shipping": [["yes", 0.55, 50]],
      city: [["Paris", 0.6, 60], ["Berlin", 0.9, 70], ["Rome", 0.5, 5]],
      status: [["closed", 0.7, 80]],
    }),
  );
  assert.deepEqual(data, {
    customer: "Alice",
    quantity: 12,
    unit_price: 3.5,
    express: true,
    cities: ["Rome", "Paris", "Berlin"],
    status: "Closed",
  });
  assert.ok(ajv.validate(ORDER, data), JSON.stringify(ajv.errors));

  // Nothing found: required scalars are null, the rest left out.
  const empty = fillData(plan, spansFor(plan.labels, { quantity: [["many", 0.9, 0]] }));
  assert.deepEqual(empty, { customer: null, quantity: null });
  // null only validates where the schema allows it: declare required fields [type, "null"].
  assert.equal(ajv.validate(ORDER, empty), false, "plain required types reject null");
  const nullable = {
    ...ORDER,
    properties: {
      ...ORDER.properties,
      customer: { type: ["string", "null"], description: "customer name" },
      quantity: { type: ["integer", "null"] },
    },
  };
  const nullablePlan = compileSchema(nullable);
  assert.ok(ajv.validate(nullable, fillData(nullablePlan, spansFor(nullablePlan.labels, {}))));
});

Deno.test("fillData: uniqueItems, maxItems (best first, then text order), nested objects, odd keys", () => {
  const schema = {
    type: "object",
    properties: {
      tags: { type: "array", items: { type: "string" }, uniqueItems: true, maxItems: 2 },
      scores: { type: "array", items: { type: "number" } },
      author: {
        type: "object",
        properties: { name: { type: "string" }, age: { type: "integer" } },
        required: ["age"],
      },
      editor: { type: "object", properties: { name: { type: "string", description: "editor" } } },
      __proto__: { type: "string", description: "odd key" },
    },
    required: ["scores", "editor"],
  };
  // `__proto__` in an object literal sets the prototype: build that property by hand.
  Object.defineProperty(schema.properties, "__proto__", {
    value: { type: "string", description: "odd key" },
    enumerable: true,
  });
  const plan = compileSchema(schema);
  const data = fillData(
    plan,
    spansFor(plan.labels, {
      tags: [["red", 0.9, 30], ["blue", 0.8, 10], ["red", 0.7, 50], ["green", 0.6, 0]],
      "author name": [["Alice", 0.8, 0]],
      "odd key": [["x", 0.9, 0]],
    }),
  );
  // tags: unique → red(0.9), blue(0.8), green(0.6); best 2 → red, blue; in text order → blue, red.
  assert.equal(
    JSON.stringify(data),
    '{"tags":["blue","red"],"scores":[],"author":{"name":"Alice","age":null},"editor":{},' +
      '"__proto__":"x"}',
  );
  assert.equal(Object.getPrototypeOf(data), Object.prototype, "no prototype was set");
  assert.ok(Object.hasOwn(data, "__proto__"));
});
