/** TimingInfo: the server-side timing breakdown in model-operation response bodies (docs/api.md). */

import { z } from "zod";

/** Milliseconds per phase (floats); `postprocessing_ms` is null when 0. */
export interface TimingInfo {
  total_ms: number;
  queue_ms: number;
  tokenization_ms: number;
  inference_ms: number;
  postprocessing_ms: number | null;
}

const ms = z.number().nonnegative();

/** Schema of {@link TimingInfo}. */
export const TimingInfoSchema: z.ZodType<TimingInfo, TimingInfo> = z.object({
  total_ms: ms,
  queue_ms: ms,
  tokenization_ms: ms,
  inference_ms: ms,
  postprocessing_ms: ms.nullable(),
});
