/**
 * ONNX Runtime 1.30's Linux and macOS builds carry telemetry (1DS): on by default, it uploads
 * usage events and leaves an empty `/tmp/mat-debug-<pid>.log` behind every process. The service
 * makes no network call it was not configured to make, so it is switched off here, before the
 * first session creates the runtime's environment (the runtime reads the variable then).
 * An explicit `ORT_DISABLE_TELEMETRY` in the environment is left as it is.
 */

/** Set `ORT_DISABLE_TELEMETRY=1` for this process unless it is already set. */
export function disableOrtTelemetry(): void {
  if (Deno.env.get("ORT_DISABLE_TELEMETRY") === undefined) {
    Deno.env.set("ORT_DISABLE_TELEMETRY", "1");
  }
}
