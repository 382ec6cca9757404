/** Relation assembly from second-pass spans, with hand-built inputs. */
import assert from "node:assert/strict";
import {
  assembleRelations,
  relationHeads,
  relationLabels,
} from "#worker/families/gliner/relations.ts";
import type { SpanCandidate } from "#worker/families/gliner/decode.ts";

const ent = (text: string, score: number, start = 0) => ({
  text,
  label: "x",
  score,
  start,
  end: start + text.length,
});

Deno.test("relationHeads: distinct texts, the best-scoring kept, in order of appearance", () => {
  const ents = [ent("Alice", 0.9), ent("Paris", 0.8), ent("Alice", 0.95), ent("Bob", 0.4)];
  assert.deepEqual(relationHeads(ents, () => true), ["Alice", "Paris", "Bob"]);
  // Keep 2: Alice (0.95) and Paris (0.8) beat Bob (0.4); order stays Alice, Paris.
  assert.deepEqual(relationHeads(ents, () => true, 2), ["Alice", "Paris"]);
  // Bob scores better than Paris once Paris is unusable.
  assert.deepEqual(relationHeads(ents, (t) => t !== "Paris", 2), ["Alice", "Bob"]);
});

Deno.test("relationLabels: relation-major, heads in order", () => {
  assert.deepEqual(relationLabels(["Alice", "Paris"], ["works for", "lives in"]), [
    "Alice <> works for",
    "Paris <> works for",
    "Alice <> lives in",
    "Paris <> lives in",
  ]);
});

Deno.test("assembleRelations: label index → (head, relation); self-tails dropped; repeats keep the best", () => {
  const heads = ["Alice", "Paris"];
  const relations = ["works for", "lives in"];
  // Labels: 0 Alice<>works for, 1 Paris<>works for, 2 Alice<>lives in, 3 Paris<>lives in.
  const text: Record<string, string> = { "0": "Google", "5": "Paris", "9": "Paris", "2": "Paris" };
  const span = (start: number, label: number, score: number): SpanCandidate => ({
    start,
    end: start,
    label,
    score,
  });
  const spans = [
    span(0, 0, 0.9), // Alice works for Google
    span(5, 2, 0.7), // Alice lives in Paris
    span(9, 2, 0.8), // Alice lives in Paris again (another mention): 0.8 wins
    span(2, 1, 0.99), // Paris works for Paris: the head itself, dropped
  ];
  const got = assembleRelations(spans, (s) => text[String(s.start)], heads, relations);
  assert.deepEqual(got, [
    { head: "Alice", tail: "Google", relation: "works for", score: 0.9 },
    { head: "Alice", tail: "Paris", relation: "lives in", score: 0.8 },
  ]);
});
