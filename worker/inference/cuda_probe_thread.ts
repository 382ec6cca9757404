/** The CUDA probe's thread: one session with the CUDA provider alone, then one answer. */
import ort from "onnxruntime-node";
import { disableOrtTelemetry } from "./ort_telemetry.ts";
import { PROBE_MODEL_BASE64, type ProbeAnswer } from "./cuda_probe.ts";

disableOrtTelemetry();

const scope = self as unknown as { postMessage(msg: ProbeAnswer): void; close(): void };
const model = Uint8Array.from(atob(PROBE_MODEL_BASE64), (c) => c.charCodeAt(0));
try {
  const session = await ort.InferenceSession.create(model, {
    executionProviders: [{ name: "cuda" }],
  });
  await session.release();
  scope.postMessage({ ok: true });
} catch (err) {
  scope.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) });
}
scope.close();
