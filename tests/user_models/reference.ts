/**
 * Reference outputs computed here, without the worker: the repository's own tokenizer, its graph
 * run directly in onnxruntime-node on one text (no padding), pooling done in plain TypeScript.
 */
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { openModel, runModel } from "../fixtures/testing.ts";
import type { Feeds } from "@svc/fixture-models";

/** Token feeds of one text (or a text pair) with the repository's own tokenizer. */
async function feedsOf(dir: string, text: string, pair?: string): Promise<Feeds> {
  const tok = new Tokenizer(
    JSON.parse(await Deno.readTextFile(join(dir, "tokenizer.json"))),
    JSON.parse(await Deno.readTextFile(join(dir, "tokenizer_config.json"))),
  );
  const e = tok.encode(text, { text_pair: pair ?? null, return_token_type_ids: true });
  const dims = [1, e.ids.length];
  return {
    input_ids: { type: "int64", dims, data: e.ids },
    attention_mask: { type: "int64", dims, data: e.ids.map(() => 1) },
    token_type_ids: { type: "int64", dims, data: e.token_type_ids ?? e.ids.map(() => 0) },
  };
}

/**
 * The reference sentence vector: the graph at `dir/graph` run on the text alone, its
 * `last_hidden_state` pooled here (mean over the tokens, the first token, the element-wise
 * maximum, or the last token), L2-normalised.
 */
export async function referenceVector(
  dir: string,
  graph: string,
  text: string,
  pooling: "mean" | "cls" | "max" | "last_token",
): Promise<Float32Array> {
  const m = await openModel(await Deno.readFile(join(dir, graph)));
  try {
    const out = (await runModel(m, await feedsOf(dir, text))).last_hidden_state;
    const [, seq, dim] = out.dims;
    const v = new Float32Array(dim);
    const row = (t: number) => out.data.subarray(t * dim, (t + 1) * dim);
    if (pooling === "cls") v.set(row(0));
    else if (pooling === "last_token") v.set(row(seq - 1));
    else if (pooling === "max") {
      v.set(row(0));
      for (let t = 1; t < seq; t++) row(t).forEach((x, d) => v[d] = Math.max(v[d], x));
    } else {
      for (let t = 0; t < seq; t++) row(t).forEach((x, d) => v[d] += x / seq);
    }
    const n = Math.hypot(...v);
    return v.map((x) => x / n);
  } finally {
    await m.session.release();
  }
}

/** The reranker graph's raw logit for a (query, document) pair. */
export async function referenceLogit(
  dir: string,
  graph: string,
  q: string,
  d: string,
): Promise<number> {
  const m = await openModel(await Deno.readFile(join(dir, graph)));
  try {
    return (await runModel(m, await feedsOf(dir, q, d))).logits.data[0];
  } finally {
    await m.session.release();
  }
}
