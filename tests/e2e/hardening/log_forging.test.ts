/**
 * Issue 16.9: logs cannot be forged. A request path holding `%0A` / `%0D%0A` (Hono decodes it to a
 * line break) must never start a line of its own in the worker's or the router's log: the shared
 * logger escapes control characters in every field. Text format, the one a forged line would fool.
 */
import assert from "node:assert/strict";
import { ensureFixtures } from "@svc/fixture-models";
import { FLEET_TOKEN, type Proc, spawnDeno } from "../../observability/helpers/process.ts";
import { freePort } from "../../bench/procs.ts";
import { waitFor } from "../../helpers/wait.ts";

const FORGED = "forged 2026-01-01T00:00:00.000Z ERROR worker admin logged in";
const PATHS = [
  `/v1/models/x%0A${encodeURIComponent(FORGED)}`,
  `/v1/encode/x%0D%0A${encodeURIComponent(FORGED)}`,
  `/nothing%0A${encodeURIComponent(FORGED)}`,
];

/** Start `deno run <args>` with text logs on a free port; resolves once `/healthz` answers. */
async function startText(args: string[], env: Record<string, string>): Promise<[Proc, string]> {
  const port = freePort();
  const proc = spawnDeno(["run", ...args], {
    SVC_HOST: "127.0.0.1",
    SVC_PORT: String(port),
    SVC_LOG_JSON: "0",
    SVC_LOG_LEVEL: "debug",
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      const res = await fetch(`${url}/healthz`);
      await res.body?.cancel();
      return res.ok;
    },
    `${args.join(" ")} to listen`,
    { timeoutMs: 60_000, retryErrors: true },
  );
  return [proc, url];
}

/** Every line the process wrote is one of its own: timestamp, level, component, message. */
function assertNoForgedLine(stdout: string, component: string): void {
  const lines = stdout.split("\n").filter((l) => l !== "");
  assert.ok(lines.length > 0);
  for (const line of lines) {
    assert.match(line, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z [A-Z]+ ${component} `), line);
  }
  assert.ok(stdout.includes("\\nforged"), "the request was logged, its line break escaped");
}

async function hit(base: string): Promise<void> {
  for (const path of PATHS) {
    for (const method of ["GET", "POST"]) {
      const res = await fetch(`${base}${path}`, { method, body: method === "POST" ? "{}" : null });
      await res.body?.cancel();
    }
  }
}

Deno.test({
  name: "log forging: %0A in a path never starts a line in the worker's log",
  async fn() {
    const fx = await ensureFixtures();
    const cache = await Deno.makeTempDir({ prefix: "svc-logs-" });
    const [proc, url] = await startText(["-P=worker", "worker/main.ts"], {
      SVC_MODELS_DIR: `${fx}/models`,
      SVC_CLUSTER_CACHE: `${fx}/cache`,
      SVC_CACHE_DIR: cache,
      SVC_HUB_DISABLED: "1",
      SVC_MODEL_FILTER: "fixture/*",
      SVC_DEVICE: "cpu",
    });
    try {
      await hit(url);
      await proc.stop();
      assertNoForgedLine(proc.stdout(), "worker");
    } finally {
      await proc.stop();
      await Deno.remove(cache, { recursive: true });
    }
  },
});

Deno.test({
  name: "log forging: %0A in a path never starts a line in the router's log",
  async fn() {
    const [proc, url] = await startText(["-P=router", "router/main.ts"], {
      SVC_WORKER_TOKEN: FLEET_TOKEN,
    });
    try {
      await hit(url);
      await proc.stop();
      assertNoForgedLine(proc.stdout(), "router");
    } finally {
      await proc.stop();
    }
  },
});
