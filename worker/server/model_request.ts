/**
 * The life of one model-operation request (encode, score, extract), minus what differs: open
 * (trace id, model gate, bounded body decode), run the items through the model's batcher, answer
 * (timing body and headers, negotiated format).
 */
import type { z } from "zod";
import type { ServedModel } from "@svc/shared/catalog";
import type { DirectAnswer } from "@svc/shared/http/direct_call";
import { decodeRequest } from "@svc/shared/codec/parse";
import type { WorkItem, WorkParams } from "../families/types.ts";
import { invalidInput } from "@svc/shared/errors";
import { assertFitsQueue, type RequestResult } from "../scheduler/batcher.ts";
import { requestOverBudget } from "../families/extract_budget.ts";
import type { WorkerContext } from "./context.ts";
import { gateModel } from "./model_gate.ts";
import { HeaderNames as H } from "@svc/shared/headers";
import { makeTiming, timingHeaders, traceIdOf, truncationHeader } from "./http_io.ts";
import type { TimingInfo } from "@svc/shared/schemas/timing";
import { modelFromPath } from "@svc/shared/catalog/model_path";
import { jsonAnswer, negotiatedAnswer } from "./respond.ts";
import type { ModelCall } from "./model_call.ts";

/** An opened request: who asked, for which model, with which validated body. */
export interface ModelRequest<T> {
  started: number;
  call: ModelCall;
  traceId: string;
  /** The served name as the client wrote it (echoed as `model`). */
  name: string;
  served: ServedModel;
  body: T;
}

/** Gate the model for `op`, then read and validate the body against `schema`. */
export async function openModelRequest<S extends z.ZodType>(
  ctx: WorkerContext,
  call: ModelCall,
  op: "encode" | "score" | "extract",
  schema: S,
): Promise<ModelRequest<z.output<S>>> {
  const started = performance.now();
  const name = modelFromPath(call.url, `/v1/${op}/`);
  const served = await gateSettled(ctx, call, name, op);
  const bytes = await call.readBody();
  return {
    started,
    call,
    traceId: traceIdOf(call.header(H.traceId)),
    name,
    served,
    body: decodeRequest(schema, bytes, call.header("content-type") ?? null, ctx.limits),
  };
}

/**
 * Open a request whose body names its model (`model`: OpenAI's and Cohere's routes): read and
 * validate the body (JSON unless the request says msgpack), then gate the model for `op`.
 */
export async function openBodyModelRequest<S extends z.ZodType<{ model: string }>>(
  ctx: WorkerContext,
  call: ModelCall,
  op: "encode" | "score",
  schema: S,
): Promise<ModelRequest<z.output<S>>> {
  const started = performance.now();
  const traceId = traceIdOf(call.header(H.traceId));
  const bytes = await call.readBody();
  const contentType = call.header("content-type") ?? "application/json";
  const body = decodeRequest(schema, bytes, contentType, ctx.limits);
  const served = await gateSettled(ctx, call, body.model, op, new URL(call.url).pathname);
  return { started, call, traceId, name: body.model, served, body };
}

/**
 * Gate `name` for `op`, once an SVC_MODELS entry still being read from its files has settled
 * (waited for like a loading model); the name is then recorded for the request's metrics.
 */
async function gateSettled(
  ctx: WorkerContext,
  call: ModelCall,
  name: string,
  op: "encode" | "score" | "extract",
  usedPath?: string,
): Promise<ServedModel> {
  const pending = ctx.catalog.settle(name, ctx.settings.loadWaitMs);
  if (pending) await pending;
  const served = gateModel(ctx, name, op, usedPath);
  // Labelled only once the name is a known served name: metric label values stay bounded.
  call.facts.model = name;
  return served;
}

/**
 * Load (or find) the model and run the items through its batcher (the call's signal: client
 * gone); the model's revision is noted on the call's facts for the answer's header.
 */
export async function runOnModel(
  ctx: WorkerContext,
  served: ServedModel,
  call: ModelCall,
  work: WorkItem[],
  params: WorkParams,
  weight: number = work.length,
): Promise<RequestResult> {
  // Before the load: a request the queue can never hold must not start one.
  assertFitsQueue(weight, ctx.settings.scheduling.maxQueueItems);
  noteLoadCause(ctx, served);
  const model = await ctx.registry.acquire(served, ctx.settings.loadWaitMs);
  const signal = call.signal;
  const lora = params.lora;
  noteRevision(call.facts, lora === undefined ? model.revision : undefined);
  if (lora === undefined) {
    return await ctx.registry.use(model, () => model.batcher.submit(work, params, signal, weight));
  }
  return await ctx.registry.use(model, async () => {
    if (!model.loras) {
      throw invalidInput(`model '${model.config.id}' does not support LoRA adapters`);
    }
    // Held until the batches ran: an adapter in use is never evicted.
    const release = await model.loras.acquire(lora, ctx.settings.lora.waitMs);
    try {
      return await model.batcher.submit(work, params, signal, weight);
    } finally {
      release();
    }
  });
}

/** Extract families whose items multiply by their labels: their requests are costed first. */
const COSTED_FAMILIES: ReadonlySet<string> = new Set(["gliner", "gliclass", "zero_shot"]);

/**
 * Bound an extract request's cost as a whole: the tokens its model reads for all of `runs`
 * together, as the family's cost model counts them once the items are tokenised (in the model's
 * thread, before any of them runs). Over SVC_MAX_EXTRACT_REQUEST_TOKENS it is a 400 naming the
 * bound; a request costing more than one item may is noted for `X-SVC-Extract-Tokens`. Returns
 * each run's weight in the model's queue: its cost in rows of the model's length (at least its
 * items), or undefined when the family is not costed.
 */
export async function boundExtractCost(
  ctx: WorkerContext,
  served: ServedModel,
  call: ModelCall,
  runs: readonly { work: WorkItem[]; params: WorkParams }[],
): Promise<number[] | undefined> {
  if (!COSTED_FAMILIES.has(served.config.family)) return undefined;
  noteLoadCause(ctx, served);
  const model = await ctx.registry.acquire(served, ctx.settings.loadWaitMs);
  const cost = model.cost;
  if (!cost) return undefined;
  const each: number[] = [];
  for (const r of runs) each.push(await cost(r.work, r.params));
  const tokens = each.reduce((n, t) => n + t, 0);
  const budget = ctx.settings.extract;
  const items = runs.reduce((n, r) => n + r.work.length, 0);
  if (tokens > budget.maxRequestTokens) {
    throw invalidInput(requestOverBudget(tokens, items, budget));
  }
  if (tokens > budget.maxItemTokens) call.facts.extractTokens = tokens;
  const rowTokens = Math.max(1, served.config.max_sequence_length);
  return each.map((t, k) => Math.max(runs[k].work.length, Math.ceil(t / rowTokens)));
}

/** Per worker: the served names a request has loaded (a later load means it was unloaded). */
const requestLoaded = new WeakMap<WorkerContext, Set<string>>();

/**
 * Log which model a request is about to load, and why: a first request that pays a load (seconds
 * for a large model) is otherwise unexplained, `/readyz` having said ready. Models named in
 * `SVC_MODELS` or `SVC_PRELOAD_MODELS` are loaded before ready and never get here on a first use.
 */
function noteLoadCause(ctx: WorkerContext, served: ServedModel): void {
  if (ctx.registry.servedStatus(served)?.state !== "available") return;
  let seen = requestLoaded.get(ctx);
  if (!seen) requestLoaded.set(ctx, seen = new Set());
  const name = served.config.id;
  const reason = seen.has(name)
    ? "it was unloaded (evicted or idle) since its last use"
    : "first request for it: only models in SVC_MODELS or SVC_PRELOAD_MODELS load before " +
      "/readyz is 200";
  seen.add(name);
  ctx.log("info", "loading a model for a request", { model: name, reason });
}

/**
 * Note the revision one run used: an answer names a revision only when every run of it used that
 * one. An adapter's weights are not part of a revision (they are fetched by id), so a run with
 * one names none and its answer is never cached by the router.
 */
function noteRevision(facts: ModelCall["facts"], revision: string | undefined): void {
  const r = revision ?? null;
  facts.revision = facts.revision === undefined || facts.revision === r ? r : null;
}

/**
 * The answer's headers: timing, trace id, `X-Truncated-Items`, and the model's revision when it
 * has one.
 */
function answerHeaders(
  mr: ModelRequest<unknown>,
  timing: TimingInfo,
  result: RequestResult,
): Record<string, string> {
  const headers = { ...timingHeaders(timing, mr.traceId), ...truncationHeader(result.outputs) };
  const revision = mr.call.facts.revision;
  if (typeof revision === "string") headers[H.modelRevision] = revision;
  const cost = mr.call.facts.extractTokens;
  if (cost !== undefined) headers[H.extractTokens] = String(cost);
  return headers;
}

/**
 * Answer 200 JSON with `payload` as it is (another API's shape: no `model` or `timing` added),
 * with the timing headers, the trace id and `X-Truncated-Items`.
 */
export function answerJson(
  mr: ModelRequest<unknown>,
  result: RequestResult,
  payload: unknown,
): DirectAnswer {
  const timing = makeTiming(performance.now() - mr.started, result);
  mr.call.facts.phases = timing;
  return jsonAnswer(payload, answerHeaders(mr, timing, result));
}

/** Answer 200 with `payload` plus `timing`, the timing headers, the trace id and truncations. */
export function answerModelRequest(
  mr: ModelRequest<unknown>,
  result: RequestResult,
  payload: Record<string, unknown>,
): DirectAnswer {
  const timing = makeTiming(performance.now() - mr.started, result);
  mr.call.facts.phases = timing;
  return negotiatedAnswer(
    mr.call.header("accept"),
    { model: mr.name, ...payload, timing },
    200,
    answerHeaders(mr, timing, result),
  );
}
