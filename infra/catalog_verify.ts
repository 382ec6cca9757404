/**
 * `deno task catalog:verify [--model ID]`: checks catalog entries against the real weights, for a
 * machine with hub access (never run in CI). Uses the worker's settings from the environment
 * (SVC_CACHE_DIR, SVC_CLUSTER_CACHE, SVC_HUB_URL, HF_TOKEN, SVC_MODELS_DIR, SVC_MODEL_FILTER).
 */
import { parseArgs as parseFlags } from "node:util";
import { formatTable, verifyCatalog } from "./catalog/verify.ts";

const HELP = `usage: npx deno task catalog:verify [--model ID]

Downloads each catalog entry (or only ID) through the worker's weight sources, opens its ONNX
graphs and checks their input and output names against what the family feeds and reads, serves it
from an in-process CPU worker and runs a query/document request, plus a known-answer check where
one exists (cosine order of three sentences, a bread recipe ranked above bank news, NER on a fixed
sentence, a sports headline classified as sports). Prints a table and exits 1 if any entry failed.

Reads the worker's environment: SVC_CACHE_DIR, SVC_CLUSTER_CACHE, SVC_HUB_URL, HF_TOKEN (gated
repositories), SVC_MODELS_DIR (extra entries), SVC_MODEL_FILTER. Downloads can be gigabytes.

Options:
  --model ID   verify one entry
  --help       this text`;

/** Parse the command line; undefined model means every entry. */
export function parseArgs(args: readonly string[]): { help: boolean; model?: string } {
  let values: { help?: boolean; model?: string };
  try {
    ({ values } = parseFlags({
      args: [...args],
      options: { help: { type: "boolean", short: "h" }, model: { type: "string" } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new Error(`${(err as Error).message} (see --help)`);
  }
  return values.model === undefined
    ? { help: values.help ?? false }
    : { help: values.help ?? false, model: values.model };
}

if (import.meta.main) {
  let args;
  try {
    args = parseArgs(Deno.args);
  } catch (err) {
    console.error((err as Error).message);
    Deno.exit(2);
  }
  if (args.help) {
    console.log(HELP);
    Deno.exit(0);
  }
  const env = { SVC_DEVICE: "cpu", ...Deno.env.toObject() };
  const rows = await verifyCatalog({
    env,
    model: args.model,
    progress: (line) => console.error(line),
  });
  console.log(formatTable(rows));
  const failed = rows.filter((r) => !r.ok).length;
  console.log(`\n${rows.length - failed} passed, ${failed} failed`);
  Deno.exit(failed > 0 ? 1 : 0);
}
