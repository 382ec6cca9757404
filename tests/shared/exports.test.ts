/**
 * `@svc/shared` exports what the other members import, and nothing else: an entry no member uses
 * is an internal module on display (tests reach internals by their `#shared/` names).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MEMBERS = ["worker", "router", "infra", "client", "onnx", "fixture_models"];

async function sources(dir: string, out: string[]): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) await sources(path, out);
    else if (e.name.endsWith(".ts")) out.push(path);
  }
}

Deno.test("shared: every exported entry is imported by another member", async () => {
  const manifest = JSON.parse(await Deno.readTextFile(join(ROOT, "shared/deno.json")));
  const entries = Object.keys(manifest.exports as Record<string, string>);
  assert.ok(entries.length > 20, "the manifest lists its entries");
  const files: string[] = [];
  for (const m of MEMBERS) await sources(join(ROOT, m), files);
  const imported = new Set<string>();
  for (const f of files) {
    const text = await Deno.readTextFile(f);
    for (const m of text.matchAll(/["'](@svc\/shared(?:\/[\w/]+)?)["']/g)) imported.add(m[1]);
  }
  const unused = entries.filter((e) => !imported.has(`@svc/shared${e === "." ? "" : e.slice(1)}`));
  assert.deepEqual(unused, []);
});
