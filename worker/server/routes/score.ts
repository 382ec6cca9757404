/** POST /v1/score/{model}: rerank items against a query with a cross-encoder. */
import type { Context } from "hono";
import { invalidInput } from "../../../shared/errors.ts";
import { readBodyLimited } from "../../../shared/codec/decode.ts";
import { decodeRequest } from "../../../shared/codec/parse.ts";
import { ScoreRequestSchema } from "../../../shared/schemas/score.ts";
import type { ScoreEntry } from "../../../shared/schemas/score.ts";
import type { WorkItem, WorkParams } from "../../families/types.ts";
import { checkLora, effectiveOptions } from "../../service/params.ts";
import type { WorkerContext } from "../context.ts";
import { gateModel } from "../model_gate.ts";
import { makeTiming, modelFromPath, timingHeaders, traceIdOf } from "../http_io.ts";
import { sendNegotiated } from "../respond.ts";
import { setModelLabel, setPhases } from "../request_labels.ts";

/** Rank entries by score, highest first; ties keep request order (stable sort). */
export function rankScores(ids: (string | undefined)[], scores: number[]): ScoreEntry[] {
  return scores
    .map((score, i) => ({ item_id: ids[i] ?? null, score, i }))
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .map(({ item_id, score }, rank) => ({ item_id, score, rank }));
}

/** Handle one score request end to end. */
export async function handleScore(ctx: WorkerContext, c: Context): Promise<Response> {
  const started = performance.now();
  const req = c.req.raw;
  const traceId = traceIdOf(req);
  const name = modelFromPath(req.url, "/v1/score/");
  setModelLabel(c, name);
  const served = gateModel(ctx, name, "score");
  const body = decodeRequest(
    ScoreRequestSchema,
    await readBodyLimited(req, ctx.limits),
    req.headers.get("content-type"),
    ctx.limits,
  );
  if (body.query.text === undefined) throw invalidInput("query.text is required");
  const work: WorkItem[] = body.items.map((it, i) => {
    if (it.text === undefined) throw invalidInput(`items[${i}] has no text`);
    return { query: body.query.text, text: it.text };
  });
  const { profile, options } = effectiveOptions(served, body.options);
  checkLora(served.config, options);
  const params: WorkParams = {
    op: "score",
    outputTypes: [],
    prefix: body.instruction,
    options: { ...options, profile },
  };
  const model = await ctx.registry.acquire(served, ctx.config.SVC_LOAD_WAIT_MS);
  const result = await ctx.registry.use(
    model,
    () => model.batcher.submit(work, params, req.signal),
  );
  const scores = rankScores(
    body.items.map((it) => it.id),
    result.outputs.map((o) => o.score ?? 0),
  );
  const timing = makeTiming(performance.now() - started, result);
  setPhases(c, timing);
  return sendNegotiated(
    req,
    { model: name, query_id: body.query.id ?? null, scores },
    200,
    timingHeaders(timing, traceId),
  );
}
