/** The shared logger: formats, levels, redaction, and lines that cannot be forged. */
import assert from "node:assert/strict";
import { createLogger, escapeControl, type LoggerOptions } from "@svc/shared/log";

/** A logger writing into an array. */
function capture(
  opts: Partial<LoggerOptions> = {},
): { lines: string[]; log: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const log = createLogger({
    json: false,
    level: "info",
    component: "router",
    write: (l) => lines.push(l),
    ...opts,
  });
  return { lines, log };
}

Deno.test("log: text format, levels, undefined fields dropped", () => {
  const { lines, log } = capture();
  log("debug", "not shown");
  log("info", "request", {
    method: "POST",
    status: 200,
    ms: 1.5,
    worker_id: undefined,
    tags: ["a"],
  });
  log("error", "upstream failed", { error: "connection refused" });
  assert.equal(lines.length, 2);
  assert.match(
    lines[0],
    /^\d{4}-\d\d-\d\dT[\d:.]+Z INFO router request method=POST status=200 ms=1\.5 tags=\["a"\]$/,
  );
  assert.match(lines[1], / ERROR router upstream failed error="connection refused"$/);
});

Deno.test("log: JSON format carries level, component, message and fields", () => {
  const { lines, log } = capture({ json: true, component: "worker" });
  log("warn", "slow", { model: "m/a", n: 3 });
  const o = JSON.parse(lines[0]);
  assert.equal(o.level, "warn");
  assert.equal(o.component, "worker");
  assert.equal(o.msg, "slow");
  assert.equal(o.model, "m/a");
  assert.equal(o.n, 3);
  assert.ok(!Number.isNaN(Date.parse(o.ts)));
});

Deno.test("log: secrets are removed wherever they appear; secret-named fields masked", () => {
  for (const json of [false, true]) {
    const { lines, log } = capture({ json, secrets: ["worker-secret-0123456789", undefined] });
    log("info", "upstream failed", {
      error: "bad token worker-secret-0123456789 in header",
      authorization: "Bearer something-else-entirely",
    });
    assert.equal(lines.length, 1);
    assert.ok(!lines[0].includes("worker-secret-0123456789"), lines[0]);
    assert.ok(!lines[0].includes("something-else-entirely"), lines[0]);
    assert.match(lines[0], /bad token \*\*\* in header/);
  }
});

Deno.test("log: a path holding a newline cannot forge a second line", () => {
  const forged =
    "/v1/encode/a\n2030-01-01T00:00:00.000Z ERROR router forged line\r\u2028\u0085\u202e";
  for (const json of [false, true]) {
    const { lines, log } = capture({ json });
    log("info", `request ${forged}`, { path: forged, [`k\ney`]: forged });
    assert.equal(lines.length, 1);
    for (const c of ["\n", "\r", "\u2028", "\u0085", "\u202e"]) {
      assert.ok(!lines[0].includes(c), `${json ? "JSON" : "text"} line holds ${JSON.stringify(c)}`);
    }
    if (json) assert.equal(JSON.parse(lines[0]).path, forged, "JSON still decodes to the value");
    else assert.match(lines[0], /path="\/v1\/encode\/a\\n2030/);
  }
});

Deno.test("log: escapeControl", () => {
  assert.equal(
    escapeControl("a\nb\tc\rd\u0000e\u007f\u2029"),
    "a\\nb\\tc\\rd\\u0000e\\u007f\\u2029",
  );
  assert.equal(escapeControl("plain é ü 漢"), "plain é ü 漢");
});
