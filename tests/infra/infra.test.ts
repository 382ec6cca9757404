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
import { loadWorkerSettings, WORKER_SETTING_NAMES } from "../../worker/config/settings.ts";
import { fleetConfigOf } from "../../worker/fleet/config.ts";
import { loadRouterSettings, ROUTER_SETTING_NAMES } from "../../router/settings.ts";
import { START_SCHEMA } from "../../infra/start_settings.ts";
import { VERSION } from "@svc/shared/version";
import { createRouterMetrics } from "../../router/metrics/router_metrics.ts";
import { parseAllDocuments } from "yaml";
import {
  dockerAssignments,
  dockerfile,
  execForm,
  ROUTER_DOCKERFILE,
  WORKER_DOCKERFILE,
} from "./dockerfile.ts";

const ROOT = new URL("../../", import.meta.url);
const read = (rel: string): string => Deno.readTextFileSync(new URL(rel, ROOT));
const exists = (rel: string): boolean => {
  try {
    Deno.statSync(new URL(rel, ROOT));
    return true;
  } catch {
    return false;
  }
};
const listDir = (rel: string): string[] =>
  [...Deno.readDirSync(new URL(rel, ROOT))].filter((e) => e.isFile).map((e) => e.name).sort();

/** Variables the deployment files may set: our settings, plus the hub token. */
const IS_SETTING_NAME = /^(SVC_[A-Z0-9_]+|HF_TOKEN)$/;
/** Secret settings: never a literal in a manifest, always from a Secret or an env file. */
const SECRETS = new Set([
  "SVC_WORKER_TOKEN",
  "HF_TOKEN",
  "SVC_API_KEYS",
  "SVC_ADMIN_KEYS",
  "SVC_WORKER_API_KEY",
]);
/** A token that passes both sides' validation, used where a file leaves a secret to the user. */
const TEST_TOKEN = "0123456789abcdef0123456789abcdef";

// ------------------------------------------------------------------------------------------
// The settings, read from the schemas each process parses its environment with.

/** Every variable a worker process reads as a setting (`deno task start` included). */
const WORKER_SETTINGS = new Set<string>([...WORKER_SETTING_NAMES, ...START_SCHEMA.names]);

/** Every variable the router reads. */
const ROUTER_SETTINGS = new Set<string>(ROUTER_SETTING_NAMES);

/**
 * Names that appear in infra comments without being settings: the variables Kubernetes' service
 * links would inject for the svc-router Service (router.yaml explains why they are turned off).
 */
const NOT_SETTINGS_BUT_MENTIONED = new Set(["SVC_ROUTER_SERVICE_HOST", "SVC_ROUTER_PORT"]);

// ------------------------------------------------------------------------------------------
// Readers for the three file formats.

/** `KEY=value` lines of an env file (comments and blank lines skipped). */
function envFile(rel: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of read(rel).split("\n")) {
    if (/^\s*(#|$)/.test(line)) continue;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    assert.ok(m, `${rel}: not KEY=value: ${line}`);
    out[m[1]] = m[2];
  }
  return out;
}

/** `Key=value` entries of a systemd unit (every section; repeated keys kept in order). */
function unitEntries(rel: string): [string, string][] {
  const out: [string, string][] = [];
  for (const line of read(rel).split("\n")) {
    if (/^\s*([#;]|$)/.test(line) || /^\[.*\]$/.test(line)) continue;
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    assert.ok(m, `${rel}: not Key=value: ${line}`);
    out.push([m[1], m[2]]);
  }
  return out;
}
const unitValue = (rel: string, key: string): string | undefined =>
  unitEntries(rel).find(([k]) => k === key)?.[1];
/** `Environment=NAME=value` lines of a unit. */
function unitEnvironment(rel: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of unitEntries(rel)) {
    if (k !== "Environment") continue;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(v);
    assert.ok(m, `${rel}: Environment=${v}`);
    out[m[1]] = m[2];
  }
  return out;
}

/** A parsed YAML value, typed the way Kubernetes reads it (numbers and booleans are not strings). */
type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };
/** A parsed mapping. */
type YamlMap = { [key: string]: YamlValue };

/**
 * Every non-empty document of a multi-document YAML text. YAML 1.1, as Kubernetes' reader
 * (go-yaml) uses; any parse error (duplicate keys included) fails the test with its line.
 */
function parseYamlDocuments(source: string): YamlValue[] {
  return parseAllDocuments(source, { version: "1.1" }).flatMap((doc) => {
    if (doc.errors.length > 0) throw doc.errors[0];
    const value = doc.toJS() as YamlValue;
    return value === null ? [] : [value];
  });
}

// Helpers over the parsed documents.
const asMap = (v: YamlValue | undefined, what: string): YamlMap => {
  assert.ok(v !== null && typeof v === "object" && !Array.isArray(v), `${what}: not a mapping`);
  return v as YamlMap;
};
const asList = (v: YamlValue | undefined, what: string): YamlValue[] => {
  assert.ok(Array.isArray(v), `${what}: not a list`);
  return v;
};
const asString = (v: YamlValue | undefined, what: string): string => {
  assert.equal(typeof v, "string", `${what}: not a scalar`);
  return v as string;
};
/** Follow a path of keys (list indexes as digits); undefined when any step is missing. */
function at(v: YamlValue | undefined, ...path: string[]): YamlValue | undefined {
  let cur = v;
  for (const key of path) {
    if (Array.isArray(cur)) cur = /^\d+$/.test(key) ? cur[Number(key)] : undefined;
    else if (cur !== null && cur !== undefined && typeof cur === "object") cur = cur[key];
    else return undefined;
  }
  return cur;
}

interface K8sObject {
  file: string;
  kind: string;
  name: string;
  doc: YamlMap;
}

const K8S_DIR = "infra/k8s/";
const k8sFiles = listDir(K8S_DIR).filter((f) => f.endsWith(".yaml"));
const k8sObjects: K8sObject[] = k8sFiles.filter((f) => f !== "kustomization.yaml").flatMap((f) =>
  parseYamlDocuments(read(K8S_DIR + f)).map((d) => {
    const doc = asMap(d, f);
    return {
      file: f,
      kind: asString(doc.kind, `${f} kind`),
      name: asString(at(doc, "metadata", "name"), `${f} metadata.name`),
      doc,
    };
  })
);
const ofKind = (kind: string) => k8sObjects.filter((o) => o.kind === kind);
const deployments = ofKind("Deployment");
const routerDeployment = deployments.find((d) => d.file === "router.yaml");
const workerDeployments = deployments.filter((d) => /^worker-.*\.yaml$/.test(d.file));

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: YamlMap;
}

function podSpec(o: K8sObject): YamlMap {
  return asMap(at(o.doc, "spec", "template", "spec"), `${o.file} pod spec`);
}
function containers(o: K8sObject): YamlMap[] {
  return asList(podSpec(o).containers, `${o.file} containers`).map((c) => asMap(c, o.file));
}
function envOf(container: YamlMap, what: string): EnvVar[] {
  return asList(container.env ?? [], `${what} env`).map((e) => {
    const m = asMap(e, `${what} env entry`);
    return {
      name: asString(m.name, `${what} env name`),
      // Kubernetes refuses an unquoted number or boolean here: env values are strings.
      value: m.value === undefined ? undefined : asString(m.value ?? "", `${what} env value`),
      valueFrom: m.valueFrom === undefined ? undefined : asMap(m.valueFrom, `${what} valueFrom`),
    } as EnvVar;
  });
}
/** A container's env as a plain record, the way the process will see it in a pod. */
function resolvedEnv(o: K8sObject, container: YamlMap): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of envOf(container, o.file)) {
    if (e.value !== undefined) {
      // Kubernetes expands $(VAR) only for variables defined earlier in the list.
      out[e.name] = e.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (_whole, v: string) => {
        assert.ok(v in out, `${o.file}: ${e.name} uses $(${v}) before it is defined`);
        return out[v];
      });
    } else if (at(e.valueFrom, "secretKeyRef")) {
      out[e.name] = TEST_TOKEN; // the real value comes from the Secret
    } else if (at(e.valueFrom, "fieldRef", "fieldPath") === "status.podIP") {
      out[e.name] = "10.1.2.3";
    } else if (at(e.valueFrom, "fieldRef", "fieldPath") === "metadata.name") {
      out[e.name] = `${o.name}-7d9f8-abcde`;
    } else assert.fail(`${o.file}: ${e.name}: unexpected valueFrom`);
  }
  return out;
}

const WORKER_UNIT = "infra/systemd/svc-worker.service";
const ROUTER_UNIT = "infra/systemd/svc-router.service";
const WORKER_ENV_FILE = "infra/systemd/worker.env.example";
const ROUTER_ENV_FILE = "infra/systemd/router.env.example";

/** A unit's environment: EnvironmentFile= entries override Environment= ones. */
function serviceEnv(unit: string, file: string): Record<string, string> {
  return { ...unitEnvironment(unit), ...envFile(file) };
}

/** The environment each deployment file gives a component, by file. */
function workerEnvironments(): [string, Record<string, string>][] {
  const ins = dockerfile(WORKER_DOCKERFILE);
  const args = dockerAssignments(ins, "ARG");
  const dockerEnv = dockerAssignments(ins, "ENV");
  const out: [string, Record<string, string>][] = [];
  // The image's defaults, for the GPU default and the CPU variant of the DEVICE build argument.
  for (const device of [args.DEVICE, "cpu"]) {
    const env = Object.fromEntries(
      Object.entries(dockerEnv).map(([k, v]) => [k, v.replaceAll("${DEVICE}", device)]),
    );
    out.push([`${WORKER_DOCKERFILE} (DEVICE=${device})`, env]);
  }
  for (const d of workerDeployments) {
    for (const c of containers(d)) out.push([`${d.file} ${String(c.name)}`, resolvedEnv(d, c)]);
  }
  out.push([`${WORKER_UNIT} + ${WORKER_ENV_FILE}`, serviceEnv(WORKER_UNIT, WORKER_ENV_FILE)]);
  return out;
}
function routerEnvironments(): [string, Record<string, string>][] {
  const out: [string, Record<string, string>][] = [
    [ROUTER_DOCKERFILE, dockerAssignments(dockerfile(ROUTER_DOCKERFILE), "ENV")],
    [`${ROUTER_UNIT} + ${ROUTER_ENV_FILE}`, serviceEnv(ROUTER_UNIT, ROUTER_ENV_FILE)],
  ];
  assert.ok(routerDeployment, "router.yaml has a Deployment");
  for (const c of containers(routerDeployment)) {
    out.push([`router.yaml ${String(c.name)}`, resolvedEnv(routerDeployment, c)]);
  }
  return out;
}
const settingsOnly = (env: Record<string, string>) =>
  Object.keys(env).filter((k) => IS_SETTING_NAME.test(k));

// ------------------------------------------------------------------------------------------

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
function selectors(query: string): { metric: string; labels: Record<string, string> }[] {
  return [...query.matchAll(/\b(svc_[a-z_]+)\{([^}]*)\}/g)].map((m) => ({
    metric: m[1],
    labels: Object.fromEntries(
      [...m[2].matchAll(/([a-z_]+)\s*=\s*"([^"]*)"/g)].map((l) => [l[1], l[2]]),
    ),
  }));
}

/** Metric name → label names, from the router's real (prom-client) registry. */
function routerMetrics(): Map<string, string[]> {
  const metrics = createRouterMetrics().registry.registry.getMetricsAsArray();
  return new Map(
    metrics.map((m) => [m.name, [...(m as { labelNames?: string[] }).labelNames ?? []]]),
  );
}

Deno.test("infra: KEDA scales each pool on the router's real metrics, labelled for that pool", () => {
  const metrics = routerMetrics();
  assert.deepEqual(metrics.get("svc_router_pending_demand"), ["machine_profile", "bundle"]);
  const scaled = ofKind("ScaledObject");
  assert.equal(scaled.length, workerDeployments.length, "one ScaledObject per worker pool");
  for (const so of scaled) {
    const target = asString(at(so.doc, "spec", "scaleTargetRef", "name"), `${so.file} target`);
    const d = workerDeployments.find((w) => w.name === target && w.file === so.file);
    assert.ok(d, `${so.file}: scaleTargetRef ${target} is the Deployment in the same file`);
    assert.equal(at(so.doc, "spec", "minReplicaCount"), 0, `${so.file}: scales from zero`);
    const env = resolvedEnv(d, containers(d)[0]);
    const profile = env.SVC_MACHINE_PROFILE;
    const bundle = env.SVC_BUNDLE ?? "default";
    // The router's pool label is SVC_POOL, by default the machine profile.
    const pool = env.SVC_POOL ?? profile;
    const triggers = asList(at(so.doc, "spec", "triggers"), `${so.file} triggers`);
    const queried = new Set<string>();
    for (const t of triggers) {
      assert.equal(at(t, "type"), "prometheus", so.file);
      const query = asString(at(t, "metadata", "query"), `${so.file} query`);
      const sels = selectors(query);
      assert.ok(sels.length > 0, `${so.file}: query names no metric: ${query}`);
      for (const { metric, labels } of sels) {
        const known = metrics.get(metric);
        assert.ok(known, `${so.file}: ${metric} is not registered by the router`);
        for (const l of Object.keys(labels)) {
          assert.ok(known.includes(l), `${so.file}: ${metric} has no label ${l}`);
        }
        if (labels.machine_profile !== undefined) {
          assert.equal(labels.machine_profile, profile, `${so.file}: machine_profile`);
        }
        if (labels.pool !== undefined) assert.equal(labels.pool, pool, `${so.file}: pool`);
        assert.equal(labels.bundle, bundle, `${so.file}: ${metric} must select the bundle`);
        queried.add(metric);
      }
    }
    assert.ok(queried.has("svc_router_pending_demand"), `${so.file}: scale-from-zero signal`);
  }
  // And the router really exports it (a gauge the metrics hook fills from pending demand).
  assert.match(read("router/metrics/fleet_collector.ts"), /pendingDemand\.set\(/);
});

Deno.test("infra: names, labels and selectors agree", () => {
  const partOf = "app.kubernetes.io/part-of";
  for (const o of k8sObjects) {
    assert.equal(at(o.doc, "metadata", "labels", partOf), "svc", `${o.file} ${o.name}: ${partOf}`);
  }
  const selectorOf = (d: K8sObject) =>
    asMap(at(d.doc, "spec", "selector", "matchLabels"), `${d.file} selector`);
  const podLabels = (d: K8sObject) =>
    asMap(at(d.doc, "spec", "template", "metadata", "labels"), `${d.file} pod labels`);
  const selects = (sel: YamlMap, labels: YamlMap) =>
    Object.entries(sel).every(([k, v]) => labels[k] === v);
  for (const d of deployments) {
    assert.ok(selects(selectorOf(d), podLabels(d)), `${d.file}: selector matches its pods`);
    assert.equal(podLabels(d)[partOf], "svc");
    for (const other of deployments) {
      if (other !== d) {
        assert.ok(
          !selects(selectorOf(d), podLabels(other)),
          `${d.file} selects ${other.file}'s pods`,
        );
      }
    }
  }
  assert.ok(routerDeployment);
  assert.equal(Number(at(routerDeployment.doc, "spec", "replicas")), 1, "memory directory");
  const service = ofKind("Service")[0];
  const svcSel = asMap(at(service.doc, "spec", "selector"), "service selector");
  assert.deepEqual(
    deployments.filter((d) => selects(svcSel, podLabels(d))).map((d) => d.name),
    [routerDeployment.name],
    "the Service selects the router pods only",
  );
  // Workers dial the router through that Service.
  const routerUrl = new URL(`http://${service.name}`).toString();
  // Worker pools: the file name says the pool, and everything else agrees with it.
  const allowed = String(
    envOf(containers(routerDeployment)[0], "router").find((e) => e.name === "SVC_MACHINE_PROFILES")
      ?.value ?? "",
  ).split(",");
  assert.ok(workerDeployments.length >= 1);
  for (const d of workerDeployments) {
    const m = /^worker-([a-z0-9.]+(?:-[a-z0-9.]+)*?)-([a-z0-9]+)\.yaml$/.exec(d.file);
    assert.ok(m, `${d.file}: name it worker-<profile>-<bundle>.yaml`);
    const [, profile, bundle] = m;
    assert.equal(d.name, `svc-worker-${profile}-${bundle}`, d.file);
    assert.equal(podLabels(d)["app.kubernetes.io/instance"], d.name, d.file);
    assert.equal(selectorOf(d)["app.kubernetes.io/instance"], d.name, d.file);
    assert.equal(at(d.doc, "spec", "replicas"), undefined, `${d.file}: KEDA owns replicas`);
    const env = resolvedEnv(d, containers(d)[0]);
    assert.equal(env.SVC_MACHINE_PROFILE, profile, `${d.file}: SVC_MACHINE_PROFILE`);
    assert.equal(env.SVC_BUNDLE, bundle, `${d.file}: SVC_BUNDLE`);
    assert.equal(new URL(env.SVC_ROUTER_URL).toString(), routerUrl, `${d.file}: SVC_ROUTER_URL`);
    assert.ok(allowed.includes(profile), `router SVC_MACHINE_PROFILES lacks ${profile}`);
    // GPU pools ask for a GPU (an extended resource: request equals limit).
    const res = asMap(containers(d)[0].resources, `${d.file} resources`);
    const gpuReq = at(res, "requests", "nvidia.com/gpu");
    assert.equal(gpuReq, at(res, "limits", "nvidia.com/gpu"), `${d.file}: GPU request = limit`);
    if (env.SVC_DEVICE === "cuda") {
      assert.equal(gpuReq, 1, `${d.file}: nvidia.com/gpu: 1`);
      assert.ok(at(podSpec(d), "nodeSelector"), `${d.file}: GPU pools select their GPU type`);
    } else assert.equal(gpuReq, undefined, `${d.file}: CPU pools ask for no GPU`);
  }
  // The NetworkPolicy admits the router to the worker pods.
  for (const np of ofKind("NetworkPolicy")) {
    const sel = asMap(at(np.doc, "spec", "podSelector", "matchLabels"), "podSelector");
    for (const d of workerDeployments) {
      assert.ok(selects(sel, podLabels(d)), `${np.name} ${d.file}`);
    }
    const from = asList(at(np.doc, "spec", "ingress", "0", "from"), "from").map((f) =>
      at(f, "podSelector", "matchLabels")
    ).filter((s) => s !== undefined).map((s) => asMap(s, "from"));
    assert.ok(from.some((s) => selects(s, podLabels(routerDeployment))), "router admitted");
  }
});

Deno.test("infra: kustomization covers every manifest but the Secret template", () => {
  const k = asMap(parseYamlDocuments(read(K8S_DIR + "kustomization.yaml"))[0], "kustomization");
  const resources = asList(k.resources, "resources").map((r) => asString(r, "resource"));
  const expected = k8sFiles.filter((f) =>
    f !== "kustomization.yaml" && f !== "secret.template.yaml"
  );
  assert.deepEqual([...resources].sort(), expected, "resources");
  assert.ok(!resources.includes("secret.template.yaml"), "the template must be filled in first");
  assert.equal(k.namespace, ofKind("Namespace")[0].name);
  // Every image a manifest names is mapped, tagged with the release version.
  const images = new Map(
    asList(k.images, "images").map((i) => [String(at(i, "name")), asMap(i, "image")]),
  );
  for (const d of deployments) {
    for (const c of containers(d)) {
      const img = images.get(String(c.image));
      assert.ok(img, `${d.file}: image ${c.image} is not in kustomization images`);
      assert.equal(img.newTag, VERSION, `${c.image}: tag follows shared/version.ts`);
    }
  }
});

Deno.test("infra: Dockerfiles copy what exists, through their .dockerignore", () => {
  for (const rel of [WORKER_DOCKERFILE, ROUTER_DOCKERFILE]) {
    const ignore = read(`${rel}.dockerignore`).split("\n").filter((l) => l && !l.startsWith("#"));
    assert.equal(ignore[0], "*", `${rel}.dockerignore is an allow-list`);
    const allowed = ignore.slice(1).map((l) => {
      assert.ok(l.startsWith("!"), `${rel}.dockerignore: ${l}`);
      return l.slice(1).replace(/\/$/, "");
    });
    for (const a of allowed) assert.ok(exists(a), `${rel}.dockerignore allows missing ${a}`);
    for (
      const i of dockerfile(rel).filter((i) => i.op === "COPY" && !i.args.startsWith("--from"))
    ) {
      const words = i.args.split(/\s+/).filter((w) => !w.startsWith("--"));
      for (const src of words.slice(0, -1)) {
        const clean = src.replace(/\/$/, "");
        assert.ok(exists(clean), `${rel}: COPY ${src} does not exist`);
        assert.ok(
          allowed.some((a) => clean === a || clean.startsWith(a + "/")),
          `${rel}: COPY ${src} is excluded by the .dockerignore`,
        );
      }
    }
    // Exec forms are JSON (the health check's shell fallback would fail in distroless).
    const hc = dockerfile(rel).filter((i) => i.op === "HEALTHCHECK");
    assert.equal(hc.length, 1, rel);
    const cmdAt = hc[0].args.indexOf("CMD ");
    assert.ok(cmdAt > 0, rel);
    const argv = execForm(rel, hc[0].args.slice(cmdAt + 4));
    assert.ok(argv.join(" ").includes("/healthz"), `${rel}: health check uses /healthz`);
  }
});

Deno.test("infra: images run as the non-root user the pods and volumes expect", () => {
  const userOf = (rel: string) => {
    const u = dockerfile(rel).filter((i) => i.op === "USER").map((i) => i.args);
    assert.equal(u.length, 1, rel);
    // Numeric, so Kubernetes' runAsNonRoot can check it.
    const m = /^(\d+):(\d+)$/.exec(u[0]);
    assert.ok(m && Number(m[1]) > 0, `${rel}: USER uid:gid, non-root`);
    return m[1];
  };
  assert.ok(routerDeployment);
  assert.equal(
    String(at(podSpec(routerDeployment), "securityContext", "runAsUser")),
    userOf(ROUTER_DOCKERFILE),
  );
  const workerUid = userOf(WORKER_DOCKERFILE);
  for (const d of workerDeployments) {
    const spec = podSpec(d);
    assert.equal(String(at(spec, "securityContext", "runAsUser")), workerUid, d.file);
    assert.equal(String(at(spec, "securityContext", "fsGroup")), workerUid, d.file);
    // The root file system is read-only: the weight cache must be on a mounted volume.
    const c = containers(d)[0];
    const env = resolvedEnv(d, c);
    const mounts = asList(c.volumeMounts, `${d.file} mounts`).map((m) =>
      String(at(m, "mountPath"))
    );
    assert.ok(
      mounts.some((m) => env.SVC_CACHE_DIR.startsWith(m + "/")),
      `${d.file}: SVC_CACHE_DIR ${env.SVC_CACHE_DIR} is on no volume`,
    );
  }
  // The image declares the cache as a volume, too.
  const ins = dockerfile(WORKER_DOCKERFILE);
  const cache = dockerAssignments(ins, "ENV").SVC_CACHE_DIR;
  const volumes = ins.filter((i) => i.op === "VOLUME").flatMap((i) => execForm("VOLUME", i.args));
  assert.ok(volumes.some((v) => cache.startsWith(v + "/")), `VOLUME over ${cache}`);
  // systemd: ProtectSystem=strict leaves only CacheDirectory= writable.
  const units: [string, string][] = [[WORKER_UNIT, WORKER_ENV_FILE], [
    ROUTER_UNIT,
    ROUTER_ENV_FILE,
  ]];
  for (const [unit, file] of units) {
    const cacheDir = `/var/cache/${unitValue(unit, "CacheDirectory")}`;
    for (const [k, v] of Object.entries(serviceEnv(unit, file))) {
      if (k === "SVC_CACHE_DIR" || k === "DENO_DIR") {
        assert.ok(v.startsWith(cacheDir + "/"), `${unit}: ${k} under ${cacheDir}`);
      }
    }
    assert.equal(unitValue(unit, "ProtectSystem"), "strict", unit);
  }
});

Deno.test("infra: the manifest reader types scalars as Kubernetes does and refuses bad YAML", () => {
  const [doc] = parseYamlDocuments('a: 1\nb: "1"\nc: yes\nd: "x: y # not a comment"\ne:\n');
  assert.deepEqual(doc, { a: 1, b: "1", c: true, d: "x: y # not a comment", e: null });
  assert.equal(parseYamlDocuments("a: 1\n---\n# only a comment\n---\nb: 2\n").length, 2);
  for (const bad of ["a: 1\na: 2", "a: [1", "a: b: c"]) {
    assert.throws(() => parseYamlDocuments(bad), Error, `should refuse: ${JSON.stringify(bad)}`);
  }
});
