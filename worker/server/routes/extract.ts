/** POST /v1/extract/{model}: entities, relations, classifications and structured data. */
import type { Context } from "hono";
import { invalidInput } from "@svc/shared/errors";
import { ExtractRequestSchema } from "@svc/shared/schemas/extract";
import type { WorkItem } from "../../families/types.ts";
import { planExtract } from "../../service/extract/plan.ts";
import { extractResult } from "../../service/extract/result.ts";
import type { WorkerContext } from "../context.ts";
import { answerModelRequest, openModelRequest, runOnModel } from "../model_request.ts";

/** Handle one extract request end to end. */
export async function handleExtract(ctx: WorkerContext, c: Context): Promise<Response> {
  const mr = await openModelRequest(ctx, c, "extract", ExtractRequestSchema);
  const { served, body } = mr;
  const work: WorkItem[] = body.items.map((it, i) => {
    if (it.text === undefined) {
      throw invalidInput(`items[${i}] has no text; model '${served.config.id}' reads text`);
    }
    return { text: it.text };
  });
  const plan = planExtract(served, body.params);
  const result = await runOnModel(ctx, served, mr.req.signal, work, plan.work);
  const items = result.outputs.map((out, i) =>
    extractResult(plan, out, work[i].text ?? "", body.items[i].id)
  );
  return answerModelRequest(c, mr, result, { items });
}
