/**
 * A loaded model's revision (worker/registry/revision.ts): it follows the content of the model's
 * files and its configuration, not where or when the files were written, so two machines with
 * the same weights agree, a restart keeps it, and new weights change it. The registry reports it
 * for loaded models only.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseModelConfig } from "@svc/shared/catalog/schema";
import { MODEL_REVISION_RE } from "@svc/shared/fleet/protocol";
import { RevisionHasher } from "#worker/registry/revision.ts";

const CONFIG = parseModelConfig({
  id: "org/m",
  family: "dense",
  hub: { repo: "org/m", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  inputs: ["text"],
  outputs: ["dense"],
  max_sequence_length: 128,
}, "org/m");

/** Two files with the given contents in a new directory; returns their paths by role. */
async function files(model: string, tokenizer: string): Promise<Record<string, string>> {
  const dir = await Deno.makeTempDir({ prefix: "revision-" });
  const paths = { model: join(dir, "model.onnx"), tokenizer: join(dir, "tokenizer.json") };
  await Deno.writeTextFile(paths.model, model);
  await Deno.writeTextFile(paths.tokenizer, tokenizer);
  return paths;
}

Deno.test("revision: same content anywhere → same revision; other content or config → another", async () => {
  const dirs: string[] = [];
  try {
    const a = await files("weights-1", "tok");
    // Written later, elsewhere (another machine's cache): same bytes.
    await new Promise((r) => setTimeout(r, 20));
    const b = await files("weights-1", "tok");
    const changed = await files("weights-2", "tok");
    const newTokenizer = await files("weights-1", "tok2");
    dirs.push(...[a, b, changed, newTokenizer].map((f) => join(f.model, "..")));
    const h = new RevisionHasher();
    const ra = await h.revisionOf(CONFIG, "onnx/model.onnx", a);
    assert.match(ra, MODEL_REVISION_RE);
    assert.equal(await new RevisionHasher().revisionOf(CONFIG, "onnx/model.onnx", b), ra);
    assert.notEqual(await h.revisionOf(CONFIG, "onnx/model.onnx", changed), ra);
    assert.notEqual(await h.revisionOf(CONFIG, "onnx/model.onnx", newTokenizer), ra);
    assert.notEqual(await h.revisionOf(CONFIG, "onnx/model_int8.onnx", a), ra);
    const capped = { ...CONFIG, max_sequence_length: 64 };
    assert.notEqual(await h.revisionOf(capped, "onnx/model.onnx", a), ra);
    // A file replaced in place (new bytes, new stamp) is read again.
    await new Promise((r) => setTimeout(r, 20));
    await Deno.writeTextFile(a.model, "weights-3");
    assert.notEqual(await h.revisionOf(CONFIG, "onnx/model.onnx", a), ra);
    // A missing file: no revision.
    await Deno.remove(a.model);
    await assert.rejects(h.revisionOf(CONFIG, "onnx/model.onnx", a), /missing/);
  } finally {
    for (const d of dirs) await Deno.remove(d, { recursive: true }).catch(() => {});
  }
});
