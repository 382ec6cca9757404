/**
 * A model family is one folder: every family of the catalog schema has its main-thread info and
 * its inference-thread adapter in `worker/families/<family>/`, listed once in each table. The
 * tables are typed `Record<Family, …>`, so the compiler already refuses a missing entry; this
 * checks what it cannot: the entry is the family's own and the folder is where it says.
 */
import assert from "node:assert/strict";
import { FAMILIES, FAMILY_OPS } from "@svc/shared/catalog/schema";
import { FAMILY_INFOS } from "#worker/families/infos.ts";
import { FAMILY_ADAPTERS } from "#worker/families/adapters.ts";
import { LORA_FAMILIES } from "#worker/families/kinds.ts";

const FAMILIES_DIR = new URL("../../worker/families/", import.meta.url);

Deno.test("family tables: one info and one adapter per family, each its own", () => {
  assert.deepEqual(Object.keys(FAMILY_INFOS).sort(), [...FAMILIES].sort());
  assert.deepEqual(Object.keys(FAMILY_ADAPTERS).sort(), [...FAMILIES].sort());
  for (const f of FAMILIES) {
    const info = FAMILY_INFOS[f];
    assert.equal(info.family, f, `FAMILY_INFOS.${f} describes ${info.family}`);
    assert.equal(info.op, FAMILY_OPS[f], f);
    assert.equal(info.extract !== undefined, info.op === "extract", `${f}: extract plan iff op`);
    assert.ok(info.batchTokens > 0, f);
    assert.ok(typeof FAMILY_ADAPTERS[f] === "function", f);
  }
});

Deno.test("family tables: every family has its folder with info.ts, and no folder is orphaned", () => {
  const withInfo = new Set<string>();
  for (const e of Deno.readDirSync(FAMILIES_DIR)) {
    if (!e.isDirectory) continue;
    try {
      Deno.statSync(new URL(`${e.name}/info.ts`, FAMILIES_DIR));
      withInfo.add(e.name);
    } catch {
      // a helper folder (text/, vision/): no family
    }
  }
  assert.deepEqual([...withInfo].sort(), [...FAMILIES].sort());
});

Deno.test("family tables: LoRA families, in the catalog's order", () => {
  assert.deepEqual(LORA_FAMILIES, ["dense", "sparse", "colbert", "bge_m3"]);
});

Deno.test("family tables: architecture rules name at most one family each", () => {
  const expected: Record<string, string | undefined> = {
    CLIPModel: "clip",
    OwlViTForObjectDetection: "zero_shot_detection",
    Owlv2ForObjectDetection: "zero_shot_detection",
    DetrForObjectDetection: "detection",
    YolosForObjectDetection: "detection",
    BertForTokenClassification: "token_classification",
    // Left to the rules that choose by labels or graph (detect/family.ts).
    BertModel: undefined,
    BertForSequenceClassification: undefined,
    BertForMaskedLM: undefined,
  };
  for (const [arch, family] of Object.entries(expected)) {
    const named = FAMILIES.filter((f) => FAMILY_INFOS[f].detect?.architecture?.(arch));
    assert.deepEqual(named, family ? [family] : [], arch);
  }
});
