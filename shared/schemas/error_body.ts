/** The error body of every endpoint: `{detail: {code, message}}`. */

import { z } from "zod";
import { ERROR_STATUS, type ErrorBody, type ErrorCode } from "../errors.ts";

/** Every error code of the API. */
export const ErrorCodeSchema: z.ZodType<ErrorCode, ErrorCode> = z.enum(
  Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]],
);

/** Schema of {@link ErrorBody} (the type itself lives in errors.ts); extra detail fields kept. */
export const ErrorBodySchema: z.ZodType<ErrorBody, ErrorBody> = z.object({
  detail: z.looseObject({ code: ErrorCodeSchema, message: z.string() }),
});
