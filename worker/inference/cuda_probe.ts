/**
 * Can ONNX Runtime start its CUDA provider here? A short-lived thread (ONNX Runtime never loads on
 * the main thread) creates one session of a one-node graph with the CUDA provider alone, so a
 * missing driver, CUDA or cuDNN library, or GPU fails at start rather than on every model.
 */

/**
 * `Identity(x) → y` over one float (ONNX IR 8, opset 17): the smallest graph a session accepts.
 * Written by @svc/onnx/writer (tests/worker/cuda.test.ts checks it is what that writer produces).
 */
export const PROBE_MODEL_BASE64 =
  "CAgSD3N2Yy1vbm54LXdyaXRlchoBMTpMChwKAXgSAXkaCklkZW50aXR5XzAiCElkZW50aXR5EgpjdWRhX3Byb2Jl" +
  "Wg8KAXgSCgoICAESBAoCCAFiDwoBeRIKCggIARIECgIIAUIECgAQEQ==";

/** What the probe thread answers. */
export type ProbeAnswer = { ok: true } | { ok: false; error: string };

/** Undefined when a CUDA session starts, else ONNX Runtime's error (bounded by `timeoutMs`). */
export function probeCuda(timeoutMs = 60_000): Promise<string | undefined> {
  const thread = new Worker(new URL("./cuda_probe_thread.ts", import.meta.url).href, {
    type: "module",
  });
  return new Promise((resolve) => {
    const end = (error: string | undefined) => {
      clearTimeout(timer);
      thread.terminate();
      resolve(error);
    };
    const timer = setTimeout(
      () => end(`no CUDA session within ${timeoutMs / 1000} s`),
      timeoutMs,
    );
    thread.onmessage = (e: MessageEvent<ProbeAnswer>) => end(e.data.ok ? undefined : e.data.error);
    thread.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      end(`the CUDA probe thread crashed: ${e.message}`);
    };
  });
}
