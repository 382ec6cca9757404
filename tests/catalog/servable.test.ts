/**
 * Listed-but-not-servable entries: ModelInfo says `servable: false` for an entry whose family
 * this release does not know, and every family of the one family list has an adapter factory in
 * the inference thread.
 */
import assert from "node:assert/strict";
import { BUILTIN_CATALOG } from "@svc/shared/catalog";
import { modelInfoOf } from "@svc/shared/catalog/model_info";
import { FAMILIES, FAMILY_OPS, isFamily, type ModelConfig } from "@svc/shared/catalog/schema";
import { FAMILY_ADAPTERS } from "#worker/families/adapters.ts";

Deno.test("served families: exactly the families with an adapter factory", () => {
  assert.deepEqual(Object.keys(FAMILY_ADAPTERS).sort(), [...FAMILIES].sort());
  assert.deepEqual(Object.keys(FAMILY_OPS), [...FAMILIES]);
  for (const f of Object.keys(FAMILY_ADAPTERS)) assert.ok(isFamily(f), f);
});

Deno.test("ModelInfo marks an entry servable only when its family is registered", () => {
  for (const c of BUILTIN_CATALOG) {
    assert.equal(modelInfoOf(c).servable, isFamily(c.family), c.id);
  }
  // A family of another release (a worker reporting it, a file naming it).
  const unserved = { ...BUILTIN_CATALOG[0], family: "speech" } as unknown as ModelConfig;
  const info = modelInfoOf(unserved);
  assert.equal(info.servable, false);
  assert.equal(info.family, "speech");
  assert.equal(isFamily("speech"), false);
  assert.equal(isFamily("toString"), false, "not a property of every object");
});
