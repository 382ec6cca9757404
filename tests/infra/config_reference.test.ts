/** docs/configuration.md's tables are the generated reference, each setting exactly once. */
import assert from "node:assert/strict";
import { CONFIG_DOC, REFERENCE_SECTIONS, renderReference } from "#infra/config_reference.ts";
import { ROUTER_SETTING_NAMES } from "@svc/router/settings";
import { WORKER_SETTING_NAMES } from "@svc/worker/settings";
import { START_SCHEMA } from "#infra/start_settings.ts";

Deno.test("config reference: docs/configuration.md is up to date (run `deno task config:docs`)", async () => {
  const text = await Deno.readTextFile(CONFIG_DOC);
  const stale = "docs/configuration.md is stale: run `deno task config:docs`";
  assert.equal(text, renderReference(text), stale);
});

Deno.test("config reference: every setting of every process appears exactly once", () => {
  const documented = REFERENCE_SECTIONS.flatMap((s) => Object.keys(s.fields));
  assert.equal(new Set(documented).size, documented.length, "a setting is documented twice");
  const read = new Set([...WORKER_SETTING_NAMES, ...ROUTER_SETTING_NAMES, ...START_SCHEMA.names]);
  assert.deepEqual([...read].sort(), [...documented].sort());
  for (const s of REFERENCE_SECTIONS) {
    for (const [name, f] of Object.entries(s.fields)) {
      assert.ok(f.doc.length > 0 && f.shown.length > 0, `${name} has a description and default`);
    }
  }
});
