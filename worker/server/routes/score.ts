/**
 * POST /v1/score/{model}: rank items against a query, with a cross-encoder (each pair through the
 * model) or with any encode model (query and items embedded, then compared; see
 * service/embedding_score.ts). With an image model (CLIP) the query and the items may be texts or
 * images: text→image search is one call.
 */
import type { DirectAnswer } from "@svc/shared/http/direct_call";
import type { ServedModel } from "@svc/shared/catalog";
import { invalidInput } from "@svc/shared/errors";
import { type ScoreRequest, ScoreRequestSchema } from "@svc/shared/schemas/score";
import type { ScoreEntry } from "@svc/shared/schemas/score";
import { familyOp } from "../../families/kinds.ts";
import type { WorkItem, WorkParams } from "../../families/types.ts";
import type { RequestResult } from "../../scheduler/batcher.ts";
import { checkLora, effectiveOptions } from "../../service/params.ts";
import { planEmbeddingScore, scoreByEmbeddings } from "../../service/embedding_score.ts";
import { answeredId, checkItemKinds, prepareWork } from "../../service/inputs.ts";
import type { WorkerContext } from "../context.ts";
import { answerModelRequest, openModelRequest, runOnModel } from "../model_request.ts";
import type { ModelCall } from "../model_call.ts";

/**
 * Rank entries by score, highest first; ties keep request order (stable sort). An item sent
 * without an id is answered as `item-{i}`, its position in the request.
 */
export function rankScores(ids: (string | undefined)[], scores: number[]): ScoreEntry[] {
  return rankOrder(scores).map((i, rank) => ({
    item_id: answeredId(ids[i], i),
    score: scores[i],
    rank,
  }));
}

/** Positions of `scores` from the highest score to the lowest; ties keep request order. */
export function rankOrder(scores: readonly number[]): number[] {
  return scores.map((_, i) => i).sort((a, b) => scores[b] - scores[a] || a - b);
}

/** Handle one score request end to end. */
export async function handleScore(ctx: WorkerContext, call: ModelCall): Promise<DirectAnswer> {
  const mr = await openModelRequest(ctx, call, "score", ScoreRequestSchema);
  const { served, body } = mr;
  const { scores, result } = await scoreItems(ctx, served, call, body);
  return answerModelRequest(mr, result, {
    query_id: body.query.id ?? null,
    scores: rankScores(body.items.map((it) => it.id), scores),
  });
}

/** Scores and timing of one request. */
export interface Scored {
  /** One score per item, in item order. */
  scores: number[];
  result: RequestResult;
}

/** What is scored: a score request's fields, plus a cap on each item's tokens. */
export interface ScoreJob
  extends Pick<ScoreRequest, "query" | "items" | "instruction" | "options"> {
  /** Most tokens of each item's text (Cohere's `max_tokens_per_doc`). */
  maxItemTokens?: number;
}

/** Score `job.items` against `job.query`: by a cross-encoder's logit, or by embedding similarity. */
export function scoreItems(
  ctx: WorkerContext,
  served: ServedModel,
  call: ModelCall,
  job: ScoreJob,
): Promise<Scored> {
  return familyOp(served.config.family) === "score"
    ? crossEncoderScores(ctx, served, call, job)
    : embeddingScores(ctx, served, call, job);
}

/** Cross-encoder: every (query, item) pair through the model; the score is its logit. */
async function crossEncoderScores(
  ctx: WorkerContext,
  served: ServedModel,
  call: ModelCall,
  job: ScoreJob,
): Promise<Scored> {
  const query = job.query.text;
  if (query === undefined) throw invalidInput("query.text is required");
  // Images are refused before a missing text, so the answer names what the model reads.
  checkItemKinds(served.config, job.items);
  const texts = job.items.map((it, i) => {
    if (it.text === undefined) throw invalidInput(`items[${i}] has no text`);
    return it.text;
  });
  // Validates `options.profile` and `options.lora_id`; rerankers read no other option.
  checkLora(served.config, effectiveOptions(served, job.options).options);
  const work: WorkItem[] = texts.map((text) => ({ query, text }));
  const params: WorkParams = { op: "score", prefix: job.instruction, maxTokens: job.maxItemTokens };
  const result = await runOnModel(ctx, served, call.signal, work, params);
  return { scores: result.outputs.map((o) => o.score ?? 0), result };
}

/** Encode model: the query and the items embedded (concurrently), then compared. */
async function embeddingScores(
  ctx: WorkerContext,
  served: ServedModel,
  call: ModelCall,
  job: ScoreJob,
): Promise<Scored> {
  const plan = planEmbeddingScore(served, job.instruction, job.options);
  plan.documents.maxTokens = job.maxItemTokens;
  call.facts.lora = plan.query.lora;
  const signal = call.signal;
  const [query, items] = await Promise.all([
    prepareWork(ctx.images, served, [job.query], signal, () => "query"),
    prepareWork(ctx.images, served, job.items, signal),
  ]);
  const [q, docs] = await Promise.all([
    runOnModel(ctx, served, signal, query.work, plan.query),
    runOnModel(ctx, served, signal, items.work, plan.documents),
  ]);
  const t0 = performance.now();
  const scores = await scoreByEmbeddings(
    q.outputs[0],
    docs.outputs,
    plan,
    served.config,
    ctx.settings.maxMaxSimOps,
    signal,
  );
  const result: RequestResult = {
    outputs: docs.outputs,
    // The two runs wait side by side; their work adds up.
    queueMs: Math.max(q.queueMs, docs.queueMs),
    timing: {
      // Images of the query and the items were prepared side by side too.
      tokenizationMs: q.timing.tokenizationMs + docs.timing.tokenizationMs +
        Math.max(query.imageMs, items.imageMs),
      inferenceMs: q.timing.inferenceMs + docs.timing.inferenceMs,
      postprocessingMs: q.timing.postprocessingMs + docs.timing.postprocessingMs +
        performance.now() - t0,
    },
    tokens: q.tokens + docs.tokens,
  };
  return { scores, result };
}
