/** Per-request facts that routes hand to the access-log and metrics middleware. */
import type { Context } from "hono";
import type { TimingInfo as Timing } from "@svc/shared/schemas/timing";

const MODEL = "svc.model";
const PHASES = "svc.phases";
const LORA = "svc.lora";

/** Remember the LoRA adapter a request asked for (mapped to a bounded label when recorded). */
export function setLoraLabel(c: Context, lora: string | undefined): void {
  if (lora !== undefined) c.set(LORA as never, lora as never);
}

/** The adapter id set by the route, if any. */
export function loraOf(c: Context): string | undefined {
  return c.get(LORA as never) as string | undefined;
}

/** Remember which model a request was for (metrics label, log field). */
export function setModelLabel(c: Context, model: string): void {
  c.set(MODEL as never, model as never);
}

/** The model label set by the route, if any. */
export function modelLabel(c: Context): string | undefined {
  return c.get(MODEL as never) as string | undefined;
}

/** Remember the phase timings of a served request. */
export function setPhases(c: Context, t: Timing): void {
  c.set(PHASES as never, t as never);
}

/** Phase timings set by the route, if any. */
export function phasesOf(c: Context): Timing | undefined {
  return c.get(PHASES as never) as Timing | undefined;
}
