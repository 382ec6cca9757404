/**
 * Score with an encode model (docs/api.md, "Score"): the query is encoded as a query and the items
 * as documents (prompts and ColBERT markers follow), then each item is scored by the similarity of
 * one output type: dense by cosine, sparse by dot product, multi-vector by MaxSim. Which output:
 * `options.output_type`, else `dense` when the model has it, else the profile's first embedding
 * output (a SPLADE model scores sparse, a ColBERT model multi-vector).
 *
 * MaxSim runs on the main thread and multiplies: query tokens × the items' tokens × dimensions
 * (a ColBERT rerank of 1024 items of 300 tokens is 1.3 G multiply-adds, about 2 s of one core at
 * the 0.56 G/s measured here; BGE-M3's 1024-dimension token vectors with a long query are hours).
 * It is bounded before it starts (`SVC_MAX_MAXSIM_OPS`) and computed in slices that yield to the
 * event loop, so probes and other requests go on, and it stops once the client is gone.
 */
import type { ServedModel } from "@svc/shared/catalog";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { ClientGoneError, invalidInput } from "@svc/shared/errors";
import { OUTPUT_TYPES, type OutputType } from "@svc/shared/schemas/encode";
import type { ItemOutput, WorkParams } from "../families/types.ts";
import { checkDimensions, checkLora, defaultOutputTypes, effectiveOptions } from "./params.ts";
import { truncateDense } from "./matryoshka.ts";
import { cosine, maxSim, sparseDot, type TokenVectors } from "./similarity.ts";

/**
 * Multiply-adds of MaxSim computed between two yields to the event loop: about 7 ms at the rate
 * above. A yield costs about 2 ms here (a zero-delay timer; `setImmediate` and `MessageChannel`
 * are cheaper but let no HTTP request in: measured, 0-1 of 20 answered during 200 yields, against
 * 20 of 20 with the timer), so smaller slices would spend a third of the time waiting.
 */
const MAXSIM_SLICE_OPS = 4_000_000;

/** How a score request runs on an encode model. */
export interface EmbeddingScorePlan {
  /** The output compared. */
  output: OutputType;
  /** Batch parameters of the query (encoded as a query) and of the items (as documents). */
  query: WorkParams;
  documents: WorkParams;
  /** Matryoshka truncation of dense vectors before the cosine. */
  dimensions?: number;
}

/** Validate the request's options against the model and plan the two encode runs. */
export function planEmbeddingScore(
  served: ServedModel,
  instruction: string | undefined,
  requestOptions: Record<string, unknown> | undefined,
): EmbeddingScorePlan {
  const config = served.config;
  const { modelProfile, options } = effectiveOptions(served, requestOptions);
  const lora = checkLora(config, options);
  const output = scoreOutput(config, modelProfile, options.output_type);
  const dimensions = options.dimensions === undefined
    ? undefined
    : checkDimensions(config, options.dimensions, "options.dimensions");
  const outputs = [output];
  return {
    output,
    query: {
      op: "encode",
      prefix: instruction ?? config.prompts.query,
      inputType: "query",
      outputs,
      lora,
    },
    documents: {
      op: "encode",
      prefix: config.prompts.document,
      inputType: "document",
      outputs,
      lora,
    },
    dimensions,
  };
}

/** The output type a score request compares (see the module comment). */
function scoreOutput(config: ModelConfig, modelProfile: string, asked: unknown): OutputType {
  if (asked === undefined) return defaultOutputTypes(config, modelProfile)[0];
  if (typeof asked !== "string" || !OUTPUT_TYPES.includes(asked as OutputType)) {
    throw invalidInput(`options.output_type must be one of ${OUTPUT_TYPES.join(", ")}`);
  }
  if (!config.outputs.includes(asked as OutputType)) {
    throw invalidInput(
      `model '${config.id}' does not produce '${asked}' (it produces: ${
        config.outputs.join(", ")
      })`,
    );
  }
  return asked as OutputType;
}

/**
 * Similarity of the query's embedding with each item's, in item order. `maxMaxSimOps` bounds
 * multi-vector scoring (SVC_MAX_MAXSIM_OPS); `signal` stops it when the client leaves.
 */
export async function scoreByEmbeddings(
  query: ItemOutput,
  items: ItemOutput[],
  plan: EmbeddingScorePlan,
  config: ModelConfig,
  maxMaxSimOps: number,
  signal?: AbortSignal,
): Promise<number[]> {
  switch (plan.output) {
    case "dense": {
      const dense = (o: ItemOutput): Float32Array => {
        if (!o.dense) throw new Error("the model returned no dense vector");
        return plan.dimensions === undefined
          ? o.dense
          : truncateDense(o.dense, plan.dimensions, config);
      };
      const q = dense(query);
      return items.map((o) => cosine(q, dense(o)));
    }
    case "sparse": {
      if (!query.sparse) throw new Error("the model returned no sparse vector");
      const q = query.sparse;
      return items.map((o) => {
        if (!o.sparse) throw new Error("the model returned no sparse vector");
        return sparseDot(q, o.sparse);
      });
    }
    case "multivector": {
      if (!query.multivector) throw new Error("the model returned no multi-vector");
      const docs = items.map((o) => {
        if (!o.multivector) throw new Error("the model returned no multi-vector");
        return o.multivector;
      });
      return await maxSimScores(query.multivector, docs, maxMaxSimOps, signal);
    }
  }
}

/** MaxSim of `q` with each of `docs`: refused over `maxOps`, computed in slices (module doc). */
export async function maxSimScores(
  q: TokenVectors,
  docs: readonly TokenVectors[],
  maxOps: number,
  signal?: AbortSignal,
): Promise<number[]> {
  const docTokens = docs.reduce((n, d) => n + d.numTokens, 0);
  const ops = q.numTokens * docTokens * q.tokenDims;
  if (ops > maxOps) {
    throw invalidInput(
      `multi-vector scoring (MaxSim) of ${q.numTokens} query tokens against ${docTokens} item ` +
        `tokens of ${q.tokenDims} dimensions takes ${ops} multiply-adds; at most ${maxOps} ` +
        `(SVC_MAX_MAXSIM_OPS): send fewer or shorter items, or a shorter query`,
    );
  }
  const scores: number[] = [];
  let slice = 0;
  for (const d of docs) {
    if (slice >= MAXSIM_SLICE_OPS) {
      slice = 0;
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (signal?.aborted) throw new ClientGoneError();
    }
    scores.push(maxSim(q, d));
    slice += q.numTokens * d.numTokens * q.tokenDims;
  }
  return scores;
}
