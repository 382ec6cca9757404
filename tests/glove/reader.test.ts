/** infra/models readers, offline: exact decimals and the streaming wink-format reader. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseDecimal } from "#infra/models/decimal.ts";
import { readWinkVectors } from "#infra/models/wink_reader.ts";

const enc = new TextEncoder();

Deno.test("parseDecimal gives exactly the double Number() gives", () => {
  const cases = ["-0.038194", "0.72812", "2.95153011", "341478", "-0", "0.1", "1e5", "1.5E-3"];
  cases.push("123456789012345678", "0.30000000000000004", "-12.5", "7");
  for (const text of cases) {
    assert.ok(Object.is(parseDecimal(enc.encode(text), 0, text.length), Number(text)), text);
  }
  for (const text of ["", "-", ".", "1-2"]) {
    assert.ok(Number.isNaN(parseDecimal(enc.encode(text), 0, text.length)), `'${text}'`);
  }
});

/** A file in the package's layout: rows carry [v0, v1, l2norm, rank]. */
function winkJson(rows: [string, number[]][], order?: number[]): string {
  const words = rows.map(([w]) => w);
  const vectors = (order ?? rows.map((_, i) => i)).map((i) => {
    const [w, v] = rows[i];
    return `${JSON.stringify(w)}:[${[...v, Math.hypot(...v), i].join(",")}]`;
  });
  return `{"precision":8,"l2NormIndex":2,"wordIndex":3,"size":${rows.length},"dimensions":2,` +
    `"words":${JSON.stringify(words)},\n "vectors":{${vectors.join(",")}},` +
    `"unkVector":[0,0,-1],"extra":{"nested":[true,false,null,"x"]}}`;
}

const ROWS: [string, number[]][] = [
  ["the", [0.5, -0.25]],
  [",", [1, 2]],
  ['"', [3, 4]],
  ["\\", [5, 6]],
  ["well-known", [7, 8]],
  ["bread", [-0.125, 0.0625]],
  ["café", [9, 10]],
];

async function withFile<T>(text: string, fn: (path: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "wink-" });
  try {
    const path = join(dir, "v.json");
    await Deno.writeTextFile(path, text);
    return await fn(path);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("readWinkVectors reads words (escapes, UTF-8) and values in rank order", async () => {
  const r = await withFile(winkJson(ROWS), (p) => readWinkVectors(p));
  assert.deepEqual(r.words, ROWS.map(([w]) => w));
  assert.deepEqual([...r.vectors], ROWS.flatMap(([, v]) => v));
  assert.equal(r.dims, 2);
  assert.equal(r.packageWords, ROWS.length);
  assert.equal(r.stoppedEarly, false);
});

Deno.test("readWinkVectors: keep filters before limit counts; in-order rows stop early", async () => {
  const keep = (w: string): boolean => !w.includes("-") && w !== ",";
  const r = await withFile(winkJson(ROWS), (p) => readWinkVectors(p, { keep, limit: 4 }));
  assert.deepEqual(r.words, ["the", '"', "\\", "bread"]);
  assert.deepEqual([...r.vectors.subarray(6, 8)], [-0.125, 0.0625]);
  assert.equal(r.stoppedEarly, true);
});

Deno.test("readWinkVectors: rows out of rank order are sorted and read to the end", async () => {
  const shuffled = winkJson(ROWS, [5, 0, 6, 2, 1, 4, 3]);
  const r = await withFile(shuffled, (p) => readWinkVectors(p, { limit: 3 }));
  assert.deepEqual(r.words, ["the", ",", '"']);
  assert.deepEqual([...r.vectors], [0.5, -0.25, 1, 2, 3, 4]);
  assert.equal(r.stoppedEarly, false);
});

Deno.test("readWinkVectors: a malformed file fails with its path and position", async () => {
  const bad = winkJson(ROWS).replace('"bread":[', '"bread":[oops,');
  await withFile(bad, async (p) => {
    await assert.rejects(() => readWinkVectors(p), (e: Error) => {
      assert.match(e.message, /v\.json: expected a number at byte \d+/);
      return true;
    });
  });
  const noHeader = '{"vectors":{"the":[1,2,3,0]},"dimensions":2,"wordIndex":3}';
  await withFile(noHeader, async (p) => {
    await assert.rejects(() => readWinkVectors(p), /must come before 'vectors'/);
  });
});
