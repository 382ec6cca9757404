/** POST /v1/{encode,score,extract}/{model}: routed by the model in the path; 202 without capacity. */
import type { Context } from "hono";
import { readBodyLimited } from "@svc/shared/http/read_body";
import { modelFromPath } from "@svc/shared/catalog/model_path";
import type { RouterContext, RouterEnv } from "../context.ts";
import { routeAndForward } from "./model_request.ts";

/** Operations routed by the model in their path. */
export const MODEL_OPS = ["encode", "score", "extract"] as const;

/** One model operation. */
export function handleModelOp(
  ctx: RouterContext,
  c: Context<RouterEnv>,
  op: typeof MODEL_OPS[number],
): Promise<Response> {
  const model = modelFromPath(c.req.url, `/v1/${op}/`);
  return routeAndForward(
    ctx,
    c,
    model,
    () => readBodyLimited(c.req.raw, ctx.body),
    { kind: "provision" },
  );
}
