/**
 * Listed-but-not-servable entries: ModelInfo says `servable: false` for an entry whose family has
 * no adapter in this release, and the family list the router sees equals the adapters the
 * inference thread registers.
 */
import assert from "node:assert/strict";
import { BUILTIN_CATALOG } from "@svc/shared/catalog";
import { modelInfoOf } from "@svc/shared/catalog/model_info";
import { FAMILIES, type ModelConfig } from "@svc/shared/catalog/schema";
import { ADAPTER_FAMILIES, hasAdapter } from "@svc/shared/catalog/served_families";
import { FAMILY_ADAPTERS } from "../../worker/families/adapters.ts";

Deno.test("served families: exactly the families with an adapter factory", () => {
  assert.deepEqual(Object.keys(FAMILY_ADAPTERS).sort(), [...ADAPTER_FAMILIES].sort());
  for (const f of ADAPTER_FAMILIES) assert.ok((FAMILIES as readonly string[]).includes(f));
});

Deno.test("ModelInfo marks an entry servable only when its family is registered", () => {
  for (const c of BUILTIN_CATALOG) {
    assert.equal(modelInfoOf(c).servable, hasAdapter(c.family), c.id);
  }
  // A family the schema may list before any adapter exists for it.
  const unserved = { ...BUILTIN_CATALOG[0], family: "speech" } as unknown as ModelConfig;
  const info = modelInfoOf(unserved);
  assert.equal(info.servable, false);
  assert.equal(info.family, "speech");
});
