/**
 * Consistency of the deployment files (infra/docker, infra/k8s, infra/systemd, infra/deploy)
 * with the code they deploy. None of these files can be run here (no Docker engine, no cluster,
 * no systemd as PID 1, no GPU), so these tests check what can drift silently instead:
 * variable names and values against the components' own parsers, probe paths and ports against
 * the routes, shutdown bounds against the drain, commands against deno.json's permission sets,
 * KEDA queries against the metrics the router registers, selectors against labels, and the
 * router image's npm packages against `deno info` (with the images' health checks, run for real:
 * tests/e2e/infra/images.test.ts).
 */
import assert from "node:assert/strict";
import { loadWorkerSettings } from "@svc/worker/settings";
import { fleetConfigOf } from "#worker/fleet/config.ts";
import { loadRouterSettings } from "@svc/router/settings";
import {
  dockerAssignments,
  dockerfile,
  execForm,
  ROUTER_DOCKERFILE,
  WORKER_DOCKERFILE,
} from "./dockerfile.ts";
import {
  asList,
  asMap,
  asString,
  at,
  containers,
  deployments,
  envFile,
  envOf,
  listDir,
  NOT_SETTINGS_BUT_MENTIONED,
  ofKind,
  podSpec,
  read,
  ROUTER_SETTINGS,
  ROUTER_UNIT,
  routerDeployment,
  routerEnvironments,
  SECRETS,
  settingsOnly,
  TEST_TOKEN,
  unitValue,
  WORKER_ENV_FILE,
  WORKER_SETTINGS,
  WORKER_UNIT,
  workerDeployments,
  workerEnvironments,
} from "./infra_helpers.ts";

Deno.test("infra: the setting lists read from the code are complete enough to trust", () => {
  // Guards the regular expressions above: if the code changes shape they must not come back
  // empty and let every name pass.
  for (
    const n of [
      "SVC_PORT",
      "SVC_DEVICE",
      "SVC_CACHE_DIR",
      "HF_TOKEN",
      "SVC_SHUTDOWN_DRAIN_S",
      "SVC_ROUTER_URL",
      "SVC_WORKER_TOKEN",
      "SVC_ADVERTISE_URL",
      "SVC_MACHINE_PROFILE",
      "SVC_BUNDLE",
      "SVC_WORKER_ID",
      "SVC_MAX_ITEMS",
      "SVC_HUB_DISABLED",
      "SVC_WEIGHTS_MAX_PARALLEL",
    ]
  ) assert.ok(WORKER_SETTINGS.has(n), `worker settings should contain ${n}`);
  for (
    const n of [
      "SVC_PORT",
      "SVC_WORKER_TOKEN",
      "SVC_API_KEYS",
      "SVC_DIRECTORY",
      "SVC_KV_PATH",
      "SVC_DEFAULT_MACHINE_PROFILE",
      "SVC_MACHINE_PROFILES",
      "SVC_PROVISION_WEBHOOK",
      "SVC_PROVISION_WEBHOOK_TOKEN",
      "SVC_LOG_JSON",
    ]
  ) assert.ok(ROUTER_SETTINGS.has(n), `router settings should contain ${n}`);
  assert.ok(!ROUTER_SETTINGS.has("SVC_DEVICE") && !WORKER_SETTINGS.has("SVC_DIRECTORY"));
});

Deno.test("infra: every variable a deployment file sets is a setting of that component", () => {
  for (const [where, env] of workerEnvironments()) {
    for (const name of settingsOnly(env)) {
      assert.ok(WORKER_SETTINGS.has(name), `${where}: ${name} is not a worker setting`);
    }
  }
  for (const [where, env] of routerEnvironments()) {
    for (const name of settingsOnly(env)) {
      assert.ok(ROUTER_SETTINGS.has(name), `${where}: ${name} is not a router setting`);
    }
  }
  // The Secret's keys are read by one side or the other.
  const secret = ofKind("Secret")[0];
  for (const key of Object.keys(asMap(secret.doc.stringData, "stringData"))) {
    assert.ok(WORKER_SETTINGS.has(key) || ROUTER_SETTINGS.has(key), `secret key ${key}`);
  }
});

Deno.test("infra: every SVC_ name written anywhere in the deployment files is real", () => {
  // Comments and docs included: a misspelt variable in a README is a deployment bug too.
  const dirs = ["infra/", "infra/docker/", "infra/k8s/", "infra/systemd/", "infra/deploy/"];
  let scanned = 0;
  for (const dir of dirs) {
    for (const f of listDir(dir)) {
      if (dir === "infra/" && !f.endsWith(".md")) continue; // other infra/ files are not ours
      scanned++;
      for (const m of read(dir + f).matchAll(/\bSVC_[A-Z0-9_]*[A-Z0-9]\b/g)) {
        const n = m[0];
        assert.ok(
          WORKER_SETTINGS.has(n) || ROUTER_SETTINGS.has(n) || NOT_SETTINGS_BUT_MENTIONED.has(n),
          `${dir}${f}: ${n} is not a setting of the worker or the router`,
        );
      }
    }
  }
  assert.ok(scanned >= 15, `scanned only ${scanned} files`);
});

Deno.test("infra: the values deployment files set pass the components' own validation", () => {
  for (const [where, env] of workerEnvironments()) {
    // A file may leave a secret to the operator; fill it in the way the operator must.
    const filled = { ...env };
    if (filled.SVC_ROUTER_URL && !filled.SVC_WORKER_TOKEN) filled.SVC_WORKER_TOKEN = TEST_TOKEN;
    const cfg = loadWorkerSettings(filled);
    assert.deepEqual(cfg.warnings, [], `${where}: unknown settings`);
    if (filled.SVC_ROUTER_URL) {
      assert.ok(cfg.fleet, `${where}: fleet settings expected`);
      const fleet = fleetConfigOf(cfg.fleet, cfg.listen.port);
      // Over HTTP the router must reach the worker at its own address, not the loopback
      // default; the connection transport needs no address at all.
      if (fleet.transport === "http" || fleet.advertiseUrl !== undefined) {
        const advertised = fleet.advertiseUrl ?? "";
        assert.doesNotMatch(advertised, /127\.0\.0\.1|localhost|^$/, where);
        assert.equal(new URL(advertised).port || "80", String(cfg.listen.port), where);
      }
    }
    // `auto` does not select CUDA in this release (worker/main.ts passes no GPU count), so every
    // deployment names its device.
    assert.notEqual(cfg.device, "auto", `${where}: set SVC_DEVICE explicitly`);
  }
  for (const [where, env] of routerEnvironments()) {
    const cfg = loadRouterSettings(env);
    assert.deepEqual(cfg.warnings, [], `${where}: unknown settings`);
    assert.equal(cfg.directory.kind, "memory", `${where}: one router process, memory directory`);
  }
});

Deno.test("infra: no deployment file carries a usable secret", () => {
  // Literal values of secret settings must leave the service closed: rejected at start-up, or
  // empty (router: refuses every worker; worker in a fleet: refuses to start).
  const literal: [string, string, string][] = [];
  for (const [where, env] of [...workerEnvironments(), ...routerEnvironments()]) {
    for (const name of SECRETS) {
      if (env[name] && env[name] !== TEST_TOKEN) {
        literal.push([where, name, env[name]]);
      }
    }
  }
  const secret = ofKind("Secret")[0];
  const data = asMap(secret.doc.stringData, "stringData");
  for (const [k, v] of Object.entries(data)) literal.push([secret.file, k, asString(v ?? "", k)]);
  for (const [where, name, value] of literal) {
    if (name === "SVC_WORKER_TOKEN" && value !== "") {
      assert.throws(() => loadRouterSettings({ SVC_WORKER_TOKEN: value }), where);
      assert.throws(
        () => loadWorkerSettings({ SVC_ROUTER_URL: "http://r", SVC_WORKER_TOKEN: value }),
        where,
      );
    } else assert.equal(value, "", `${where}: ${name} must not carry a value`);
  }
  // Manifests take secrets from the Secret, never from a literal.
  for (const d of deployments) {
    for (const c of containers(d)) {
      for (const e of envOf(c, d.file)) {
        if (!SECRETS.has(e.name)) continue;
        assert.equal(e.value, undefined, `${d.file}: ${e.name} must come from the Secret`);
        const ref = asMap(at(e.valueFrom, "secretKeyRef"), `${d.file} ${e.name}`);
        assert.equal(ref.name, secret.name, `${d.file}: ${e.name} secret name`);
        assert.ok(Object.hasOwn(data, asString(ref.key, "key")), `${d.file}: key ${ref.key}`);
      }
    }
  }
});

Deno.test("infra: probe paths and ports are the API's", () => {
  // The routes exist in both servers.
  for (const src of ["worker/server/app.ts", "router/app.ts"]) {
    for (const p of ["/healthz", "/readyz"]) {
      assert.match(read(src), new RegExp(`\\.get\\("${p}"`), `${src} serves ${p}`);
    }
  }
  // Both listen on 8080 by default; the deployment files use that port.
  const port = String(loadWorkerSettings({}).listen.port);
  assert.equal(port, "8080");
  assert.equal(String(loadRouterSettings({}).listen.port), port);
  for (const d of deployments) {
    const spec = podSpec(d);
    assert.equal(spec.enableServiceLinks, false, `${d.file}: enableServiceLinks: false`);
    assert.equal(
      at(d.doc, "spec", "template", "metadata", "annotations", "prometheus.io/port"),
      port,
    );
    for (const c of containers(d)) {
      const where = `${d.file} ${String(c.name)}`;
      const ports = asList(c.ports, `${where} ports`).map((p) => asMap(p, where));
      assert.deepEqual(ports.map((p) => p.containerPort), [Number(port)], `${where} containerPort`);
      const named = new Map(ports.map((p) => [String(p.name), String(p.containerPort)]));
      const probe = (kind: string) => {
        const get = asMap(at(c, kind, "httpGet"), `${where} ${kind}`);
        const p = String(get.port);
        return { path: get.path, port: named.get(p) ?? p };
      };
      assert.deepEqual(probe("livenessProbe"), { path: "/healthz", port }, where);
      assert.deepEqual(probe("readinessProbe"), { path: "/readyz", port }, where);
      if (c.startupProbe !== undefined) {
        assert.deepEqual(probe("startupProbe"), { path: "/healthz", port }, where);
      }
      assert.equal(envOf(c, where).find((e) => e.name === "SVC_PORT")?.value, port, where);
    }
  }
  // The Service sends its traffic to the router pods' 8080.
  assert.ok(routerDeployment);
  const routerPorts = asList(containers(routerDeployment)[0].ports, "router ports");
  const service = ofKind("Service")[0];
  for (const sp of asList(at(service.doc, "spec", "ports"), "Service ports")) {
    const t = String(at(sp, "targetPort"));
    const named = routerPorts.find((p) => at(p, "name") === t);
    assert.equal(named ? String(at(named, "containerPort")) : t, port, `Service targetPort ${t}`);
  }
  // The images expose and configure the same port.
  for (const rel of [WORKER_DOCKERFILE, ROUTER_DOCKERFILE]) {
    const ins = dockerfile(rel);
    assert.deepEqual(ins.filter((i) => i.op === "EXPOSE").map((i) => i.args), [port], rel);
    assert.equal(dockerAssignments(ins, "ENV").SVC_PORT, port, rel);
  }
});

Deno.test("infra: shutdown bounds cover the drain", () => {
  const drainDefault = loadWorkerSettings({}).shutdownDrainS;
  assert.equal(drainDefault, 25);
  for (const d of workerDeployments) {
    const grace = Number(podSpec(d).terminationGracePeriodSeconds);
    assert.ok(
      grace > drainDefault,
      `${d.file}: grace ${grace} must exceed the ${drainDefault} s drain`,
    );
    for (const c of containers(d)) {
      const set = envOf(c, d.file).find((e) => e.name === "SVC_SHUTDOWN_DRAIN_S")?.value;
      if (set !== undefined) assert.ok(grace > Number(set), `${d.file}: grace > ${set}`);
    }
  }
  const workerStop = Number(unitValue(WORKER_UNIT, "TimeoutStopSec"));
  const workerDrain = Number(envFile(WORKER_ENV_FILE).SVC_SHUTDOWN_DRAIN_S ?? drainDefault);
  assert.ok(workerStop > Math.max(drainDefault, workerDrain), `${WORKER_UNIT}: TimeoutStopSec`);
  // The router's own exit bound on SIGTERM (router/main.ts).
  const m = /setTimeout\(\(\) => Deno\.exit\(1\), (\d+)\)/.exec(read("router/main.ts"));
  assert.ok(m, "router/main.ts: the bounded close");
  const routerBoundS = Number(m[1]) / 1000;
  assert.ok(routerDeployment);
  assert.ok(Number(podSpec(routerDeployment).terminationGracePeriodSeconds) > routerBoundS);
  assert.ok(Number(unitValue(ROUTER_UNIT, "TimeoutStopSec")) > routerBoundS);
  for (const unit of [WORKER_UNIT, ROUTER_UNIT]) {
    assert.equal(unitValue(unit, "KillSignal"), "SIGTERM", unit);
    assert.equal(unitValue(unit, "Restart"), "on-failure", unit);
    // KillMode=mixed would send SIGTERM to the main process only (see the unit's comment).
    assert.notEqual(unitValue(unit, "KillMode"), "mixed", unit);
    // V8's JIT needs writable-then-executable memory.
    assert.notEqual(unitValue(unit, "MemoryDenyWriteExecute"), "yes", unit);
  }
  // The GPU devices must stay open to the worker: PrivateDevices hides them, and ProtectClock
  // implies a DeviceAllow= list that (on older systemd) closes every device not on it.
  for (const key of ["PrivateDevices", "ProtectClock"]) {
    assert.notEqual(unitValue(WORKER_UNIT, key), "yes", `${WORKER_UNIT}: ${key}`);
  }
  assert.equal(unitValue(WORKER_UNIT, "DeviceAllow"), undefined, WORKER_UNIT);
  for (const rel of [WORKER_DOCKERFILE, ROUTER_DOCKERFILE]) {
    const stop = dockerfile(rel).filter((i) => i.op === "STOPSIGNAL").map((i) => i.args);
    assert.deepEqual(stop, ["SIGTERM"], rel);
  }
});

Deno.test("infra: commands use deno.json's permission sets and entry points", () => {
  const denoJson = JSON.parse(read("deno.json"));
  const taskArgs = (task: string): string[] => {
    const t = denoJson.tasks[task];
    // The router task grants read/write of SVC_KV_PATH only when it is set, through a `$(…)` the
    // task shell expands; deployment files use KV over SVC_KV_URL, so they match the rest.
    const command = String(typeof t === "string" ? t : t.command).replace(/\$\([^)]*\)\s*/g, "");
    const words = command.split(/\s+/);
    assert.equal(words[0], "deno", `task ${task}`);
    return words.slice(1);
  };
  const cases: [string, string, string][] = [
    ["worker", WORKER_DOCKERFILE, WORKER_UNIT],
    ["router", ROUTER_DOCKERFILE, ROUTER_UNIT],
  ];
  for (const [role, docker, unit] of cases) {
    const expected = taskArgs(role);
    assert.ok(expected.includes(`-P=${role}`), `deno.json task ${role} uses -P=${role}`);
    assert.ok(denoJson.permissions[role], `deno.json defines the ${role} permission set`);
    const cmd = dockerfile(docker).filter((i) => i.op === "CMD");
    assert.equal(cmd.length, 1, docker);
    const argv = execForm(docker, cmd[0].args);
    assert.match(argv[0], /(^|\/)deno$/, `${docker}: CMD runs deno`);
    assert.deepEqual(argv.slice(1), expected, `${docker}: CMD`);
    const exec = unitValue(unit, "ExecStart")?.split(/\s+/) ?? [];
    assert.match(exec[0], /^\/.*\/deno$/, `${unit}: ExecStart runs deno by absolute path`);
    assert.deepEqual(exec.slice(1), expected, `${unit}: ExecStart`);
  }
  // The worker image's CMD goes through node_modules/.bin/deno, which must be the native binary
  // (see the Dockerfile); the build step that makes it so must stay.
  assert.match(read(WORKER_DOCKERFILE), /node node_modules\/deno\/install\.cjs/);
  assert.match(read(WORKER_DOCKERFILE), /test "\$\(readlink node_modules\/\.bin\/deno\)"/);
});

Deno.test("infra: deno task start runs with the worker's permissions plus running npm and ps only", () => {
  const denoJson = JSON.parse(read("deno.json"));
  assert.match(denoJson.tasks.start.command, /\s-P=start\s+infra\/start_embedded\.ts$/);
  const { run, ...rest } = denoJson.permissions.start;
  const { run: workerRun, ...workerRest } = denoJson.permissions.worker;
  assert.deepEqual(rest, workerRest);
  // npm installs the GloVe package on first start (infra/offline_glove.ts); ps reads the process
  // table for the launcher watch (infra/launcher_watch.ts); nothing else.
  assert.deepEqual(run, [...workerRun, "npm", "ps"]);
});

/** `name{label="v",...}` selectors of a PromQL query. */
