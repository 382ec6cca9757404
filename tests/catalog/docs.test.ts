/**
 * docs/catalog.md states, for every built-in entry, what the catalog says: its max tokens, whether
 * it is servable, and whether its revision is pinned.
 */
import assert from "node:assert/strict";
import { BUILTIN_CATALOG } from "@svc/shared/catalog";
import { isFamily, isPinnedRevision } from "@svc/shared/catalog/schema";

const DOC = await Deno.readTextFile(new URL("../../docs/catalog.md", import.meta.url));

function rowOf(id: string): string[] {
  const line = DOC.split("\n").find((l) => l.startsWith(`| \`${id}\``));
  assert.ok(line, `docs/catalog.md has no row for ${id}`);
  return line.split("|").slice(1, -1).map((c) => c.trim());
}

Deno.test("docs/catalog.md: every built-in entry's row matches its length, servability and revision", () => {
  for (const c of BUILTIN_CATALOG) {
    const row = rowOf(c.id);
    const [, family, , , , maxTokens] = row;
    const status = row[row.length - 1];
    assert.equal(family, c.family, c.id);
    if (/^\d+$/.test(maxTokens)) assert.equal(Number(maxTokens), c.max_sequence_length, c.id);
    // "servable" as its own entry of the status list ("not servable" must not count).
    assert.equal(/(^|; )servable/.test(status), isFamily(c.family), c.id);
    assert.equal(
      status.includes("revision not pinned (unknown here)"),
      !isPinnedRevision(c.hub.revision),
      `${c.id}: revision ${c.hub.revision}`,
    );
  }
});
