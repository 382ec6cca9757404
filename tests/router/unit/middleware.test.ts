/** Router middleware: endpoint labels, the access log (no forged lines), the version header. */
import assert from "node:assert/strict";
import { createLogger } from "@svc/shared/log";
import { endpointLabel } from "#router/middleware/access_log.ts";
import { startTestRouter } from "../helpers/router.ts";

Deno.test("middleware: endpoint labels are a bounded set", () => {
  assert.equal(endpointLabel("/v1/encode/BAAI/bge-small-en-v1.5"), "encode");
  assert.equal(endpointLabel("/v1/models"), "models");
  assert.equal(endpointLabel("/v2/rerank"), "rerank");
  assert.equal(endpointLabel("/v1/rerank"), "rerank");
  assert.equal(endpointLabel("/v1/embed"), "embed");
  assert.equal(endpointLabel("/v1/embeddings"), "embeddings");
  assert.equal(endpointLabel("/v1/pools/l4"), "pools");
  assert.equal(endpointLabel("/v1/models/x"), "model");
  assert.equal(endpointLabel("/readyz"), "readyz");
  assert.equal(endpointLabel("/anything/a-client/made-up"), "other");
});

Deno.test("middleware: a path holding %0A cannot forge an access-log line", async () => {
  const lines: string[] = [];
  const r = await startTestRouter({}, {
    log: createLogger({
      json: false,
      level: "info",
      component: "router",
      write: (l) => lines.push(l),
    }),
  });
  try {
    const forged = "/nothing%0A2030-01-01T00:00:00.000Z%20ERROR%20router%20forged%0D%E2%80%A8";
    const res = await fetch(`${r.url}${forged}`);
    await res.body?.cancel();
    assert.equal(res.status, 404);
    assert.ok(res.headers.get("x-svc-server-version"), "version header on a 404 too");
    const access = lines.filter((l) => / INFO router request /.test(l));
    assert.equal(access.length, 1, lines.join("\n---\n"));
    for (const l of lines) {
      assert.ok(!/[\n\r\u2028]/.test(l), `a log line holds a line break: ${JSON.stringify(l)}`);
    }
    assert.ok(!lines.some((l) => l.startsWith("2030-")), "no line starts with the forged prefix");
  } finally {
    await r.close();
  }
});

Deno.test("middleware: the access-log line names its fields as the worker's does (total_ms)", async () => {
  const lines: string[] = [];
  const r = await startTestRouter({}, {
    log: createLogger({
      json: true,
      level: "info",
      component: "router",
      write: (l) => lines.push(l),
    }),
  });
  try {
    const res = await fetch(`${r.url}/v1/models`);
    await res.body?.cancel();
    const access = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
    assert.equal(access.length, 1, lines.join("\n"));
    const [line] = access;
    assert.deepEqual([line.method, line.path, line.status], ["GET", "/v1/models", res.status]);
    assert.equal(typeof line.total_ms, "number");
    assert.ok(line.total_ms >= 0);
    assert.equal(line.ms, undefined, "one name for the request's time, router and worker");
  } finally {
    await r.close();
  }
});
