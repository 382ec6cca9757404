/**
 * How tests import product code: by name, never by a relative path out of tests/. A member's public
 * entry goes by its package name (`@svc/shared/errors`), any other file by its folder's `#` name
 * (`#worker/server/model_gate.ts`), which deno.json's `scopes` define for files under tests/ only:
 * router, worker and the other members cannot reach each other's internals through them. Relative
 * imports stay within tests/ (`../helpers/wait.ts`).
 */
import assert from "node:assert/strict";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** The source files under `dir`, relative to the repository root (tests/.tmp skipped). */
async function sources(dir: string, out: string[] = []): Promise<string[]> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory && e.name !== ".tmp" && e.name !== "node_modules") await sources(path, out);
    else if (e.isFile && /\.(ts|mts|js|mjs)$/.test(e.name)) out.push(relative(ROOT, path));
  }
  return out.sort();
}

/** The workspace members' folders and infra/ (not a member): everything tests import. */
async function productFolders(): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  return [...config.workspace.map((m: string) => m.replace(/^\.\//, "")), "infra"];
}

/** The module specifiers of static imports and exports, and of dynamic imports with a literal. */
function specifiers(text: string): string[] {
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])([^"'\n]+)\1/g;
  return [...text.matchAll(re)].map((m) => m[2]);
}

Deno.test("imports: tests reach product code by name, never by a relative path", async () => {
  const files = await sources(join(ROOT, "tests"));
  assert.ok(files.length > 100, "found the tests");
  const outside: string[] = [];
  for (const f of files) {
    for (const s of specifiers(await Deno.readTextFile(join(ROOT, f)))) {
      if (!s.startsWith("./") && !s.startsWith("../")) continue;
      const target = relative(ROOT, join(ROOT, dirname(f), s));
      if (!target.startsWith("tests/")) outside.push(`${f}: ${s}`);
    }
  }
  assert.deepEqual(
    outside,
    [],
    'import product code as "@svc/<member>/<entry>" or "#<folder>/<path>" (deno.json scopes)',
  );
});

Deno.test("imports: the # names exist for files under tests/ only, one per top folder", async () => {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  assert.equal(config.imports, undefined, "no workspace-wide import map");
  assert.deepEqual(Object.keys(config.scopes), ["./tests/"]);
  const names = config.scopes["./tests/"] as Record<string, string>;
  const folders = await productFolders();
  assert.deepEqual(
    Object.entries(names).sort(),
    folders.map((f: string) => [`#${f}/`, `./${f}/`]).sort(),
  );
  // A member's own import map would reach its package, product code included.
  for (const f of config.workspace as string[]) {
    const member = JSON.parse(await Deno.readTextFile(join(ROOT, f, "deno.json")));
    assert.equal(member.imports, undefined, f);
    assert.equal(member.scopes, undefined, f);
  }
});

Deno.test("imports: product code uses no # name and imports nothing from tests/", async () => {
  const found: string[] = [];
  for (const folder of await productFolders()) {
    for (const f of await sources(join(ROOT, folder))) {
      for (const s of specifiers(await Deno.readTextFile(join(ROOT, f)))) {
        const relativeTarget = s.startsWith(".") ? relative(ROOT, join(ROOT, dirname(f), s)) : "";
        if (s.startsWith("#") || relativeTarget.startsWith("tests/")) found.push(`${f}: ${s}`);
      }
    }
  }
  assert.deepEqual(found, []);
});
