/**
 * Logs of a real run: one JSON line per request (method, path, model, status, total ms, trace
 * id) with SVC_LOG_JSON=1, model load/evict/failure events, and no secret anywhere. The run uses
 * every secret for real: HF_TOKEN downloads a gated model from a fake hub, SVC_WORKER_TOKEN
 * registers the worker with a router, SVC_API_KEYS authenticates client requests.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ensureFixtures } from "@svc/fixture-models";
import { startFakeHub } from "../../fake_hub/server.ts";
import { postJson } from "../../worker/harness.ts";
import {
  FLEET_TOKEN,
  startRouterProcess,
  startWorkerProcess,
} from "../../observability/helpers/process.ts";
import { items } from "../../observability/helpers/traffic.ts";
import { waitFor } from "../../helpers/wait.ts";
import { copyDir } from "../../helpers/files.ts";
import {
  API_KEYS,
  HF_TOKEN,
  OTHER_HUB_TOKEN,
  SECRETS,
} from "../../observability/helpers/secrets.ts";

/**
 * A catalog with the fixtures plus two gated copies of fixture/dense on the fake hub: one our
 * HF_TOKEN opens, one that accepts only somebody else's token (a failed load).
 */
async function gatedSetup(tmp: string): Promise<{ modelsDir: string; hubRoot: string }> {
  const fx = await ensureFixtures();
  const modelsDir = join(tmp, "models");
  const hubRoot = join(tmp, "hub");
  await copyDir(join(fx, "models"), modelsDir);
  const dense = JSON.parse(await Deno.readTextFile(join(fx, "models", "dense.json")));
  for (const [name, repo] of [["gated", "gatedorg/dense"], ["denied", "gatedorg/other"]]) {
    const entry = { ...dense, id: `fixture/${name}`, hub: { repo, revision: "main", gated: true } };
    await Deno.writeTextFile(join(modelsDir, `${name}.json`), JSON.stringify(entry));
    await copyDir(join(fx, "cache", "fixture", "dense"), join(hubRoot, repo));
  }
  return { modelsDir, hubRoot };
}

type LogLine = Record<string, unknown>;

Deno.test("logs: JSON request lines and model events, no secret in any output", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "svc-obs-logs-" });
  const { modelsDir, hubRoot } = await gatedSetup(tmp);
  const hub = await startFakeHub({
    root: hubRoot,
    gated: { "gatedorg/dense": HF_TOKEN, "gatedorg/other": OTHER_HUB_TOKEN },
  });
  const router = await startRouterProcess({ SVC_API_KEYS: API_KEYS.join(",") });
  let worker;
  try {
    worker = await startWorkerProcess({
      SVC_MODELS_DIR: modelsDir,
      SVC_HUB_DISABLED: "",
      SVC_HUB_URL: hub.url,
      HF_TOKEN,
      SVC_API_KEYS: API_KEYS.join(","),
      SVC_ROUTER_URL: router.url,
      SVC_WORKER_TOKEN: FLEET_TOKEN,
      SVC_WORKER_ID: "log-worker",
      SVC_MACHINE_PROFILE: "cpu",
      // One model at a time, so loading a second one evicts the first.
      SVC_MAX_LOADED_MODELS: "1",
    });
    const w = worker;
    await waitFor(async () => {
      const h = await (await fetch(`${router.url}/health`, {
        headers: { authorization: `Bearer ${API_KEYS[0]}` },
      })).json();
      return h.worker_count === 1;
    }, "worker registered (worker token accepted)");
    const auth = { authorization: `Bearer ${API_KEYS[1]}`, "x-svc-machine-profile": "cpu" };
    const ok = await postJson(`${router.url}/v1/encode/fixture/dense`, { items: items(2) }, auth);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const gated = await postJson(
      `${router.url}/v1/encode/fixture/gated`,
      { items: items(1) },
      auth,
    );
    assert.equal(gated.status, 200, JSON.stringify(gated.body));
    assert.ok(
      hub.requests.some((r) => r.path.startsWith("/gatedorg/dense/") && r.status === 200),
      "the gated files came from the hub with the token",
    );
    const denied = await postJson(`${w.url}/v1/encode/fixture/denied`, { items: items(1) });
    // The load failed (the hub refused our token for that repository); the exact code is the
    // serving core's business, the message must explain it without the token.
    assert.ok(denied.status >= 500, JSON.stringify(denied.body));
    assert.match(denied.body.detail.message, /HF_TOKEN/);
    const noKey = await postJson(`${router.url}/v1/encode/fixture/dense`, { items: items(1) }, {
      authorization: "Bearer wrong-key-123456",
      "x-svc-machine-profile": "cpu",
    });
    assert.equal(noKey.status, 401);

    // Let both processes finish writing, then read everything they wrote.
    w.proc.signal("SIGTERM");
    router.proc.signal("SIGTERM");
    await Promise.all([w.proc.status, router.proc.status]);
    await w.proc.stop();
    await router.proc.stop();

    const everything = [w.proc.output(), router.proc.output()].join("\n");
    for (const secret of SECRETS) {
      assert.ok(
        !everything.includes(secret),
        `a secret (${secret.slice(0, 6)}…) appeared in the logs`,
      );
    }

    // SVC_LOG_JSON=1: every stdout line of the worker is one JSON object.
    const lines: LogLine[] = w.proc.stdout().split("\n").filter((l) => l !== "").map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        throw new Error(`not a JSON log line: ${l}`);
      }
    });
    const request = lines.find((l) =>
      l.msg === "request" && l.path === "/v1/encode/fixture/dense" && l.status === 200
    );
    assert.ok(request, "access log line of the encode request");
    assert.equal(request.method, "POST");
    assert.equal(request.model, "fixture/dense");
    assert.equal(typeof request.total_ms, "number");
    assert.equal(request.trace_id, ok.headers.get("x-trace-id"));
    assert.equal(request.level, "info");
    const events = new Set(lines.map((l) => l.msg));
    for (
      const e of [
        "model_loading",
        "model_loaded",
        "model_evicted",
        "model_unloaded",
        "model_load_failed",
      ]
    ) {
      assert.ok(events.has(e), `event ${e} logged`);
    }
    const failed = lines.find((l) => l.msg === "model_load_failed")!;
    assert.equal(failed.model, "fixture/denied");
    assert.equal(failed.level, "error");
    assert.match(String(failed.error), /403|HF_TOKEN/);
  } finally {
    await worker?.proc.stop();
    await router.proc.stop();
    await hub.close();
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
});
