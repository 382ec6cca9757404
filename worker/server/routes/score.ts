/**
 * POST /v1/score/{model}: rank items against a query, with a cross-encoder (each pair through the
 * model) or with any encode model (query and items embedded, then compared; see
 * service/embedding_score.ts). With an image model (CLIP) the query and the items may be texts or
 * images: text→image search is one call.
 */
import type { DirectAnswer } from "@svc/shared/http/direct_call";
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
import {
  answerModelRequest,
  type ModelRequest,
  openModelRequest,
  runOnModel,
} from "../model_request.ts";
import type { ModelCall } from "../model_call.ts";

/**
 * Rank entries by score, highest first; ties keep request order (stable sort). An item sent
 * without an id is answered as `item-{i}`, its position in the request.
 */
export function rankScores(ids: (string | undefined)[], scores: number[]): ScoreEntry[] {
  return scores
    .map((score, i) => ({ item_id: answeredId(ids[i], i), score, i }))
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .map(({ item_id, score }, rank) => ({ item_id, score, rank }));
}

/** Handle one score request end to end. */
export async function handleScore(ctx: WorkerContext, call: ModelCall): Promise<DirectAnswer> {
  const mr = await openModelRequest(ctx, call, "score", ScoreRequestSchema);
  const { served, body } = mr;
  const { scores, result } = familyOp(served.config.family) === "score"
    ? await crossEncoderScores(ctx, mr)
    : await embeddingScores(ctx, mr);
  return answerModelRequest(mr, result, {
    query_id: body.query.id ?? null,
    scores: rankScores(body.items.map((it) => it.id), scores),
  });
}

/** Scores and timing of one request. */
interface Scored {
  scores: number[];
  result: RequestResult;
}

/** Cross-encoder: every (query, item) pair through the model; the score is its logit. */
async function crossEncoderScores(
  ctx: WorkerContext,
  mr: ModelRequest<ScoreRequest>,
): Promise<Scored> {
  const { served, body } = mr;
  const query = body.query.text;
  if (query === undefined) throw invalidInput("query.text is required");
  // Images are refused before a missing text, so the answer names what the model reads.
  checkItemKinds(served.config, body.items);
  const texts = body.items.map((it, i) => {
    if (it.text === undefined) throw invalidInput(`items[${i}] has no text`);
    return it.text;
  });
  // Validates `options.profile` and `options.lora_id`; rerankers read no other option.
  checkLora(served.config, effectiveOptions(served, body.options).options);
  const work: WorkItem[] = texts.map((text) => ({ query, text }));
  const params: WorkParams = { op: "score", prefix: body.instruction };
  const result = await runOnModel(ctx, served, mr.call.signal, work, params);
  return { scores: result.outputs.map((o) => o.score ?? 0), result };
}

/** Encode model: the query and the items embedded (concurrently), then compared. */
async function embeddingScores(
  ctx: WorkerContext,
  mr: ModelRequest<ScoreRequest>,
): Promise<Scored> {
  const { served, body } = mr;
  const plan = planEmbeddingScore(served, body.instruction, body.options);
  mr.call.facts.lora = plan.query.lora;
  const signal = mr.call.signal;
  const [query, items] = await Promise.all([
    prepareWork(ctx.images, served, [body.query], signal, () => "query"),
    prepareWork(ctx.images, served, body.items, signal),
  ]);
  const [q, docs] = await Promise.all([
    runOnModel(ctx, served, signal, query.work, plan.query),
    runOnModel(ctx, served, signal, items.work, plan.documents),
  ]);
  const t0 = performance.now();
  const scores = scoreByEmbeddings(q.outputs[0], docs.outputs, plan, served.config);
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
