/**
 * Issue 23.2: filling an output schema runs on the worker's main thread, so its cost must be
 * linear in the spans. An enum is compiled once into a lower-cased index (each value and each
 * span lower-cased once, counted here), repeated values are dropped through a Set, and a schema's
 * enums are bounded in size (a 400 naming the bound).
 */
import assert from "node:assert/strict";
import { compileSchema } from "#worker/service/extract/output_schema.ts";
import { type FieldSpan, fillData } from "#worker/service/extract/fill.ts";
import { MAX_SCHEMA_ENUM_CHARS, MAX_SCHEMA_ENUM_VALUES } from "#worker/service/extract/limits.ts";
import { ServiceError } from "@svc/shared/errors";

/** Calls of String.prototype.toLowerCase made while `fn` runs. */
function countLowerCasing<T>(fn: () => T): { result: T; calls: number } {
  const original = String.prototype.toLowerCase;
  let calls = 0;
  String.prototype.toLowerCase = function (this: string) {
    calls++;
    return original.call(this);
  };
  try {
    return { result: fn(), calls };
  } finally {
    String.prototype.toLowerCase = original;
  }
}

const citySchema = (values: string[]) => ({
  type: "object",
  properties: { cities: { type: "array", items: { type: "string", enum: values } } },
});

Deno.test("enum: each value and each span lower-cased once, not once per (span, value) pair", () => {
  const values = Array.from({ length: 1000 }, (_, i) => `City ${i}`);
  const { result: plan, calls: compiled } = countLowerCasing(() =>
    compileSchema(citySchema(values))
  );
  assert.equal(compiled, 1000);
  const spans: FieldSpan[] = Array.from({ length: 1024 }, (_, i) => ({
    text: i % 2 === 0 ? `city ${i}` : `nowhere ${i}`,
    score: 1 - i / 2048,
    start: i,
  }));
  const { result: data, calls } = countLowerCasing(() => fillData(plan, [spans]));
  // Before: two per (span, value) pair until a match, ~1.5 million here.
  assert.equal(calls, spans.length);
  const cities = data.cities as string[];
  assert.equal(cities.length, 500, "every even span up to City 998 matches");
  assert.equal(cities[0], "City 0", "the schema's spelling");
});

Deno.test("enum: at most MAX_SCHEMA_ENUM_VALUES values and MAX_SCHEMA_ENUM_CHARS characters", () => {
  const refused = (schema: unknown): string => {
    try {
      compileSchema(schema);
    } catch (err) {
      assert.ok(err instanceof ServiceError && err.code === "INVALID_INPUT");
      return err.message;
    }
    throw new Error("accepted");
  };
  // The schema: 1000 values of 30,000 characters.
  const huge = Array.from({ length: 1000 }, (_, i) => `${i}`.padEnd(30_000, "x"));
  assert.match(
    refused(citySchema(huge)),
    new RegExp(
      `enums hold 1000 values of 30000000 characters together; at most ` +
        `${MAX_SCHEMA_ENUM_VALUES} values and ${MAX_SCHEMA_ENUM_CHARS} characters`,
    ),
  );
  // Counted across fields.
  const half = Array.from({ length: MAX_SCHEMA_ENUM_VALUES / 2 + 1 }, (_, i) => `v${i}`);
  assert.match(
    refused({
      type: "object",
      properties: {
        a: { type: "string", enum: half },
        b: { type: "array", items: { type: "string", enum: half } },
      },
    }),
    new RegExp(`enums hold ${2 * half.length} values`),
  );
  // At the bounds: accepted.
  const chars = Array.from({ length: 10 }, () => "x".repeat(MAX_SCHEMA_ENUM_CHARS / 10));
  compileSchema(citySchema(chars.map((c, i) => `${i}${c.slice(1)}`)));
  compileSchema(citySchema(Array.from({ length: MAX_SCHEMA_ENUM_VALUES }, (_, i) => `${i}`)));
});

Deno.test("uniqueItems: de-duplication is linear (200,000 spans, half of them repeats)", () => {
  const plan = compileSchema({
    type: "object",
    properties: { tags: { type: "array", items: { type: "string" }, uniqueItems: true } },
  });
  const n = 200_000;
  const spans: FieldSpan[] = Array.from({ length: n }, (_, i) => ({
    text: `tag ${i % (n / 2)}`,
    score: 1 - i / n,
    start: n - i,
  }));
  // Before: filter + findIndex, about n²/4 = 10¹⁰ comparisons (minutes); linear takes well under
  // a second even on a busy machine. The bound is generous on purpose.
  const t0 = performance.now();
  const data = fillData(plan, [spans]);
  const ms = performance.now() - t0;
  const tags = data.tags as string[];
  assert.equal(tags.length, n / 2);
  assert.equal(new Set(tags).size, n / 2);
  // The best-scoring span of each value stays: the first half, whose starts decrease.
  assert.equal(tags[0], `tag ${n / 2 - 1}`);
  assert.ok(ms < 10_000, `${ms} ms`);
});
