/** POST /v1/encode/{model}: dense, sparse and multi-vector embeddings. */
import type { Context } from "hono";
import { invalidInput } from "@svc/shared/errors";
import { EncodeRequestSchema } from "@svc/shared/schemas/encode";
import type { WorkItem } from "../../families/types.ts";
import { planEncode } from "../../service/params.ts";
import { toEncodeResult } from "../../service/encode_result.ts";
import type { WorkerContext } from "../context.ts";
import { answerModelRequest, openModelRequest, runOnModel } from "../model_request.ts";

/** Handle one encode request end to end. */
export async function handleEncode(ctx: WorkerContext, c: Context): Promise<Response> {
  const mr = await openModelRequest(ctx, c, "encode", EncodeRequestSchema);
  const { served, body } = mr;
  const textModel = served.config.inputs.includes("text");
  const work: WorkItem[] = body.items.map((it, i) => {
    if (it.text === undefined && !(it.images && it.images.length > 0)) {
      throw invalidInput(`items[${i}] has neither text nor images`);
    }
    if (it.text === undefined && textModel && !served.config.inputs.includes("image")) {
      throw invalidInput(`items[${i}] has no text; model '${served.config.id}' reads text`);
    }
    return { text: it.text };
  });
  const plan = planEncode(served, body.params);
  const result = await runOnModel(ctx, served, mr.req.signal, work, plan.params);
  const t0 = performance.now();
  const items = result.outputs.map((out, i) => {
    const r = toEncodeResult(out, plan, served.config);
    const id = body.items[i].id;
    return id === undefined ? r : { id, ...r };
  });
  result.timing.postprocessingMs += performance.now() - t0;
  return answerModelRequest(c, mr, result, { items });
}
