/**
 * POST /v1/extract/{model}: entities, relations, classifications, structured data, and objects
 * detected in images.
 */
import type { DirectAnswer } from "@svc/shared/http/direct_call";
import { ExtractRequestSchema, type ExtractResult } from "@svc/shared/schemas/extract";
import type { RequestResult } from "../../scheduler/batcher.ts";
import { planExtract } from "../../service/extract/plan.ts";
import { extractResult } from "../../service/extract/result.ts";
import { type RelationGroup, relationGroups } from "../../service/extract/item_metadata.ts";
import { prepareWork } from "../../service/inputs.ts";
import type { WorkerContext } from "../context.ts";
import type { ModelCall } from "../model_call.ts";
import {
  answerModelRequest,
  boundExtractCost,
  openModelRequest,
  runOnModel,
} from "../model_request.ts";

/** Handle one extract request end to end. */
export async function handleExtract(ctx: WorkerContext, call: ModelCall): Promise<DirectAnswer> {
  const mr = await openModelRequest(ctx, call, "extract", ExtractRequestSchema);
  const { served, body } = mr;
  // Relation requests may take entities or entity types per item (metadata): one run per set of
  // types; items that name no entity are answered with empty lists.
  const byMetadata = relationGroups(served, body.params, body.items);
  const groups: RelationGroup[] = byMetadata?.groups ??
    [{ indices: body.items.map((_, i) => i), params: body.params }];
  // Plans first: a bad param is a 400 before any image is prepared or model loaded.
  const plans = groups.map((g) => planExtract(served, g.params, g));
  // What an item that runs in no group answers (and its params' checks, when no group runs).
  const idle = byMetadata && planExtract(served, body.params, { namedEntities: true });
  // Text models get the item texts; detection models get the items' images, prepared on the pool.
  const { work, imageMs } = await prepareWork(ctx.images, served, body.items, call.signal);
  byMetadata?.heads.forEach((heads, i) => {
    if (heads) work[i].heads = heads;
  });
  // The request's cost as a whole, before any of it runs (a 400 over the request bound).
  const weights = await boundExtractCost(
    ctx,
    served,
    call,
    groups.map((g, k) => ({ work: g.indices.map((i) => work[i]), params: plans[k].work })),
  );
  const items: ExtractResult[] = new Array(body.items.length);
  const results = await Promise.all(groups.map(async (g, k) => {
    const groupWork = g.indices.map((i) => work[i]);
    const result = await runOnModel(ctx, served, call, groupWork, plans[k].work, weights?.[k]);
    g.indices.forEach((i, j) => {
      items[i] = extractResult(
        plans[k],
        result.outputs[j],
        work[i].text ?? "",
        body.items[i].id,
        i,
      );
    });
    return result;
  }));
  if (byMetadata && idle) {
    body.items.forEach((it, i) => {
      items[i] ??= extractResult(idle, { tokens: 0 }, "", it.id, i);
      // Mentions the client named are the item's entities, as it sent them.
      const mentions = byMetadata.mentions[i];
      if (mentions) items[i].entities = mentions;
    });
  }
  const result = merged(results);
  result.timing.tokenizationMs += imageMs;
  return answerModelRequest(mr, result, { items });
}

/** One request's timing from groups that ran side by side (their work adds up). */
function merged(results: RequestResult[]): RequestResult {
  if (results.length === 1) return results[0];
  if (results.length === 0) {
    // Every item named no entity: nothing ran.
    return {
      outputs: [],
      queueMs: 0,
      timing: { tokenizationMs: 0, inferenceMs: 0, postprocessingMs: 0 },
      tokens: 0,
    };
  }
  return {
    outputs: results.flatMap((r) => r.outputs),
    queueMs: Math.max(...results.map((r) => r.queueMs)),
    timing: {
      tokenizationMs: results.reduce((n, r) => n + r.timing.tokenizationMs, 0),
      inferenceMs: results.reduce((n, r) => n + r.timing.inferenceMs, 0),
      postprocessingMs: results.reduce((n, r) => n + r.timing.postprocessingMs, 0),
    },
    tokens: results.reduce((n, r) => n + r.tokens, 0),
  };
}
