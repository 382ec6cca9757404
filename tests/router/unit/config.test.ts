import assert from "node:assert/strict";
import { loadRouterSettings } from "@svc/router/settings";

const TOKEN = "0123456789abcdef-secret";

Deno.test("router config: defaults", () => {
  const c = loadRouterSettings({});
  assert.deepEqual(c.listen, { host: "0.0.0.0", port: 8080 });
  assert.equal(c.workerToken, undefined);
  assert.deepEqual(c.apiKeys, []);
  assert.equal(c.pools.defaultMachineProfile, undefined);
  assert.deepEqual(c.fleet, {
    workerStaleMs: 3000,
    heartbeatIntervalMs: 500,
    statusIntervalMs: 1000,
  });
  assert.equal(c.provisioning.retryAfterS, 10);
  assert.equal(c.provisioning.webhook, undefined);
  assert.equal(c.directory.kind, "memory");
  assert.equal(c.directory.kvUrl, undefined);
  assert.equal(c.directory.kvRenewMs, 10_000);
  assert.equal(c.resultCache.kvMaxEntryBytes, 256 * 1024);
  assert.deepEqual(c.log, { json: false, level: "info" });
  // A denokv server over KV Connect: the URL as given (the token stays in DENO_KV_ACCESS_TOKEN).
  const kv = loadRouterSettings({ SVC_DIRECTORY: "kv", SVC_KV_URL: "https://kv.internal:4512" });
  assert.equal(kv.directory.kvUrl, "https://kv.internal:4512");
});

Deno.test("router config: the fleet caps admit 1000 workers of 30 models and follow SVC_FLEET_WORKERS", () => {
  const caps = loadRouterSettings({}).fleetLimits.caps;
  assert.deepEqual(caps, { maxConnections: 2000, maxModels: 100_000, maxBytesPerS: 6_144_000 });
  assert.ok(caps.maxConnections >= 1000 && caps.maxModels >= 30_000);
  assert.deepEqual(loadRouterSettings({ SVC_FLEET_WORKERS: "5" }).fleetLimits.caps, {
    maxConnections: 10,
    maxModels: 1000, // never under one worker's SVC_WORKER_MAX_MODELS
    maxBytesPerS: 65_536, // never under 64 KiB
  });
  // An explicit cap wins over the derived one; the others still derive.
  const set = loadRouterSettings({ SVC_FLEET_WORKERS: "10", SVC_FLEET_MAX_CONNECTIONS: "7" });
  assert.deepEqual(set.fleetLimits.caps, {
    maxConnections: 7,
    maxModels: 1000,
    maxBytesPerS: 65_536,
  });
  assert.throws(
    () => loadRouterSettings({ SVC_FLEET_MAX_MODELS: "10" }),
    /SVC_FLEET_MAX_MODELS.*SVC_WORKER_MAX_MODELS/,
  );
});

Deno.test("router config: SVC_LOG_JSON reads the worker's spellings", () => {
  for (const v of ["1", "true", "yes", "ON"]) {
    assert.equal(loadRouterSettings({ SVC_LOG_JSON: v }).log.json, true);
  }
  for (const v of ["0", "false", "no", "off"]) {
    assert.equal(loadRouterSettings({ SVC_LOG_JSON: v }).log.json, false);
  }
  assert.throws(() => loadRouterSettings({ SVC_LOG_JSON: "sure" }), /SVC_LOG_JSON/);
});

Deno.test("router config: typos get one warning naming the closest setting", () => {
  const c = loadRouterSettings({ SVC_PROT: "1", SVC_API_KEY: "x", PATH: "/bin" });
  assert.deepEqual(c.warnings, [
    "unknown settings ignored: SVC_API_KEY (did you mean SVC_API_KEYS?), SVC_PROT (did you mean SVC_PORT?)",
  ]);
});

Deno.test("router config: values are parsed and normalised", () => {
  const c = loadRouterSettings({
    SVC_PORT: "9000",
    SVC_WORKER_TOKEN: TOKEN,
    SVC_API_KEYS: "key-aaaaaaaa, key-bbbbbbbb ,",
    SVC_DEFAULT_MACHINE_PROFILE: "L4",
    SVC_MACHINE_PROFILES: "l4,cpu",
    SVC_DIRECTORY: "kv",
    SVC_PROVISION_WEBHOOK: "https://hooks.example/x",
  });
  assert.equal(c.listen.port, 9000);
  assert.deepEqual(c.apiKeys, ["key-aaaaaaaa", "key-bbbbbbbb"]);
  assert.equal(c.pools.defaultMachineProfile, "l4");
  assert.deepEqual(c.pools.machineProfiles, ["l4", "cpu"]);
  assert.equal(c.directory.kind, "kv");
  assert.equal(c.provisioning.webhook?.url, "https://hooks.example/x");
  assert.deepEqual(c.secrets.sort(), [TOKEN, "key-aaaaaaaa", "key-bbbbbbbb"].sort());
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
    [{ SVC_MACHINE_PROFILES: "l4,Not A Slug" }, /SVC_MACHINE_PROFILES/],
    [{ SVC_WORKER_ALLOWED_NETWORKS: "10.0.0.0/33" }, /SVC_WORKER_ALLOWED_NETWORKS/],
    [{ SVC_WORKER_ALLOWED_NETWORKS: "example.com" }, /SVC_WORKER_ALLOWED_NETWORKS/],
    [
      { SVC_WORKER_MAX_FRAMES_PER_S: "5", SVC_HEARTBEAT_INTERVAL_MS: "100" },
      /SVC_WORKER_MAX_FRAMES_PER_S/,
    ],
    [{ SVC_WORKER_STALE_MS: "300", SVC_HEARTBEAT_INTERVAL_MS: "500" }, /SVC_WORKER_STALE_MS/],
    [{ SVC_LOG_LEVEL: "loud" }, /SVC_LOG_LEVEL/],
    [{ SVC_KV_URL: "https://user:short-secret@kv.example:4512" }, /DENO_KV_ACCESS_TOKEN/],
    [{ SVC_KV_URL: "kv.example:4512" }, /SVC_KV_URL/],
    [{ SVC_KV_RENEW_MS: "10" }, /SVC_KV_RENEW_MS/],
    [{ SVC_RESULT_CACHE_KV_MAX_ENTRY_BYTES: "1000000" }, /SVC_RESULT_CACHE_KV_MAX_ENTRY_BYTES/],
  ];
  for (const [env, re] of cases) {
    assert.throws(() => loadRouterSettings(env), (e: Error) => {
      assert.match(e.message, re);
      assert.ok(!e.message.includes("short-secret"));
      assert.ok(!e.message.includes("tiny"));
      return true;
    });
  }
});
