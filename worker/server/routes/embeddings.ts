/**
 * POST /v1/embeddings, OpenAI-compatible. Always JSON. The official client asks for base64 by
 * default and decodes little-endian float32 bytes, so base64 must be honoured exactly. This route
 * never answers 202: OpenAI clients take any 2xx as success.
 */
import { invalidInput } from "@svc/shared/errors";
import type { DirectAnswer } from "@svc/shared/http/direct_call";
import { float32ToBase64 } from "@svc/shared/codec/base64";
import {
  embeddingInputs,
  type OpenAIEmbeddingsRequest,
  OpenAIEmbeddingsRequestSchema,
} from "@svc/shared/schemas/openai";
import type { WorkItem } from "../../families/types.ts";
import { checkDimensions, planEncode } from "../../service/params.ts";
import { truncateDense } from "../../service/matryoshka.ts";
import type { WorkerContext } from "../context.ts";
import type { ModelCall } from "../model_call.ts";
import { answerJson, openBodyModelRequest, runOnModel } from "../model_request.ts";

/** The accepted `input` forms as work items (texts or token-id lists). */
export function embeddingWorkItems(input: OpenAIEmbeddingsRequest["input"]): WorkItem[] {
  const parsed = embeddingInputs(input);
  if ("texts" in parsed) return parsed.texts.map((text) => ({ text }));
  return parsed.tokenIds.map((tokenIds) => ({ tokenIds }));
}

/** Handle one OpenAI-style embeddings request. */
export async function handleEmbeddings(
  ctx: WorkerContext,
  call: ModelCall,
): Promise<DirectAnswer> {
  const mr = await openBodyModelRequest(ctx, call, "encode", OpenAIEmbeddingsRequestSchema);
  const { served, body } = mr;
  if (!served.config.outputs.includes("dense")) {
    throw invalidInput(`model '${served.config.id}' has no dense output; /v1/embeddings needs one`);
  }
  // Input shape, list sizes and token ids were bounded by the schema and the input limits.
  const work = embeddingWorkItems(body.input);
  const dims = body.dimensions === undefined
    ? undefined
    : checkDimensions(served.config, body.dimensions, "dimensions");
  const options = body.input_type ? { input_type: body.input_type } : undefined;
  const plan = planEncode(served, { output_types: ["dense"], options });
  const result = await runOnModel(ctx, served, call.signal, work, plan.params);
  const base64 = body.encoding_format === "base64";
  const data = result.outputs.map((out, index) => {
    let v = out.dense!;
    if (dims !== undefined) v = truncateDense(v, dims, served.config);
    return { object: "embedding", index, embedding: base64 ? float32ToBase64(v) : Array.from(v) };
  });
  const usage = { prompt_tokens: result.tokens, total_tokens: result.tokens };
  return answerJson(mr, result, { object: "list", data, model: body.model, usage });
}
