/** GLiClass input composition: prompt before or after the text; the text is cut, never the labels. */
import assert from "node:assert/strict";
import { TextTokenizer } from "#worker/families/text/tokenizer.ts";
import {
  gliclassBody,
  type GliclassSettings,
  labelPrompt,
} from "#worker/families/gliclass/adapter.ts";
import { GLICLASS_TOKENS, LABEL_ID } from "@svc/fixture-models/models";
import { extraTokenIds, tokenizerConfig, tokenizerJson } from "@svc/fixture-models/tokenizer";

const tok = new TextTokenizer(
  tokenizerJson(GLICLASS_TOKENS),
  tokenizerConfig(64, GLICLASS_TOKENS),
  64,
);
const SEP_ID = extraTokenIds(GLICLASS_TOKENS)["<<SEP>>"];
const settings = (promptFirst: boolean): GliclassSettings => ({
  labelId: LABEL_ID,
  sepId: SEP_ID,
  promptFirst,
  threshold: 0.5,
});
const LABELS = ["sports", "politics"];
const prompt = labelPrompt(LABELS, "pick one");
const ids = (text: string) => tok.bodyIds(text, 1000);

Deno.test("gliclass body: prompt first keeps the prompt and cuts the text's end", () => {
  const text = "bread ".repeat(40).trim();
  const r = gliclassBody(tok, settings(true), prompt, 2, text, 20);
  assert.ok("ids" in r);
  assert.deepEqual(r.ids, ids(prompt + text).slice(0, 20));
  assert.deepEqual(r.ids.slice(0, ids(prompt).length), ids(prompt));
  const short = gliclassBody(tok, settings(true), prompt, 2, "bake bread", 20);
  assert.ok("ids" in short);
  assert.deepEqual(short.ids, ids(prompt + "bake bread"));
});

Deno.test("gliclass body: text first is cut before the label prompt, which stays whole", () => {
  const text = "bread ".repeat(40).trim();
  const r = gliclassBody(tok, settings(false), prompt, 2, text, 20);
  assert.ok("ids" in r);
  const tail = ids(prompt);
  assert.equal(r.ids.length, 20);
  assert.deepEqual(r.ids.slice(20 - tail.length), tail);
  assert.deepEqual(r.ids.slice(0, 20 - tail.length), ids(text).slice(0, 20 - tail.length));
  assert.equal(r.ids.filter((id) => id === LABEL_ID).length, 2);
});

Deno.test("gliclass body: prompt tokens inside the text, or labels that cannot fit, are errors", () => {
  const inText = gliclassBody(tok, settings(false), prompt, 2, "a <<LABEL>> b", 50);
  assert.ok("error" in inText && /prompt tokens/.test(inText.error));
  const many = labelPrompt(Array.from({ length: 10 }, (_, i) => `label ${i}`));
  const crowded = gliclassBody(tok, settings(true), many, 10, "a", 12);
  assert.ok("error" in crowded && /labels take/.test(crowded.error));
});
