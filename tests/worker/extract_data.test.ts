/**
 * POST /v1/extract with params.output_schema on fixture/gliner: structured data from spans.
 * Expected values come from direct runs of the fixture with the fields' labels in the prompt
 * (tests/worker/gliner_expected.ts), spans selected per label, and the span text read here as
 * each field's type; every answer is validated against its schema with Ajv.
 */
import assert from "node:assert/strict";
import { Ajv } from "ajv";
import { GLINER_TOKENS, MAX_WIDTH, MAX_WORDS } from "@svc/fixture-models/models";
import {
  assertExtractKeys,
  type Json,
  postJson,
  type TestWorker,
  withFakeBackendWorker,
  withWorker,
} from "./harness.ts";
import { decodeMsgpackView } from "./msgpack_view.ts";
import {
  candidates,
  flat,
  type GlinerFixture,
  inCodePoints,
  type Span,
  toEnts,
  words,
} from "./gliner_expected.ts";

const URL_PATH = "/v1/extract/fixture/gliner";
const FX: GlinerFixture = {
  name: "gliner",
  layout: "span",
  tokens: GLINER_TOKENS,
  maxWidth: MAX_WIDTH,
  maxWords: MAX_WORDS,
};
const TEXTS = [
  "Order 12 units at $3.50 each, express: yes. Alice ships to Paris and Berlin.",
  "Bob paid $1,299 for 3 bikes in London; express no.",
];
const SCHEMA = {
  type: "object",
  properties: {
    customer: { type: "string", description: "person" },
    quantity: { type: "integer", description: "number of units" },
    unit_price: { type: "number", description: "price" },
    express: { type: "boolean", description: "express shipping" },
    cities: { type: "array", items: { type: "string" }, description: "city" },
  },
};
const FIELDS = Object.entries(SCHEMA.properties).map(([name, p]) => ({
  name,
  label: p.description,
  type: p.type === "array" ? "string" : p.type,
  array: p.type === "array",
}));
const ajv = new Ajv({ strict: true });

/** The span text read as a field's type (the cases these texts can produce), else undefined. */
function read(text: string, type: string): unknown {
  if (type === "string") return text;
  if (type === "boolean") {
    const w = text.toLowerCase();
    return ["yes", "true", "y"].includes(w)
      ? true
      : ["no", "false", "n"].includes(w)
      ? false
      : undefined;
  }
  if (!/^[$€]?\d+(,\d{3})*(\.\d+)?$/.test(text)) return undefined;
  const n = Number(text.replace(/^[$€]/, "").replaceAll(",", ""));
  return type === "integer" && !Number.isInteger(n) ? undefined : n;
}

/** Expected data (and entities of `entityLabels`, read in the same pass) of one text. */
async function expected(
  text: string,
  threshold: number,
  entityLabels: string[] = [],
): Promise<{ data: Record<string, unknown>; entities: Json[] }> {
  const labels = [...entityLabels, ...new Set(FIELDS.map((f) => f.label))];
  const found = await candidates(FX, text, labels, { threshold });
  const n = entityLabels.length;
  const entities = toEnts(text, flat(found.filter((s) => s.label < n)), entityLabels)
    .map((e) => inCodePoints(text, e));
  const ws = words(text);
  const spanText = (s: Span) => text.slice(ws[s.start].start, ws[s.end].end);
  const data: Record<string, unknown> = {};
  for (const f of FIELDS) {
    const k = labels.indexOf(f.label);
    const spans = flat(found.filter((s) => s.label === k)).sort((a, b) => b.score - a.score);
    const values = spans.map((s) => ({ v: read(spanText(s), f.type), s }))
      .filter((x) => x.v !== undefined);
    if (values.length === 0) continue;
    data[f.name] = f.array
      ? values.sort((a, b) => a.s.start - b.s.start).map((x) => x.v)
      : values[0].v;
  }
  return { data, entities };
}

async function extract(w: TestWorker, texts: string[], params: Json): Promise<Json[]> {
  const r = await postJson(`${w.url}${URL_PATH}`, {
    items: texts.map((text) => ({ text })),
    params,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.items;
}

Deno.test("extract data: fields filled from spans, typed, matching direct runs; valid per Ajv", async () => {
  await withWorker(async (w) => {
    for (const threshold of [0, 0.5]) {
      const items = await extract(w, TEXTS, { output_schema: SCHEMA, options: { threshold } });
      for (const [i, text] of TEXTS.entries()) {
        // No labels: no entities, only data.
        assertExtractKeys(items[i], [], true);
        const want = await expected(text, threshold);
        assert.deepEqual(items[i].data, want.data, `text ${i} at ${threshold}`);
        assert.ok(ajv.validate(SCHEMA, items[i].data), JSON.stringify(ajv.errors));
      }
    }
    const filled = (await extract(w, TEXTS, { output_schema: SCHEMA, options: { threshold: 0 } }))
      .map((it) => it.data);
    assert.ok(filled.some((d) => typeof d.quantity === "number"), "an integer was read");
    assert.ok(filled.some((d) => typeof d.unit_price === "number"), "a number was read");
    assert.ok(filled.some((d) => typeof d.express === "boolean"), "a boolean was read");
    assert.ok(filled.some((d) => Array.isArray(d.cities) && d.cities.length > 1), "an array");

    const res = await fetch(`${w.url}${URL_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        items: [{ id: "m", text: TEXTS[0] }],
        params: { output_schema: SCHEMA, options: { threshold: 0 } },
      }),
    });
    const packed = decodeMsgpackView(new Uint8Array(await res.arrayBuffer()));
    assert.deepEqual(packed.items[0], {
      id: "m",
      entities: [],
      relations: [],
      classifications: [],
      objects: [],
      data: (await expected(TEXTS[0], 0)).data,
    });
  });
});

Deno.test("extract data: with labels, entities and data come from one pass; required fields are null", async () => {
  await withWorker(async (w) => {
    const entityLabels = ["organization", "location"];
    const items = await extract(w, TEXTS, {
      labels: entityLabels,
      output_schema: SCHEMA,
      options: { threshold: 0.3 },
    });
    for (const [i, text] of TEXTS.entries()) {
      assertExtractKeys(items[i], ["entities"], true);
      const want = await expected(text, 0.3, entityLabels);
      assert.deepEqual(items[i].data, want.data, `data ${i}`);
      assert.deepEqual(
        items[i].entities.map((e: Json) => [e.label, e.start, e.end, e.text]),
        want.entities.map((e: Json) => [e.label, e.start, e.end, e.text]),
        `entities ${i}`,
      );
    }
    // Nothing reaches threshold 1: required scalars are null, required arrays empty, others absent.
    const required = {
      ...SCHEMA,
      properties: {
        ...SCHEMA.properties,
        customer: { type: ["string", "null"], description: "person" },
        quantity: { type: ["integer", "null"], description: "number of units" },
      },
      required: ["customer", "quantity", "cities"],
    };
    const [none] = await extract(w, [TEXTS[0]], {
      output_schema: required,
      options: { threshold: 1 },
    });
    assert.deepEqual(none.data, { customer: null, quantity: null, cities: [] });
    assert.ok(ajv.validate(required, none.data), JSON.stringify(ajv.errors));
  });
});

Deno.test("extract data: relations models fill data in their first pass", async () => {
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}/v1/extract/fixture/gliner-multitask`, {
      items: [{ text: TEXTS[0] }],
      params: {
        labels: ["ships to"],
        output_schema: SCHEMA,
        options: { entity_labels: ["person", "location"], threshold: 0 },
      },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assertExtractKeys(r.body.items[0], ["entities", "relations"], true);
    assert.ok(ajv.validate(SCHEMA, r.body.items[0].data), JSON.stringify(ajv.errors));
    const only = await postJson(`${w.url}/v1/extract/fixture/gliner-multitask`, {
      items: [{ text: TEXTS[0] }],
      params: { output_schema: SCHEMA },
    });
    assert.equal(only.status, 200, JSON.stringify(only.body));
    assertExtractKeys(only.body.items[0], [], true);
  });
});

Deno.test("extract data: unsupported schemas and non-span models are a 400 naming the problem", async () => {
  await withFakeBackendWorker(async (w) => {
    const cases: [string, string, Json, RegExp][] = [
      [
        "$ref",
        URL_PATH,
        { type: "object", properties: { a: { $ref: "#/x" } } },
        /properties\.a\.\$ref/,
      ],
      ["array of objects", URL_PATH, {
        type: "object",
        properties: { p: { type: "array", items: { type: "object", properties: {} } } },
      }, /arrays of objects/],
      [
        "unknown type",
        URL_PATH,
        { type: "object", properties: { d: { type: "date" } } },
        /unknown type/,
      ],
      ["deep nesting", URL_PATH, {
        type: "object",
        properties: {
          a: { type: "object", properties: { b: { type: "object", properties: {} } } },
        },
      }, /one level deep/],
      ["not an object", URL_PATH, "a schema", /output_schema/],
      ["token classification", "/v1/extract/fixture/ner", SCHEMA, /span models/],
      ["GLiClass", "/v1/extract/fixture/gliclass", SCHEMA, /span models/],
    ];
    for (const [what, path, schema, message] of cases) {
      const r = await postJson(`${w.url}${path}`, {
        items: [{ text: "a" }],
        params: { labels: ["x"], output_schema: schema },
      });
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.detail.message, message, what);
    }
  });
});
