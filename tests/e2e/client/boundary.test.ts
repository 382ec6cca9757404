/**
 * The client is its own package for browsers: what it runs (its import graph, type-only imports
 * aside) is its own files, two pure modules of @svc/shared (the version and float16 decoding) and
 * msgpackr's pure-JS modules; no Node built-in, no server code. (Deno resolves `msgpackr/pack`
 * with the node condition, to index.js, which re-exports the pure pack, unpack and iterators
 * modules; a browser bundle takes pack.js itself. node-index.js, which loads native code, is out.)
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const ALLOWED_SHARED = ["shared/version.ts", "shared/codec/float16.ts"];
const ALLOWED_NPM = /\/node_modules\/msgpackr\/(index|pack|unpack|iterators)\.js$/;

interface Dependency {
  code?: { specifier: string };
}
interface GraphModule {
  specifier: string;
  dependencies?: Dependency[];
}

/** The runtime closure of `entry` (code dependencies only), as specifiers. */
async function runtimeGraph(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const graph = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: GraphModule[];
    redirects?: Record<string, string>;
  };
  const bySpecifier = new Map(graph.modules.map((m) => [m.specifier, m]));
  const resolve = (s: string) => graph.redirects?.[s] ?? s;
  const seen = new Set<string>();
  const todo = graph.roots.map(resolve);
  while (todo.length > 0) {
    const s = todo.pop()!;
    if (seen.has(s)) continue;
    seen.add(s);
    for (const d of bySpecifier.get(s)?.dependencies ?? []) {
      if (d.code) todo.push(resolve(d.code.specifier));
    }
  }
  return [...seen];
}

Deno.test("client: its runtime graph is its own files, two pure shared modules and msgpackr", async () => {
  const graph = await runtimeGraph("client/mod.ts");
  const foreign: string[] = [];
  for (const s of graph) {
    if (!s.startsWith("file:")) {
      foreign.push(s); // node:, npm:, jsr: or remote
      continue;
    }
    const path = fileURLToPath(s).slice(ROOT.length);
    if (path.startsWith("client/") || ALLOWED_SHARED.includes(path) || ALLOWED_NPM.test(s)) {
      continue;
    }
    foreign.push(path);
  }
  assert.deepEqual(foreign, []);
  // The walk saw the client itself (a broken walk would pass the check above vacuously).
  assert.ok(graph.some((s) => s.endsWith("/client/transport.ts")));
  assert.ok(graph.some((s) => s.endsWith("/shared/codec/float16.ts")));
});
