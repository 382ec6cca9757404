/** POST /v1/pools as the SIE clients send it (docs/api.md "Router"). */

import { z } from "zod";
import { Count, optional } from "./common.ts";

/** Most GPU types one create request may name. */
export const MAX_ASKED_GPUS = 32;

/** A validated POST /v1/pools body. */
export interface CreatePoolRequest {
  /** The pool's name as sent (not yet normalised), from the first of the four keys present. */
  name: string;
  /** Machine profile → workers asked for (empty when not sent). */
  gpus: Record<string, number>;
}

/** A POST /v1/pools body as the SIE clients write it. */
export interface CreatePoolRequestInput {
  name?: string | null;
  gpu?: string | null;
  gpu_type?: string | null;
  machine_profile?: string | null;
  gpus?: Record<string, number> | null;
}

/** Body of POST /v1/pools: the pool's name (under any of four keys) and the GPU counts asked. */
export const CreatePoolRequestSchema: z.ZodType<CreatePoolRequest, CreatePoolRequestInput> = z
  .object({
    name: optional(z.string()),
    gpu: optional(z.string()),
    gpu_type: optional(z.string()),
    machine_profile: optional(z.string()),
    /** `{machine profile: count}`; counts are not reserved (every worker serves every client). */
    gpus: optional(
      z.record(z.string(), Count, {
        error: '`gpus` must be an object of machine profile to count, e.g. {"l4": 2}',
      }).refine((g) => Object.keys(g).length <= MAX_ASKED_GPUS, {
        error: `at most ${MAX_ASKED_GPUS} GPU types`,
      }),
    ),
  }).transform((b, ctx) => {
    const name = b.name ?? b.gpu ?? b.gpu_type ?? b.machine_profile;
    if (name === undefined || name.trim() === "") {
      ctx.addIssue({
        code: "custom",
        path: ["name"],
        message: 'a pool needs a `name` (a pool or machine profile, e.g. "l4")',
      });
      return z.NEVER;
    }
    return { name, gpus: b.gpus ?? {} };
  });
