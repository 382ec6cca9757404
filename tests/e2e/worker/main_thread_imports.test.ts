/**
 * ONNX Runtime blocks the thread that runs it, so it may load only inside inference threads (a
 * stalled main thread misses probes and fleet heartbeats). This walks the run-time import graph
 * of the worker's entry point as Deno resolves it (`deno info --json`): type-only imports are
 * erased at run time and are not followed; the inference thread's entry is the one place allowed
 * to reach the adapters.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../../", import.meta.url);
const THREAD_ENTRY = new URL("worker/inference/thread_main.ts", ROOT).href;
/** npm packages that load native inference code or the tokenizer (inference thread only). */
const THREAD_ONLY_PACKAGES = ["onnxruntime-node", "@huggingface/tokenizers"];
const IMAGE_THREAD_ENTRY = new URL("worker/images/pool_thread.ts", ROOT).href;
/** The image decoder: it may load only inside image pool threads. */
const IMAGE_THREAD_PACKAGES = ["sharp"];

interface InfoDependency {
  code?: { specifier: string };
}
interface InfoModule {
  specifier: string;
  dependencies?: InfoDependency[];
}

/** Specifiers of every module `entry` loads at run time, not entering `excluded`. */
async function runtimeGraph(entry: string, excluded: string[] = []): Promise<Set<string>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL(entry, ROOT).pathname],
    cwd: ROOT.pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: InfoModule[];
    redirects: Record<string, string>;
  };
  const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
  const resolve = (s: string) => info.redirects[s] ?? s;
  const seen = new Set<string>();
  const pending = info.roots.map(resolve);
  while (pending.length > 0) {
    const specifier = pending.pop()!;
    if (seen.has(specifier) || excluded.includes(specifier)) continue;
    seen.add(specifier);
    for (const dep of bySpecifier.get(specifier)?.dependencies ?? []) {
      if (dep.code) pending.push(resolve(dep.code.specifier));
    }
  }
  return seen;
}

/** The thread-only packages among `graph`'s modules. */
function threadOnlyPackages(graph: Set<string>): string[] {
  return [...THREAD_ONLY_PACKAGES, ...IMAGE_THREAD_PACKAGES].filter((pkg) =>
    [...graph].some((s) => s.includes(`/node_modules/${pkg}/`))
  );
}

Deno.test("main thread: the worker's run-time imports never reach ONNX Runtime, the tokenizer or sharp", async () => {
  const main = await runtimeGraph("worker/main.ts", [THREAD_ENTRY, IMAGE_THREAD_ENTRY]);
  assert.ok(
    [...main].some((s) => s.endsWith("/worker/images/pool.ts")),
    "the walk reaches the image pool (it starts the image threads)",
  );
  assert.ok(
    [...main].some((s) => s.endsWith("/worker/server/model_gate.ts")),
    "the walk reaches the model gate (it reads the family kinds)",
  );
  assert.deepEqual(threadOnlyPackages(main), []);
});

Deno.test("inference thread: its entry does load ONNX Runtime and the tokenizer (the walk sees them)", async () => {
  const thread = await runtimeGraph("worker/inference/thread_main.ts");
  assert.deepEqual(threadOnlyPackages(thread), THREAD_ONLY_PACKAGES);
});

Deno.test("image thread: its entry loads sharp and nothing of inference", async () => {
  const thread = await runtimeGraph("worker/images/pool_thread.ts");
  assert.deepEqual(threadOnlyPackages(thread), IMAGE_THREAD_PACKAGES);
});
