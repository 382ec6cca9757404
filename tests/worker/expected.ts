/**
 * Expected outputs computed without the worker: each text tokenised alone (no padding) with the
 * library tokenizer, the fixture graph run directly in onnxruntime-node, pooling done here.
 * The worker batches, pads and post-processes on its own; results must agree.
 */
import { ensureFixtures, SPECIAL_IDS } from "@svc/fixture-models";
import { fixtureTokenizer, openModel, runModel, textFeeds } from "../fixtures/testing.ts";

async function modelFor(name: string) {
  const fx = await ensureFixtures();
  return await openModel(await Deno.readFile(`${fx}/cache/fixture/${name}/onnx/model.onnx`));
}

function l2(v: Float32Array): Float32Array {
  let s = 0;
  for (const x of v) s += x * x;
  const n = Math.sqrt(s);
  return n > 0 ? v.map((x) => x / n) : v;
}

/** Mean-pooled, L2-normalised embedding of each text with the given fixture model. */
export async function expectedDense(name: string, texts: string[]): Promise<Float32Array[]> {
  const m = await modelFor(name);
  const tok = fixtureTokenizer();
  const out: Float32Array[] = [];
  for (const text of texts) {
    const feeds = textFeeds(tok, [text], m.inputNames.includes("token_type_ids"));
    const r = await runModel(m, feeds);
    const t = r[m.outputNames[0]];
    if (t.dims.length === 2) {
      out.push(l2(t.data.slice()));
      continue;
    }
    const [, seq, dim] = t.dims;
    const v = new Float32Array(dim);
    for (let p = 0; p < seq; p++) for (let d = 0; d < dim; d++) v[d] += t.data[p * dim + d] / seq;
    out.push(l2(v));
  }
  await m.session.release();
  return out;
}

/** SPLADE weights (index → value) of each text with the sparse fixture. */
export async function expectedSparse(texts: string[]): Promise<Map<number, number>[]> {
  const m = await modelFor("sparse");
  const tok = fixtureTokenizer();
  const out: Map<number, number>[] = [];
  for (const text of texts) {
    const r = await runModel(m, textFeeds(tok, [text], m.inputNames.includes("token_type_ids")));
    const t = r[m.outputNames[0]];
    const [, seq, vocab] = t.dims;
    const w = new Map<number, number>();
    for (let v = 0; v < vocab; v++) {
      let best = 0;
      for (let p = 0; p < seq; p++) best = Math.max(best, t.data[p * vocab + v]);
      if (best > 0) w.set(v, Math.log1p(best));
    }
    out.push(w);
  }
  await m.session.release();
  return out;
}

/** What BGE-M3 post-processing should give for one text. */
export interface ExpectedM3 {
  dense: Float32Array;
  /** Token id → weight (special tokens and zero weights left out). */
  sparse: Map<number, number>;
  /** One L2-normalised row per token after [CLS] ([SEP] included). */
  multivector: Float32Array[];
}

/**
 * fixture/m3 run on each text alone (no padding): CLS dense vector (L2), per-id max of the
 * per-token weights without the special tokens, and the token vectors after [CLS], each L2.
 */
export async function expectedM3(texts: string[]): Promise<ExpectedM3[]> {
  const m = await modelFor("m3");
  const tok = fixtureTokenizer();
  const specials = new Set<number>([
    SPECIAL_IDS.pad,
    SPECIAL_IDS.unk,
    SPECIAL_IDS.cls,
    SPECIAL_IDS.sep,
    SPECIAL_IDS.mask,
  ]);
  const out: ExpectedM3[] = [];
  for (const text of texts) {
    const feeds = textFeeds(tok, [text], false);
    const ids = Array.from(feeds.input_ids.data);
    const r = await runModel(m, feeds);
    const sparse = new Map<number, number>();
    ids.forEach((id, p) => {
      const w = r.sparse_vecs.data[p];
      if (!specials.has(id) && w > 0 && w > (sparse.get(id) ?? 0)) sparse.set(id, w);
    });
    const dim = r.colbert_vecs.dims[2];
    const multivector: Float32Array[] = [];
    for (let p = 0; p < ids.length - 1; p++) {
      multivector.push(l2(r.colbert_vecs.data.slice(p * dim, (p + 1) * dim)));
    }
    out.push({ dense: l2(r.dense_vecs.data.slice()), sparse, multivector });
  }
  await m.session.release();
  return out;
}

/** Token ids of a text with special tokens (fixture tokenizer). */
export function fixtureIds(text: string): number[] {
  return fixtureTokenizer().encode(text).ids;
}

/** Cosine similarity of two vectors. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}

/** Largest absolute difference of two equal-length vectors. */
export function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
