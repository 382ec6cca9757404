/** POST /v1/score/{model}: rerank items against a query with a cross-encoder. */
import type { Context } from "hono";
import { invalidInput } from "@svc/shared/errors";
import { ScoreRequestSchema } from "@svc/shared/schemas/score";
import type { ScoreEntry } from "@svc/shared/schemas/score";
import type { WorkItem, WorkParams } from "../../families/types.ts";
import { checkLora, effectiveOptions } from "../../service/params.ts";
import type { WorkerContext } from "../context.ts";
import { answerModelRequest, openModelRequest, runOnModel } from "../model_request.ts";

/** Rank entries by score, highest first; ties keep request order (stable sort). */
export function rankScores(ids: (string | undefined)[], scores: number[]): ScoreEntry[] {
  return scores
    .map((score, i) => ({ item_id: ids[i] ?? null, score, i }))
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .map(({ item_id, score }, rank) => ({ item_id, score, rank }));
}

/** Handle one score request end to end. */
export async function handleScore(ctx: WorkerContext, c: Context): Promise<Response> {
  const mr = await openModelRequest(ctx, c, "score", ScoreRequestSchema);
  const { served, body } = mr;
  if (body.query.text === undefined) throw invalidInput("query.text is required");
  const work: WorkItem[] = body.items.map((it, i) => {
    if (it.text === undefined) throw invalidInput(`items[${i}] has no text`);
    return { query: body.query.text, text: it.text };
  });
  // Validates `options.profile` and `options.lora_id`; rerankers read no other option.
  checkLora(served.config, effectiveOptions(served, body.options).options);
  const params: WorkParams = { op: "score", prefix: body.instruction };
  const result = await runOnModel(ctx, served, mr.req.signal, work, params);
  const scores = rankScores(
    body.items.map((it) => it.id),
    result.outputs.map((o) => o.score ?? 0),
  );
  return answerModelRequest(c, mr, result, { query_id: body.query.id ?? null, scores });
}
