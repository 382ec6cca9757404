import assert from "node:assert/strict";
import { ConfigError, unknownSettingsWarning } from "@svc/shared/config";
import { loadWorkerSettings } from "@svc/worker/settings";
import { fleetConfigOf } from "#worker/fleet/config.ts";
import { modelFilter } from "#worker/catalog/loader.ts";

Deno.test("config: defaults", () => {
  const c = loadWorkerSettings({ HOME: "/home/x" });
  assert.deepEqual(c.listen, { host: "0.0.0.0", port: 8080, enabled: true });
  assert.equal(c.device, "auto");
  assert.equal(c.images.workers, 4, "the spec's SVC_IMAGE_WORKERS default");
  assert.equal(c.scheduling.memoryThresholdPercent, 85);
  assert.equal(c.scheduling.maxBatchRequests, 64);
  assert.equal(c.scheduling.maxBatchItems, 64);
  assert.equal(c.scheduling.maxWaitMs, 0);
  assert.equal(c.scheduling.loadFailureCooldownMs, 30_000);
  assert.equal(c.weights.hubUrl, "https://huggingface.co");
  assert.equal(c.weights.cacheDir, "/home/x/.cache/svc/models");
  assert.equal(c.shutdownDrainS, 25);
  assert.equal(c.bundle, "default");
  assert.equal(c.fleet, null);
  assert.deepEqual(c.log, { json: false, level: "info" });
  assert.deepEqual(c.warnings, []);
});

Deno.test("config: one cache-directory default (XDG first, then HOME)", () => {
  const xdg = loadWorkerSettings({ HOME: "/home/x", XDG_CACHE_HOME: "/xdg" });
  assert.equal(xdg.weights.cacheDir, "/xdg/svc/models");
  assert.equal(loadWorkerSettings({ SVC_CACHE_DIR: " /c " }).weights.cacheDir, "/c");
});

Deno.test("config: bad values stop start-up naming every variable, never echoing secrets", () => {
  assert.throws(() => loadWorkerSettings({ SVC_PORT: "eighty" }), /SVC_PORT/);
  assert.throws(() => loadWorkerSettings({ SVC_DEVICE: "tpu" }), /SVC_DEVICE/);
  assert.throws(
    () => loadWorkerSettings({ SVC_LOAD_FAILURE_COOLDOWN_MS: "-1" }),
    /SVC_LOAD_FAILURE_COOLDOWN_MS/,
  );
  assert.throws(
    () => loadWorkerSettings({ SVC_MAX_BATCH_REQUESTS: "0" }),
    /SVC_MAX_BATCH_REQUESTS/,
  );
  assert.throws(() => loadWorkerSettings({ SVC_MAX_BATCH_ITEMS: "0" }), /SVC_MAX_BATCH_ITEMS/);
  assert.throws(
    () => loadWorkerSettings({ SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT: "120" }),
    /SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT/,
  );
  assert.throws(() => loadWorkerSettings({ SVC_HUB_DISABLED: "maybe" }), /SVC_HUB_DISABLED/);
  assert.throws(() => loadWorkerSettings({ SVC_WEIGHTS_MAX_PARALLEL: "-1" }), /SVC_WEIGHTS/);
  try {
    loadWorkerSettings({ SVC_HUB_URL: "not a url hf_supersecret", SVC_MAX_ITEMS: "x" });
    assert.fail("should throw");
  } catch (e) {
    assert.ok(e instanceof ConfigError);
    assert.deepEqual(e.issues.map((i) => i.name).sort(), ["SVC_HUB_URL", "SVC_MAX_ITEMS"]);
    assert.match(e.message, /SVC_HUB_URL/);
    assert.ok(!e.message.includes("hf_supersecret"));
  }
});

Deno.test("config: lists", () => {
  const c = loadWorkerSettings({ SVC_PRELOAD_MODELS: " a/b , c/d,,", SVC_MODEL_FILTER: "x/*" });
  assert.deepEqual(c.preload, ["a/b", "c/d"]);
  const keep = modelFilter(c.catalog.filter);
  assert.equal(keep("x/y"), true);
  assert.equal(keep("y/x"), false);
  assert.equal(modelFilter(undefined)("anything/at-all"), true);
  assert.equal(loadWorkerSettings({ SVC_MODEL_FILTER: " , " }).catalog.filter, undefined);
});

Deno.test("config: booleans read the same spellings as the router's", () => {
  for (const v of ["1", "true", "YES", "on"]) {
    assert.equal(loadWorkerSettings({ SVC_LOG_JSON: v }).log.json, true, v);
    assert.equal(loadWorkerSettings({ SVC_HUB_DISABLED: v }).weights.hubDisabled, true, v);
  }
  for (const v of ["0", "false", "No", "off"]) {
    assert.equal(loadWorkerSettings({ SVC_LOG_JSON: v }).log.json, false, v);
  }
});

Deno.test("config: secrets are collected for redaction; typos get one warning", () => {
  const c = loadWorkerSettings({
    HF_TOKEN: "hf_secret_value",
    SVC_WORKER_TOKEN: "0123456789abcdef-secret",
    SVC_PROT: "9000",
    SVC_MAX_ITEM: "5",
  });
  assert.deepEqual(c.secrets.sort(), ["0123456789abcdef-secret", "hf_secret_value"]);
  assert.equal(c.warnings.length, 1);
  assert.match(c.warnings[0], /SVC_MAX_ITEM \(did you mean SVC_MAX_ITEMS\?\)/);
  assert.match(c.warnings[0], /SVC_PROT \(did you mean SVC_PORT\?\)/);
  assert.deepEqual(loadWorkerSettings({ SVC_PROT: "1" }, ["SVC_PROT"]).warnings, []);
});

Deno.test("config: a removed setting is named as removed, with what to do, and ignored", () => {
  const removed = { SVC_OLD_KNOB: "it never had an effect; unset it" };
  const known = ["SVC_PORT", "SVC_OLD_KNOBS"];
  const w = unknownSettingsWarning({ SVC_OLD_KNOB: "x", SVC_PROT: "9000" }, known, removed)!;
  assert.match(w, /SVC_PROT \(did you mean SVC_PORT\?\)/);
  assert.match(w, /SVC_OLD_KNOB was removed and is ignored: it never had an effect; unset it/);
  assert.doesNotMatch(w, /SVC_OLD_KNOB \(did you mean/);
  const alone = unknownSettingsWarning({ SVC_OLD_KNOB: "x" }, known, removed)!;
  assert.doesNotMatch(alone, /unknown settings/);
});

Deno.test("config: SVC_ATTENTION_BACKEND is a setting again (auto by default, a bad value named)", () => {
  assert.equal(loadWorkerSettings({}).attentionBackend, "auto");
  for (const value of ["flash", "flash_attention_2", "memory_efficient", "math"] as const) {
    const c = loadWorkerSettings({ SVC_ATTENTION_BACKEND: value });
    assert.equal(c.attentionBackend, value);
    assert.deepEqual(c.warnings, [], "neither unknown nor removed");
  }
  assert.throws(
    () => loadWorkerSettings({ SVC_ATTENTION_BACKEND: "sdpa" }),
    (e: unknown) =>
      e instanceof ConfigError && /SVC_ATTENTION_BACKEND/.test(e.message) &&
      /must be one of auto, flash, flash_attention_2, memory_efficient, math/.test(e.message),
  );
});

const TOKEN = "0123456789abcdef-secret";

Deno.test("fleet config: null without SVC_ROUTER_URL", () => {
  assert.equal(loadWorkerSettings({}).fleet, null);
});

Deno.test("fleet config: defaults and explicit values", () => {
  const c = loadWorkerSettings({ SVC_ROUTER_URL: "http://r:8080", SVC_WORKER_TOKEN: TOKEN }).fleet!;
  assert.equal(c.routerWsUrl, "ws://r:8080/fleet/v1/connect");
  assert.equal(c.advertiseUrl, undefined);
  assert.equal(c.transport, "connection");
  // The connection transport announces no URL of its own; HTTP defaults to loopback.
  assert.equal(fleetConfigOf(c, 9001).advertiseUrl, undefined);
  assert.equal(
    fleetConfigOf({ ...c, transport: "http" }, 9001).advertiseUrl,
    "http://127.0.0.1:9001",
  );
  assert.equal(c.bundle, "default");
  assert.equal(c.pool, undefined);
  assert.equal(c.machineProfile, undefined);
  assert.equal(c.reconnectMaxMs, 10_000);
  assert.match(c.workerId, /^[A-Za-z0-9][A-Za-z0-9._:-]*-\d+-[0-9a-f]{8}$/);
  const d = loadWorkerSettings({
    SVC_ROUTER_URL: "http://r:8080",
    SVC_WORKER_TOKEN: TOKEN,
    SVC_WORKER_ID: "gpu-7",
    SVC_ADVERTISE_URL: "http://10.0.0.7:8080/",
    SVC_MACHINE_PROFILE: "A100-80GB",
    SVC_BUNDLE: "extract",
    SVC_POOL: "a100-spot",
  }).fleet!;
  assert.equal(d.workerId, "gpu-7");
  assert.equal(fleetConfigOf(d, 1).advertiseUrl, "http://10.0.0.7:8080");
  assert.equal(d.machineProfile, "a100-80gb");
  assert.equal(d.bundle, "extract");
  assert.equal(d.pool, "a100-spot");
});

Deno.test("fleet config: several router URLs, one connection to each", () => {
  const c = loadWorkerSettings({
    SVC_ROUTER_URL: " http://a:8080 , wss://b/base/,http://a:8080",
    SVC_WORKER_TOKEN: TOKEN,
  }).fleet!;
  // Duplicates dialled once; the first is the one logs name.
  assert.deepEqual(c.routerWsUrls, [
    "ws://a:8080/fleet/v1/connect",
    "wss://b/base/fleet/v1/connect",
  ]);
  assert.equal(c.routerWsUrl, "ws://a:8080/fleet/v1/connect");
  // A URL with a token in its query is never quoted in the error.
  assert.throws(
    () =>
      loadWorkerSettings({
        SVC_ROUTER_URL: "http://a,ftp://b?key=s3cr3t",
        SVC_WORKER_TOKEN: TOKEN,
      }),
    (e: Error) => !e.message.includes("s3cr3t") && /SVC_ROUTER_URL/.test(e.message),
  );
});

Deno.test("fleet config: bad values name the variable and never show the token", () => {
  const base = { SVC_ROUTER_URL: "http://r:8080", SVC_WORKER_TOKEN: TOKEN };
  const cases: [Record<string, string>, RegExp][] = [
    [{ SVC_ROUTER_URL: "http://r" }, /SVC_WORKER_TOKEN is required/],
    [{ ...base, SVC_ROUTER_URL: "ftp://r" }, /SVC_ROUTER_URL/],
    [{ ...base, SVC_ROUTER_URL: "http://u:p@r" }, /SVC_ROUTER_URL .*must not contain credentials/],
    [{ ...base, SVC_ROUTER_URL: "http://a,ftp://b" }, /SVC_ROUTER_URL entries must be/],
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
    assert.throws(() => loadWorkerSettings(env), (e: Error) => {
      assert.match(e.message, re);
      assert.ok(!e.message.includes(TOKEN) && !e.message.includes("with space"));
      return true;
    });
  }
});

Deno.test("fleet config: the transport and a worker without an HTTP port", () => {
  const base = { SVC_ROUTER_URL: "http://r:8080", SVC_WORKER_TOKEN: TOKEN };
  assert.equal(
    loadWorkerSettings({ ...base, SVC_WORKER_TRANSPORT: "http" }).fleet!.transport,
    "http",
  );
  assert.equal(
    loadWorkerSettings({ ...base, SVC_WORKER_TRANSPORT: "auto" }).fleet!.transport,
    "connection",
  );
  assert.equal(loadWorkerSettings({ ...base, SVC_WORKER_HTTP: "off" }).listen.enabled, false);
  assert.equal(loadWorkerSettings(base).listen.enabled, true);
  // Off needs someone to serve through: a router, over the connection.
  assert.throws(() => loadWorkerSettings({ SVC_WORKER_HTTP: "off" }), /SVC_WORKER_HTTP/);
  assert.throws(
    () => loadWorkerSettings({ ...base, SVC_WORKER_HTTP: "off", SVC_WORKER_TRANSPORT: "http" }),
    /SVC_WORKER_HTTP.*connection transport/,
  );
});
