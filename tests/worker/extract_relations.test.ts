/**
 * POST /v1/extract with fixture/gliner-multitask (token-level GLiNER): relations. Expected
 * results come from direct runs of the fixture (tests/worker/gliner_expected.ts) assembled here:
 * entities of the entity types first; then, with the relation instruction before the text, one
 * `"{head} <> {relation}"` label per distinct head and relation type (relation-major, heads in
 * order of appearance, labels cut into prompts that leave half of the model's tokens for text);
 * the spans found are tails.
 */
import assert from "node:assert/strict";
import { GLINER_TOKENS, MAX_WIDTH, MAX_WORDS } from "@svc/fixture-models/models";
import { fixtureTokenizer } from "../fixtures/testing.ts";
import { assertExtractKeys, type Json, postJson, type TestWorker, withWorker } from "./harness.ts";
import { decodeMsgpackView } from "./msgpack_view.ts";
import {
  candidates,
  type Ent,
  expectedEntities,
  flat,
  type GlinerFixture,
  inCodePoints,
  type Span,
  words,
} from "./gliner_expected.ts";

const URL_PATH = "/v1/extract/fixture/gliner-multitask";
const FX: GlinerFixture = {
  name: "gliner-multitask",
  layout: "token",
  tokens: GLINER_TOKENS,
  maxWidth: MAX_WIDTH,
  maxWords: MAX_WORDS,
};
const RELATION_PROMPT = "Extract relationships between entities from the text:";
/** Tokens the fixture reads, less [CLS] and [SEP]. */
const ROOM = 256 - 2;
const ENTITY_LABELS = ["person", "organization", "location"];
const RELATIONS = ["works for", "lives in"];
const TEXTS = [
  "Alice lives in Paris and works for Google with Bob.",
  "Bob visited London; the bank of london hired Alice.",
];

interface Rel {
  head: string;
  tail: string;
  relation: string;
  score: number;
}

const tok = fixtureTokenizer(GLINER_TOKENS);
const tokens = (s: string) => tok.encode(s, { add_special_tokens: false }).ids.length;

/** Labels cut into prompts of at most half the room left after the instruction. */
function chunks(labels: string[], lead: string): string[][] {
  const leadTokens = words(lead).reduce((n, w) => n + tokens(w.text), 0);
  const budget = Math.floor((ROOM - leadTokens) / 2);
  const out: string[][] = [];
  let cur: string[] = [];
  let used = 0;
  for (const l of labels) {
    const need = 1 + tokens(l);
    if (cur.length > 0 && used + need + 1 > budget) {
      out.push(cur);
      cur = [];
      used = 0;
    }
    cur.push(l);
    used += need;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Expected entities (code points) and relations of one text. */
async function expected(
  text: string,
  opts: {
    threshold?: number;
    instruction?: string;
    relations?: string[];
    entityLabels?: string[];
    /** Heads the client named (else the entities found are the heads). */
    heads?: string[];
    /** The only texts a tail may be (the entities a client named). */
    tails?: string[];
  } = {},
): Promise<{ entities: Ent[]; relations: Rel[] }> {
  const threshold = opts.threshold ?? 0.5;
  const relations = opts.relations ?? RELATIONS;
  const ents = await expectedEntities(FX, text, opts.entityLabels ?? ENTITY_LABELS, { threshold });
  const heads = opts.heads ?? [...new Set(ents.map((e) => e.text))];
  const found: Span[] = [];
  const lead = opts.instruction ?? RELATION_PROMPT;
  if (heads.length > 0) {
    let offset = 0;
    for (const chunk of chunks(relations.flatMap((r) => heads.map((h) => `${h} <> ${r}`)), lead)) {
      for (const s of await candidates(FX, text, chunk, { threshold, lead })) {
        found.push({ ...s, label: s.label + offset });
      }
      offset += chunk.length;
    }
  }
  const ws = words(text);
  const spanText = (s: Span) => text.slice(ws[s.start].start, ws[s.end].end);
  const allowed = opts.tails && new Set(opts.tails);
  const best = new Map<string, Rel>();
  for (const s of flat(allowed ? found.filter((s) => allowed.has(spanText(s))) : found)) {
    const head = heads[s.label % heads.length];
    const relation = relations[Math.floor(s.label / heads.length)];
    const tail = text.slice(ws[s.start].start, ws[s.end].end);
    if (tail === head) continue;
    const key = `${head}|${relation}|${tail}`;
    if (!best.has(key) || best.get(key)!.score < s.score) {
      best.set(key, { head, tail, relation, score: s.score });
    }
  }
  return {
    entities: ents.map((e) => inCodePoints(text, e)),
    relations: [...best.values()].sort((a, b) => b.score - a.score),
  };
}

function assertSameRelations(got: Rel[], want: Rel[], what: string): void {
  assert.deepEqual(
    got.map((r) => [r.head, r.relation, r.tail]),
    want.map((r) => [r.head, r.relation, r.tail]),
    what,
  );
  got.forEach((r, i) => assert.ok(Math.abs(r.score - want[i].score) < 1e-4, `${what}: score`));
}

function assertSameEntities(got: Ent[], want: Ent[], what: string): void {
  assert.deepEqual(
    got.map((e) => [e.label, e.start, e.end, e.text]),
    want.map((e) => [e.label, e.start, e.end, e.text]),
    what,
  );
}

async function extract(w: TestWorker, texts: string[], params: Json): Promise<Json[]> {
  const r = await postJson(`${w.url}${URL_PATH}`, {
    items: texts.map((text) => ({ text })),
    params,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.items;
}

const PARAMS = { labels: RELATIONS, options: { entity_labels: ENTITY_LABELS } };

Deno.test("extract relations: entities first, then heads × relations prompts; tails match direct runs", async () => {
  await withWorker(async (w) => {
    const items = await extract(w, TEXTS, PARAMS);
    let total = 0;
    for (const [i, text] of TEXTS.entries()) {
      assertExtractKeys(items[i], ["entities", "relations"]);
      const want = await expected(text);
      assertSameEntities(items[i].entities, want.entities, `entities ${i}`);
      assertSameRelations(items[i].relations, want.relations, `relations ${i}`);
      const texts = new Set(want.entities.map((e) => e.text));
      for (const r of items[i].relations as Rel[]) {
        assert.ok(texts.has(r.head), `head '${r.head}' is an entity`);
        assert.ok(RELATIONS.includes(r.relation));
        assert.notEqual(r.tail, r.head);
        assert.ok(text.includes(r.tail));
      }
      total += items[i].relations.length;
    }
    assert.ok(total > 0, "the fixture finds some relations");
    // msgpack carries the same relations.
    const res = await fetch(`${w.url}${URL_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ items: [{ id: "m", text: TEXTS[0] }], params: PARAMS }),
    });
    const packed = decodeMsgpackView(new Uint8Array(await res.arrayBuffer()));
    assert.equal(packed.items[0].id, "m");
    assertSameRelations(packed.items[0].relations, (await expected(TEXTS[0])).relations, "msgpack");
  });
});

Deno.test("extract relations: the instruction replaces the relation prompt; many labels are cut into prompts", async () => {
  await withWorker(async (w) => {
    const instruction = "Find how the people and places below are related:";
    const [told] = await extract(w, [TEXTS[0]], { ...PARAMS, instruction });
    const want = await expected(TEXTS[0], { instruction });
    assertSameEntities(told.entities, want.entities, "entities (no instruction in pass 1)");
    assertSameRelations(told.relations, want.relations, "relations under the instruction");

    // 24 relation types × the heads: several prompts, each read with the whole text.
    const many = Array.from({ length: 24 }, (_, i) => `related kind ${i}`);
    const heads = new Set(want.entities.map((e) => e.text)).size;
    const labels = many.flatMap((r) =>
      [...new Set(want.entities.map((e) => e.text))].map((h) => `${h} <> ${r}`)
    );
    assert.ok(chunks(labels, RELATION_PROMPT).length > 2, `${heads} heads give several prompts`);
    const [got] = await extract(w, [TEXTS[0]], {
      labels: many,
      options: { entity_labels: ENTITY_LABELS },
    });
    assertSameRelations(
      got.relations,
      (await expected(TEXTS[0], { relations: many })).relations,
      "chunked",
    );
  });
});

Deno.test("extract relations: batching does not change results; texts without entities have none", async () => {
  await withWorker(async (w) => {
    const mixed = [TEXTS[1], "hi", TEXTS[0], "", TEXTS[1]];
    const batched = await extract(w, mixed, PARAMS);
    for (const [i, text] of mixed.entries()) {
      const [alone] = await extract(w, [text], PARAMS);
      assertSameEntities(batched[i].entities, alone.entities, `item ${i} entities`);
      assertSameRelations(batched[i].relations, alone.relations, `item ${i} relations`);
    }
    assertExtractKeys(batched[3], []);
  });
});

Deno.test("extract relations: entity_labels required, bounded and validated; not on other models", async () => {
  await withWorker(async (w) => {
    const post = (path: string, params: Json) =>
      postJson(`${w.url}${path}`, { items: [{ text: "Alice" }], params });
    const cases: [string, Json, RegExp][] = [
      [
        "entity_labels not a list",
        { labels: RELATIONS, options: { entity_labels: "person" } },
        /entity_labels/,
      ],
      ["too many entity types", {
        labels: RELATIONS,
        options: { entity_labels: Array.from({ length: 33 }, (_, i) => `type ${i}`) },
      }, /at most 32/],
      [
        "special token",
        { labels: RELATIONS, options: { entity_labels: ["<<ENT>>"] } },
        /special token/,
      ],
      [
        "blank entity type",
        { labels: RELATIONS, options: { entity_labels: ["person", " "] } },
        /empty/,
      ],
      ["no relation types", { options: { entity_labels: ENTITY_LABELS } }, /relation/],
      ["special token in a relation", {
        labels: ["works <<SEP>> for"],
        options: { entity_labels: ENTITY_LABELS },
      }, /special token/],
    ];
    for (const [what, params, message] of cases) {
      const r = await post(URL_PATH, params);
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.detail.message, message, what);
    }
    // `labels` alone (the SIE TypeScript SDK has no `options`): the entity types come from the
    // model's catalog entry (family_options.entity_labels), as if the request had named them.
    const text = "Alice lives in Paris and works for Google with Bob.";
    const ask = (params: Json) =>
      postJson(`${w.url}${URL_PATH}`, {
        items: [{ text }],
        params: {
          ...params,
          options: {
            ...params.options,
            threshold: 0,
          },
        },
      });
    const alone = await ask({ labels: RELATIONS });
    assert.equal(alone.status, 200, JSON.stringify(alone.body));
    const named = await ask({
      labels: RELATIONS,
      options: { entity_labels: ["person", "organization", "location"] },
    });
    assert.deepEqual(alone.body.items, named.body.items);
    assert.ok(alone.body.items[0].relations.length > 0, "threshold 0 relates the entities");
    const plain = await post("/v1/extract/fixture/gliner", {
      labels: ["person"],
      options: { entity_labels: ["person"] },
    });
    assert.equal(plain.status, 400);
    assert.match(plain.body.detail.message, /relations/);
  });
});

Deno.test("extract relations: entity types from each item's metadata (ours beside the SIE clients' mentions)", async () => {
  await withWorker(async (w) => {
    const byOptions = await extract(w, TEXTS, PARAMS);
    const withMeta = async (metas: Json[]) => {
      const r = await postJson(`${w.url}${URL_PATH}`, {
        items: TEXTS.map((text, i) => ({ text, metadata: metas[i] })),
        params: { labels: RELATIONS },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.items as Json[];
    };
    // Entity types as `entity_labels`, or as `entities` strings: the same as options.entity_labels.
    for (const key of ["entity_labels", "entities"]) {
      const items = await withMeta(TEXTS.map(() => ({ [key]: ENTITY_LABELS })));
      items.forEach((item, i) => {
        assertExtractKeys(item, ["entities", "relations"]);
        assertSameEntities(item.entities, byOptions[i].entities, `${key} ${i}`);
        assertSameRelations(item.relations, byOptions[i].relations, `${key} ${i}`);
      });
      assert.ok(items.some((it) => it.relations.length > 0), "some relations are found");
    }
    // Items with different types run apart, each as it would alone.
    const mixed = await withMeta([{ entity_labels: ["person"] }, { entity_labels: ENTITY_LABELS }]);
    const first = await expected(TEXTS[0], { entityLabels: ["person"] });
    assertSameEntities(mixed[0].entities, first.entities, "person only");
    assertSameRelations(mixed[0].relations, first.relations, "person only");
    assertSameRelations(mixed[1].relations, (await expected(TEXTS[1])).relations, "all types");
    // An item without metadata in such a request names no entity: empty lists, as SIE answers.
    const bare = await postJson(`${w.url}${URL_PATH}`, {
      items: [{ text: TEXTS[0], metadata: { entity_labels: ENTITY_LABELS } }, { text: TEXTS[1] }],
      params: { labels: RELATIONS },
    });
    assert.equal(bare.status, 200);
    assertSameRelations(bare.body.items[0].relations, byOptions[0].relations, "with types");
    assertExtractKeys(bare.body.items[1], []);
  });
});

/** Mentions `{text, label, start, end}` of `texts` in `text` (ASCII: code points = indices). */
function mentionsOf(text: string, texts: string[]): Json[] {
  return texts.map((t) => {
    const start = text.indexOf(t);
    assert.ok(start >= 0, t);
    return { text: t, label: "ENT", start, end: start + t.length };
  });
}

Deno.test("extract relations: entity mentions in item metadata are the entities, as the SIE clients send them", async () => {
  await withWorker(async (w) => {
    // Mentions whose texts the fixture relates (picked from an unrestricted run), so that the
    // restriction to them leaves relations to compare.
    const picked: string[][] = [];
    for (const text of TEXTS) {
      const heads = text.startsWith("Alice") ? ["Alice", "Google"] : ["Bob", "London"];
      const free = await expected(text, { heads });
      picked.push([...heads, ...new Set(free.relations.map((r) => r.tail))].slice(0, 5));
    }
    const mentions = TEXTS.map((text, i) => mentionsOf(text, picked[i]));
    // As the SIE clients send a relation request: relation types in params.labels, entities in
    // each item's metadata; no entity types anywhere.
    const r = await postJson(`${w.url}${URL_PATH}`, {
      items: TEXTS.map((text, i) => ({ text, metadata: { entities: mentions[i] } })),
      params: { labels: RELATIONS },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    let total = 0;
    for (const [i, text] of TEXTS.entries()) {
      const item = r.body.items[i];
      assertExtractKeys(item, ["entities", "relations"]);
      // The entities are the mentions, as sent, with score 1 (no entity pass ran).
      assert.deepEqual(item.entities, mentions[i].map((m) => ({ ...m, score: 1 })));
      const want = await expected(text, { heads: picked[i], tails: picked[i] });
      assertSameRelations(item.relations, want.relations, `mentions ${i}`);
      for (const rel of item.relations as Rel[]) {
        assert.ok(picked[i].includes(rel.head) && picked[i].includes(rel.tail), "between mentions");
      }
      total += item.relations.length;
    }
    assert.ok(total > 0, "the fixture relates some of the mentions");

    // Mentions need no label; a score sent is kept; the shared entity types apply to items
    // without mentions only; an empty list is an item without entities (empty lists).
    const mixed = await postJson(`${w.url}${URL_PATH}`, {
      items: [
        {
          text: TEXTS[0],
          metadata: { entities: picked[0].map((text, j) => ({ text, score: j === 0 ? 0.5 : 1 })) },
        },
        { text: TEXTS[1] },
        { id: "none", text: TEXTS[1], metadata: { entities: [] } },
      ],
      params: PARAMS,
    });
    assert.equal(mixed.status, 200, JSON.stringify(mixed.body));
    const [named, typed, none] = mixed.body.items;
    assert.deepEqual(named.entities[0], { text: picked[0][0], label: "", score: 0.5 });
    assertSameRelations(
      named.relations,
      (await expected(TEXTS[0], { heads: picked[0], tails: picked[0] })).relations,
      "mentions beside options.entity_labels",
    );
    const alone = await expected(TEXTS[1]);
    assertSameEntities(typed.entities, alone.entities, "options.entity_labels");
    assertSameRelations(typed.relations, alone.relations, "options.entity_labels");
    assert.equal(none.id, "none");
    assertExtractKeys(none, []);

    // Every item without entities: answered at once, nothing to run.
    const empty = await postJson(`${w.url}${URL_PATH}`, {
      items: [{ text: TEXTS[0], metadata: { entities: [] } }],
      params: { labels: RELATIONS },
    });
    assert.equal(empty.status, 200);
    assertExtractKeys(empty.body.items[0], []);
  });
});

Deno.test("extract relations: item metadata of the wrong shape is a 400 naming the item", async () => {
  await withWorker(async (w) => {
    const cases: [string, Json[], RegExp][] = [
      ["types not a list", [{ entity_labels: "person" }], /items\[0\]\.metadata\.entity_labels/],
      ["entities not a list", [{ entities: 3 }], /items\[0\]\.metadata\.entities/],
      ["mention without text", [{ entities: [{ label: "person" }] }], /entities\[0\]\.text/],
      ["bad mention", [{ entities: ["person", 4] }], /entities\[1\]/],
      ["special token", [{ entity_labels: ["<<ENT>>"] }], /special token/],
      ["special token in a mention", [{ entities: [{ text: "<<ENT>>" }] }], /special token/],
      [
        "too many mentions",
        [{ entities: Array.from({ length: 65 }, (_, i) => ({ text: `e${i}`, label: "x" })) }],
        /at most 64/,
      ],
      [
        "too many distinct mentions",
        [{ entities: Array.from({ length: 17 }, (_, i) => ({ text: `e${i}` })) }],
        /17 distinct entities; relations are found between at most 16/,
      ],
      ["score out of range", [{ entities: [{ text: "Alice", score: 2 }] }], /entities\[0\]\.score/],
      ["negative offset", [{ entities: [{ text: "Alice", start: -1 }] }], /entities\[0\]\.start/],
      [
        "end before start",
        [{ entities: [{ text: "Alice", start: 4, end: 2 }] }],
        /entities\[0\]\.end must not be before/,
      ],
    ];
    for (const [what, metas, message] of cases) {
      const r = await postJson(`${w.url}${URL_PATH}`, {
        items: metas.map((metadata) => ({ text: TEXTS[0], metadata })),
        params: { labels: RELATIONS },
      });
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.detail.message, message, what);
    }
  });
});
