/** POST /v1/{encode,score,extract}/{model}: routed by the model in the path; 202 without capacity. */
import type { Context } from "hono";
import { readBodyChunks } from "@svc/shared/http/read_body";
import { modelFromPath } from "@svc/shared/catalog/model_path";
import { PATH_MODEL_OPS, type PathModelOp } from "@svc/shared/operations";
import type { RouterContext, RouterEnv } from "../context.ts";
import { routeAndForward, withBodyHold } from "./model_request.ts";

/** Operations routed by the model in their path (from the operations table). */
export const MODEL_OPS: readonly PathModelOp[] = PATH_MODEL_OPS;

/** One model operation. */
export function handleModelOp(
  ctx: RouterContext,
  c: Context<RouterEnv>,
  op: PathModelOp,
): Promise<Response> {
  const model = modelFromPath(c.req.url, `/v1/${op}/`);
  return withBodyHold(ctx, c, (body) =>
    routeAndForward(
      ctx,
      c,
      model,
      // Kept as the chunks it arrived in: the router only passes it on.
      () => readBodyChunks(c.req.raw, body, c.env?.body),
      { kind: "provision" },
    ));
}
