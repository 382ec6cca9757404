/**
 * GLiNER's cost model and span memory: the token counts `passTokens` predicts are those of the rows
 * the adapter builds (windows.ts + rows.ts with the fixture tokenizer), label packing matches the
 * relation prompts' cut, and `TopSpans` keeps exactly the k best spans of each label in
 * labels × k memory however many it is offered.
 */
import assert from "node:assert/strict";
import { TextTokenizer } from "#worker/families/text/tokenizer.ts";
import { packLabels, type PassShape, passTokens } from "#worker/families/gliner/cost.ts";
import { planWindows } from "#worker/families/gliner/windows.ts";
import { buildRow, promptIds } from "#worker/families/gliner/rows.ts";
import { splitWords } from "#worker/families/gliner/words.ts";
import { TopSpans } from "#worker/families/gliner/top_spans.ts";
import { Prng } from "@svc/fixture-models/prng";
import { ENT_ID, GLINER_TOKENS, MAX_WIDTH } from "@svc/fixture-models/models";
import { extraTokenIds, tokenizerConfig, tokenizerJson } from "@svc/fixture-models/tokenizer";

const MAX_LENGTH = 96;
const tok = new TextTokenizer(
  tokenizerJson(GLINER_TOKENS),
  tokenizerConfig(MAX_LENGTH, GLINER_TOKENS),
  MAX_LENGTH,
);
const SEP_ID = extraTokenIds(GLINER_TOKENS)["<<SEP>>"];

Deno.test("passTokens: the tokens of the rows the adapter builds, for every prompt and lead", () => {
  const text = Array.from({ length: 400 }, (_, i) => i % 13 === 0 ? "extraordinarily" : `w${i}`)
    .join(" ") + " " + "x".repeat(500);
  const wordIds = splitWords(text).map((w) => tok.bodyIds(w.text, MAX_LENGTH));
  const template = tok.template.prefix.length + tok.template.suffix.length;
  for (const lead of ["", "find the people"]) {
    const leadIds = splitWords(lead).map((w) => tok.bodyIds(w.text, MAX_LENGTH));
    const leadTokens = leadIds.reduce((n, w) => n + w.length, 0);
    for (const labels of [["person"], ["person", "organization", "a longer label of words"]]) {
      const ids = promptIds(tok, labels, ENT_ID, SEP_ID);
      const room = MAX_LENGTH - template - ids.length;
      const prompt = { ids, labels: labels.length, labelOffset: 0, leadIds };
      const rows = planWindows(
        wordIds.map((w) => w.length),
        20 - leadIds.length,
        room - leadTokens,
        MAX_WIDTH - 1,
      ).map((w) => buildRow(tok, prompt, wordIds, w, room));
      const shape: PassShape = {
        maxLength: MAX_LENGTH,
        templateTokens: template,
        maxWords: 20,
        overlap: MAX_WIDTH - 1,
        leadWords: leadIds.length,
        leadTokens,
      };
      const got = passTokens(wordIds.map((w) => w.length), [ids.length, ids.length], shape);
      const built = rows.reduce((n, r) => n + r.ids.length, 0);
      assert.deepEqual(got, { tokens: 2 * built, rows: 2 * rows.length }, `${lead} ${labels}`);
    }
  }
});

Deno.test("packLabels: labels fill prompts up to the budget with their <<SEP>>; a huge one alone", () => {
  assert.deepEqual(packLabels([3, 3, 3, 3], 10), [
    { first: 0, count: 3, tokens: 10 },
    { first: 3, count: 1, tokens: 4 },
  ]);
  assert.deepEqual(packLabels([2, 12, 2], 10), [
    { first: 0, count: 1, tokens: 3 },
    { first: 1, count: 1, tokens: 13 },
    { first: 2, count: 1, tokens: 3 },
  ]);
  assert.deepEqual(packLabels([], 10), []);
});

Deno.test("TopSpans: exactly the k best spans of each label, whatever it is offered", () => {
  const rng = new Prng(23);
  const k = 7;
  const labels = 5;
  const top = new TopSpans(k);
  const offered: { start: number; end: number; label: number; score: number }[][] = Array.from(
    { length: labels },
    () => [],
  );
  for (let i = 0; i < 100_000; i++) {
    const label = Math.floor(rng.next() * labels);
    // Coarse scores: many ties, where the span offered first stays.
    const span = { start: i, end: i + 1, label, score: Math.round(rng.next() * 1000) / 1000 };
    offered[label].push(span);
    top.add(span.start, span.end, span.label, span.score);
  }
  const kept = top.spans();
  assert.equal(kept.length, labels * k);
  for (let label = 0; label < labels; label++) {
    const want = offered[label]
      .map((s, order) => ({ s, order }))
      .sort((a, b) => b.s.score - a.s.score || a.order - b.order)
      .slice(0, k)
      .map(({ s }) => s)
      .sort((a, b) => a.start - b.start);
    const got = kept.filter((s) => s.label === label).sort((a, b) => a.start - b.start);
    assert.deepEqual(got, want, `label ${label}`);
  }
  assert.throws(() => new TopSpans(0), RangeError);
});
