/** POST /v1/encode/{model}: dense, sparse and multi-vector embeddings. */
import type { Context } from "hono";
import { EncodeRequestSchema } from "@svc/shared/schemas/encode";
import { prepareWork } from "../../service/inputs.ts";
import { planEncode } from "../../service/params.ts";
import { toEncodeResult } from "../../service/encode_result.ts";
import type { WorkerContext } from "../context.ts";
import { setLoraLabel } from "../request_labels.ts";
import { answerModelRequest, openModelRequest, runOnModel } from "../model_request.ts";

/** Handle one encode request end to end. */
export async function handleEncode(ctx: WorkerContext, c: Context): Promise<Response> {
  const mr = await openModelRequest(ctx, c, "encode", EncodeRequestSchema);
  const { served, body } = mr;
  const plan = planEncode(served, body.params);
  setLoraLabel(c, plan.params.lora);
  const { work, imageMs } = await prepareWork(ctx.images, served, body.items, mr.req.signal);
  const result = await runOnModel(ctx, served, mr.req.signal, work, plan.params);
  // Image preparation is this request's preprocessing: it is reported as tokenisation time.
  result.timing.tokenizationMs += imageMs;
  const t0 = performance.now();
  const items = result.outputs.map((out, i) => {
    const r = toEncodeResult(out, plan, served.config);
    const id = body.items[i].id;
    return id === undefined ? r : { id, ...r };
  });
  result.timing.postprocessingMs += performance.now() - t0;
  return answerModelRequest(c, mr, result, { items });
}
