/** POST /v1/encode/{model}: dense, sparse and multi-vector embeddings. */
import type { Context } from "hono";
import { invalidInput } from "../../../shared/errors.ts";
import { decodeBody, readBodyLimited } from "../../../shared/codec/decode.ts";
import { parseRequest } from "../../../shared/codec/parse.ts";
import { EncodeRequestSchema } from "../../../shared/schemas/encode.ts";
import type { WorkItem } from "../../families/types.ts";
import { planEncode } from "../../service/params.ts";
import { toEncodeResult } from "../../service/encode_result.ts";
import type { WorkerContext } from "../context.ts";
import { gateModel } from "../model_gate.ts";
import { makeTiming, modelFromPath, timingHeaders, traceIdOf } from "../http_io.ts";
import { sendNegotiated } from "../respond.ts";
import { setModelLabel, setPhases } from "../request_labels.ts";

/** Handle one encode request end to end. */
export async function handleEncode(ctx: WorkerContext, c: Context): Promise<Response> {
  const started = performance.now();
  const req = c.req.raw;
  const traceId = traceIdOf(req);
  const name = modelFromPath(req.url, "/v1/encode/");
  setModelLabel(c, name);
  const served = gateModel(ctx, name, "encode");
  const raw = decodeBody(
    await readBodyLimited(req, ctx.limits),
    req.headers.get("content-type"),
    ctx.limits,
  );
  const body = parseRequest(EncodeRequestSchema, raw);
  // The schema fills in ["dense"]; a model without dense output gets its profile's types instead.
  const askedTypes = hasOutputTypes(raw) ? body.params?.output_types : undefined;
  if (body.items.length === 0) throw invalidInput("items must not be empty");
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
  const plan = planEncode(served, { ...body.params, output_types: askedTypes });
  const model = await ctx.registry.acquire(served, ctx.config.SVC_LOAD_WAIT_MS);
  const result = await ctx.registry.use(
    model,
    () => model.batcher.submit(work, plan.params, req.signal),
  );
  const t0 = performance.now();
  const items = result.outputs.map((out, i) => {
    const r = toEncodeResult(out, plan, served.config);
    const id = body.items[i].id;
    return id === undefined ? r : { id, ...r };
  });
  result.timing.postprocessingMs += performance.now() - t0;
  const timing = makeTiming(performance.now() - started, result);
  setPhases(c, timing);
  return sendNegotiated(
    req,
    { model: name, items, timing },
    200,
    timingHeaders(timing, traceId),
  );
}

function hasOutputTypes(raw: unknown): boolean {
  const params = (raw as { params?: { output_types?: unknown } } | null)?.params;
  return Array.isArray(params?.output_types) && params.output_types.length > 0;
}
