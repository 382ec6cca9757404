/**
 * The routes of other APIs' clients, whose model is named in the body: OpenAI's
 * `POST /v1/embeddings`, Cohere's `POST /v1|v2/rerank` and `/v1|v2/embed`. Their clients take any
 * 2xx as success, so the answer is never a 202: it waits for capacity, then answers 503.
 */
import type { Context } from "hono";
import { decodeBody } from "@svc/shared/codec/decode";
import { readBodyLimited } from "@svc/shared/http/read_body";
import type { InputLimits } from "@svc/shared/codec/limits";
import { MAX_MODEL_NAME_LENGTH } from "@svc/shared/catalog/model_path";
import { ServiceError } from "@svc/shared/errors";
import { BODY_MODEL_PATHS as OPERATIONS_BODY_PATHS } from "@svc/shared/operations";
import type { RouterContext, RouterEnv } from "../context.ts";
import { routeAndForward, withBodyHold } from "./model_request.ts";

/** Paths of the routes whose body names the model (each is forwarded to the same path). */
export const BODY_MODEL_PATHS: readonly string[] = OPERATIONS_BODY_PATHS;

/** Forward a request once its model is read from the body. */
export function handleBodyModelRequest(
  ctx: RouterContext,
  c: Context<RouterEnv>,
): Promise<Response> {
  return withBodyHold(ctx, c, async (opts) => {
    // One buffer (the model is decoded from it), held through the wait for capacity.
    const body = await readBodyLimited(c.req.raw, opts, c.env?.body);
    const model = modelOfBody(body, c.req.header("content-type"), ctx.settings.limits);
    const chunks = { chunks: [body], length: body.length };
    return await routeAndForward(ctx, c, model, () => Promise.resolve(chunks), {
      kind: "wait",
      untilMs: Date.now() + ctx.settings.provisioning.embeddingsWaitMs,
    });
  });
}

/**
 * The `model` field of a body (JSON or msgpack, like the worker), decoded with the same input
 * limits; the name is bounded before it is echoed in any error.
 */
function modelOfBody(
  body: Uint8Array,
  contentType: string | undefined,
  limits: InputLimits,
): string {
  const parsed = decodeBody(body, contentType ?? "application/json", limits);
  const model = (parsed as { model?: unknown } | null)?.model;
  if (typeof model !== "string" || model === "" || model.length > MAX_MODEL_NAME_LENGTH) {
    throw new ServiceError(
      "INVALID_INPUT",
      `field 'model' must be a model name of 1 to ${MAX_MODEL_NAME_LENGTH} characters`,
    );
  }
  return model;
}
