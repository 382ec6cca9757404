import assert from "node:assert/strict";
import { parseRouterConfig } from "../../../router/config.ts";
import { fleetUrlOf, parseFleetConfig } from "../../../worker/fleet/config.ts";
import { createLogger } from "../../../router/log.ts";

const TOKEN = "0123456789abcdef-secret";

Deno.test("router config: defaults", () => {
  const c = parseRouterConfig({});
  assert.equal(c.port, 8080);
  assert.equal(c.host, "0.0.0.0");
  assert.equal(c.workerToken, undefined);
  assert.deepEqual(c.apiKeys, []);
  assert.equal(c.defaultMachineProfile, undefined);
  assert.equal(c.workerStaleMs, 3000);
  assert.equal(c.heartbeatIntervalMs, 500);
  assert.equal(c.statusIntervalMs, 1000);
  assert.equal(c.provisionRetryAfterS, 10);
  assert.equal(c.directory, "memory");
  assert.equal(c.provisionWebhook, undefined);
});

Deno.test("router config: values are parsed and normalised", () => {
  const c = parseRouterConfig({
    SVC_PORT: "9000",
    SVC_WORKER_TOKEN: TOKEN,
    SVC_API_KEYS: "key-aaaaaaaa, key-bbbbbbbb ,",
    SVC_DEFAULT_MACHINE_PROFILE: "L4",
    SVC_MACHINE_PROFILES: "l4,cpu",
    SVC_DIRECTORY: "kv",
    SVC_PROVISION_WEBHOOK: "https://hooks.example/x",
  });
  assert.equal(c.port, 9000);
  assert.deepEqual(c.apiKeys, ["key-aaaaaaaa", "key-bbbbbbbb"]);
  assert.equal(c.defaultMachineProfile, "l4");
  assert.deepEqual(c.machineProfiles, ["l4", "cpu"]);
  assert.equal(c.directory, "kv");
  assert.equal(c.provisionWebhook, "https://hooks.example/x");
});

Deno.test("router config: bad values name the variable, never a secret", () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ SVC_PORT: "eighty" }, /SVC_PORT/],
    [{ SVC_PORT: "70000" }, /SVC_PORT/],
    [{ SVC_WORKER_TOKEN: "short-secret" }, /SVC_WORKER_TOKEN/],
    [{ SVC_API_KEYS: "tiny" }, /SVC_API_KEYS/],
    [{ SVC_DIRECTORY: "redis" }, /SVC_DIRECTORY/],
    [{ SVC_PROVISION_WEBHOOK: "ftp://x" }, /SVC_PROVISION_WEBHOOK/],
    [{ SVC_DEFAULT_MACHINE_PROFILE: "bad profile" }, /SVC_DEFAULT_MACHINE_PROFILE/],
    [
      { SVC_MACHINE_PROFILES: "l4", SVC_DEFAULT_MACHINE_PROFILE: "t4" },
      /SVC_DEFAULT_MACHINE_PROFILE/,
    ],
    [{ SVC_WORKER_STALE_MS: "300", SVC_HEARTBEAT_INTERVAL_MS: "500" }, /SVC_WORKER_STALE_MS/],
    [{ SVC_LOG_LEVEL: "loud" }, /SVC_LOG_LEVEL/],
  ];
  for (const [env, re] of cases) {
    assert.throws(() => parseRouterConfig(env), (e: Error) => {
      assert.match(e.message, re);
      assert.ok(!e.message.includes("short-secret"));
      assert.ok(!e.message.includes("tiny"));
      return true;
    });
  }
});

Deno.test("fleet config: null without SVC_ROUTER_URL", () => {
  assert.equal(parseFleetConfig({}, 8080), null);
});

Deno.test("fleet config: router URL becomes the fleet WebSocket URL", () => {
  assert.equal(fleetUrlOf("http://r:8080"), "ws://r:8080/fleet/v1/connect");
  assert.equal(fleetUrlOf("https://r.example/"), "wss://r.example/fleet/v1/connect");
  assert.equal(fleetUrlOf("wss://r.example/base/"), "wss://r.example/base/fleet/v1/connect");
  assert.equal(fleetUrlOf("ws://r/fleet/v1/connect"), "ws://r/fleet/v1/connect");
  assert.throws(() => fleetUrlOf("ftp://r"), /SVC_ROUTER_URL/);
  assert.throws(() => fleetUrlOf("http://u:p@r"), /SVC_ROUTER_URL/);
});

Deno.test("fleet config: defaults and explicit values", () => {
  const c = parseFleetConfig({ SVC_ROUTER_URL: "http://r:8080", SVC_WORKER_TOKEN: TOKEN }, 9001)!;
  assert.equal(c.advertiseUrl, "http://127.0.0.1:9001");
  assert.equal(c.bundle, "default");
  assert.equal(c.pool, undefined);
  assert.equal(c.machineProfile, undefined);
  assert.match(c.workerId, /^[A-Za-z0-9][A-Za-z0-9._:-]*-\d+-[0-9a-f]{8}$/);
  const d = parseFleetConfig({
    SVC_ROUTER_URL: "http://r:8080",
    SVC_WORKER_TOKEN: TOKEN,
    SVC_WORKER_ID: "gpu-7",
    SVC_ADVERTISE_URL: "http://10.0.0.7:8080/",
    SVC_MACHINE_PROFILE: "A100-80GB",
    SVC_BUNDLE: "extract",
    SVC_POOL: "a100-spot",
  }, 8080)!;
  assert.equal(d.workerId, "gpu-7");
  assert.equal(d.advertiseUrl, "http://10.0.0.7:8080");
  assert.equal(d.machineProfile, "a100-80gb");
  assert.equal(d.bundle, "extract");
  assert.equal(d.pool, "a100-spot");
});

Deno.test("fleet config: bad values name the variable and never show the token", () => {
  const base = { SVC_ROUTER_URL: "http://r:8080", SVC_WORKER_TOKEN: TOKEN };
  const cases: [Record<string, string>, RegExp][] = [
    [{ SVC_ROUTER_URL: "http://r" }, /SVC_WORKER_TOKEN is required/],
    [{ ...base, SVC_WORKER_TOKEN: "with space in the token" }, /SVC_WORKER_TOKEN/],
    [{ ...base, SVC_WORKER_TOKEN: "short" }, /SVC_WORKER_TOKEN/],
    [{ ...base, SVC_WORKER_ID: "bad id" }, /SVC_WORKER_ID/],
    [{ ...base, SVC_ADVERTISE_URL: "not a url" }, /SVC_ADVERTISE_URL/],
    [{ ...base, SVC_MACHINE_PROFILE: "H100 SXM" }, /SVC_MACHINE_PROFILE/],
    [{ ...base, SVC_BUNDLE: "Default!" }, /SVC_BUNDLE/],
    [{ ...base, SVC_POOL: "a b" }, /SVC_POOL/],
    [{ ...base, SVC_ROUTER_RECONNECT_MAX_MS: "5" }, /SVC_ROUTER_RECONNECT_MAX_MS/],
  ];
  for (const [env, re] of cases) {
    assert.throws(() => parseFleetConfig(env, 8080), (e: Error) => {
      assert.match(e.message, re);
      assert.ok(!e.message.includes(TOKEN) && !e.message.includes("with space"));
      return true;
    });
  }
});

Deno.test("router log: secret values are removed wherever they appear in a line", () => {
  const lines: string[] = [];
  const orig = console.log;
  console.log = (l: string) => lines.push(l);
  try {
    const log = createLogger({
      json: true,
      minLevel: "info",
      secrets: ["worker-secret-0123456789"],
    });
    log("info", "upstream failed", { error: "bad token worker-secret-0123456789 in header" });
  } finally {
    console.log = orig;
  }
  assert.equal(lines.length, 1);
  assert.ok(!lines[0].includes("worker-secret-0123456789"), lines[0]);
  assert.match(lines[0], /\[redacted\]/);
});
