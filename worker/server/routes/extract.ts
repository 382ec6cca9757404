/**
 * POST /v1/extract/{model}: entities, relations, classifications, structured data, and objects
 * detected in images.
 */
import type { DirectAnswer } from "@svc/shared/http/direct_call";
import { ExtractRequestSchema } from "@svc/shared/schemas/extract";
import { planExtract } from "../../service/extract/plan.ts";
import { extractResult } from "../../service/extract/result.ts";
import { prepareWork } from "../../service/inputs.ts";
import type { WorkerContext } from "../context.ts";
import type { ModelCall } from "../model_call.ts";
import { answerModelRequest, openModelRequest, runOnModel } from "../model_request.ts";

/** Handle one extract request end to end. */
export async function handleExtract(ctx: WorkerContext, call: ModelCall): Promise<DirectAnswer> {
  const mr = await openModelRequest(ctx, call, "extract", ExtractRequestSchema);
  const { served, body } = mr;
  const plan = planExtract(served, body.params);
  // Text models get the item texts; detection models get the items' images, prepared on the pool.
  const { work, imageMs } = await prepareWork(ctx.images, served, body.items, call.signal);
  const result = await runOnModel(ctx, served, call.signal, work, plan.work);
  result.timing.tokenizationMs += imageMs;
  const items = result.outputs.map((out, i) =>
    extractResult(plan, out, work[i].text ?? "", body.items[i].id)
  );
  return answerModelRequest(mr, result, { items });
}
