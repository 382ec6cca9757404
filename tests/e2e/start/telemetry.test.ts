/**
 * ONNX Runtime's telemetry stays off: its Linux build writes /tmp/mat-debug-<pid>.log when it
 * starts (and uploads usage events). A bare process that opens a session shows the file appears
 * on this build; the worker, started the way `npm start` starts it, never leaves one.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ensureFixtures } from "@svc/fixture-models";
import { ROOT } from "../procs.ts";
import { deadline } from "@svc/shared/deadline";
import { taskArgs } from "./tasks.ts";

/**
 * Environment without ORT_DISABLE_TELEMETRY (this test process may have set it) and without CI:
 * ONNX Runtime also keeps its telemetry off when CI is set (seen here: no trace file under
 * CI=true), which would take the control away under .ci/run.
 */
function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = { ...Deno.env.toObject(), NO_COLOR: "1", ...extra };
  delete env.ORT_DISABLE_TELEMETRY;
  delete env.CI;
  return env;
}

function spawn(args: string[], env: Record<string, string>): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

const traceFile = (pid: number) => `/tmp/mat-debug-${pid}.log`;
const exists = (p: string) => Deno.stat(p).then(() => true, () => false);

Deno.test({
  name: "telemetry: ONNX Runtime's trace file appears for a bare session, never for the worker",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const model = join(await ensureFixtures(), "cache/fixture/dense/onnx/model.onnx");
    const bare = spawn([
      "eval",
      `import ort from "onnxruntime-node"; await ort.InferenceSession.create(${
        JSON.stringify(model)
      });`,
    ], cleanEnv({}));
    const out = await bare.output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const control = await exists(traceFile(bare.pid));
    await Deno.remove(traceFile(bare.pid)).catch(() => {});
    assert.ok(
      control,
      "this ONNX Runtime build writes no trace file: the check below proves nothing",
    );

    const xdg = await Deno.makeTempDir({ prefix: "svc-telemetry-" });
    const child = spawn(
      await taskArgs("start"),
      cleanEnv({ XDG_CACHE_HOME: xdg, SVC_PORT: "0", SVC_OFFLINE_GLOVE: "0" }),
    );
    try {
      // Bounded even if the child prints nothing (the kill below ends its stream).
      const url = await deadline(bannerUrl(child.stdout), 120_000, () => {
        throw new Error("no banner from deno task start within 120 s");
      });
      const res = await fetch(`${url}/v1/encode/fixture/dense`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ items: [{ text: "a session is open now" }] }),
        signal: AbortSignal.timeout(60_000),
      });
      assert.equal(res.status, 200, await res.text());
      assert.equal(await exists(traceFile(child.pid)), false);
    } finally {
      child.kill("SIGKILL");
      await child.status;
      await child.stderr.cancel().catch(() => {});
      await Deno.remove(xdg, { recursive: true });
    }
  },
});

/** Read stdout until the banner's API line; its base URL. Drains the rest in the background. */
async function bannerUrl(stdout: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    const m = buf.match(/^start: API:\s+(http:\/\/127\.0\.0\.1:\d+)\/v1\//m);
    if (m) {
      (async () => {
        while (!(await reader.read()).done) { /* drain */ }
      })().catch(() => {});
      return m[1];
    }
  }
  throw new Error(`no banner from deno task start:\n${buf}`);
}
