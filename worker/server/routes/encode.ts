/** POST /v1/encode/{model}: dense, sparse and multi-vector embeddings. */
import type { DirectAnswer } from "@svc/shared/http/direct_call";
import { EncodeRequestSchema } from "@svc/shared/schemas/encode";
import { prepareWork } from "../../service/inputs.ts";
import { planEncode } from "../../service/params.ts";
import { toEncodeResult } from "../../service/encode_result.ts";
import type { WorkerContext } from "../context.ts";
import type { ModelCall } from "../model_call.ts";
import { answerModelRequest, openModelRequest, runOnModel } from "../model_request.ts";

/** Handle one encode request end to end. */
export async function handleEncode(ctx: WorkerContext, call: ModelCall): Promise<DirectAnswer> {
  const mr = await openModelRequest(ctx, call, "encode", EncodeRequestSchema);
  const { served, body } = mr;
  const plan = planEncode(served, body.params);
  call.facts.lora = plan.params.lora;
  const { work, imageMs } = await prepareWork(ctx.images, served, body.items, call.signal);
  const result = await runOnModel(ctx, served, call, work, plan.params);
  // Image preparation is this request's preprocessing: it is reported as tokenisation time.
  result.timing.tokenizationMs += imageMs;
  const t0 = performance.now();
  const items = result.outputs.map((out, i) => {
    const r = toEncodeResult(out, plan, served.config);
    const id = body.items[i].id;
    return id === undefined ? r : { id, ...r };
  });
  result.timing.postprocessingMs += performance.now() - t0;
  return answerModelRequest(mr, result, { items });
}
