/** Shared setup of infra.test.ts and infra_manifests.test.ts. */
import assert from "node:assert/strict";
import { WORKER_SETTING_NAMES } from "@svc/worker/settings";
import { ROUTER_SETTING_NAMES } from "@svc/router/settings";
import { START_SCHEMA } from "#infra/start_settings.ts";
import { parseAllDocuments } from "yaml";
import {
  dockerAssignments,
  dockerfile,
  ROUTER_DOCKERFILE,
  WORKER_DOCKERFILE,
} from "./dockerfile.ts";
export const ROOT = new URL("../../", import.meta.url);
export const read = (rel: string): string => Deno.readTextFileSync(new URL(rel, ROOT));
export const exists = (rel: string): boolean => {
  try {
    Deno.statSync(new URL(rel, ROOT));
    return true;
  } catch {
    return false;
  }
};
export const listDir = (rel: string): string[] =>
  [...Deno.readDirSync(new URL(rel, ROOT))].filter((e) => e.isFile).map((e) => e.name).sort();

/** Variables the deployment files may set: our settings, plus the hub token. */
export const IS_SETTING_NAME = /^(SVC_[A-Z0-9_]+|HF_TOKEN)$/;
/** Secret settings: never a literal in a manifest, always from a Secret or an env file. */
export const SECRETS = new Set([
  "SVC_WORKER_TOKEN",
  "HF_TOKEN",
  "SVC_API_KEYS",
  "SVC_ADMIN_KEYS",
  "SVC_WORKER_API_KEY",
]);
/** A token that passes both sides' validation, used where a file leaves a secret to the user. */
export const TEST_TOKEN = "0123456789abcdef0123456789abcdef";

// ------------------------------------------------------------------------------------------
// The settings, read from the schemas each process parses its environment with.

/** Every variable a worker process reads as a setting (`deno task start` included). */
export const WORKER_SETTINGS = new Set<string>([...WORKER_SETTING_NAMES, ...START_SCHEMA.names]);

/** Every variable the router reads. */
export const ROUTER_SETTINGS = new Set<string>(ROUTER_SETTING_NAMES);

/**
 * Names that appear in infra comments without being settings: the variables Kubernetes' service
 * links would inject for the svc-router Service (router.yaml explains why they are turned off).
 */
export const NOT_SETTINGS_BUT_MENTIONED = new Set(["SVC_ROUTER_SERVICE_HOST", "SVC_ROUTER_PORT"]);

// ------------------------------------------------------------------------------------------
// Readers for the three file formats.

/** `KEY=value` lines of an env file (comments and blank lines skipped). */
export function envFile(rel: string): Record<string, string> {
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
export function unitEntries(rel: string): [string, string][] {
  const out: [string, string][] = [];
  for (const line of read(rel).split("\n")) {
    if (/^\s*([#;]|$)/.test(line) || /^\[.*\]$/.test(line)) continue;
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    assert.ok(m, `${rel}: not Key=value: ${line}`);
    out.push([m[1], m[2]]);
  }
  return out;
}
export const unitValue = (rel: string, key: string): string | undefined =>
  unitEntries(rel).find(([k]) => k === key)?.[1];
/** `Environment=NAME=value` lines of a unit. */
export function unitEnvironment(rel: string): Record<string, string> {
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
export type YamlValue = string | number | boolean | null | YamlValue[] | {
  [key: string]: YamlValue;
};
/** A parsed mapping. */
export type YamlMap = { [key: string]: YamlValue };

/**
 * Every non-empty document of a multi-document YAML text. YAML 1.1, as Kubernetes' reader
 * (go-yaml) uses; any parse error (duplicate keys included) fails the test with its line.
 */
export function parseYamlDocuments(source: string): YamlValue[] {
  return parseAllDocuments(source, { version: "1.1" }).flatMap((doc) => {
    if (doc.errors.length > 0) throw doc.errors[0];
    const value = doc.toJS() as YamlValue;
    return value === null ? [] : [value];
  });
}

// Helpers over the parsed documents.
export const asMap = (v: YamlValue | undefined, what: string): YamlMap => {
  assert.ok(v !== null && typeof v === "object" && !Array.isArray(v), `${what}: not a mapping`);
  return v as YamlMap;
};
export const asList = (v: YamlValue | undefined, what: string): YamlValue[] => {
  assert.ok(Array.isArray(v), `${what}: not a list`);
  return v;
};
export const asString = (v: YamlValue | undefined, what: string): string => {
  assert.equal(typeof v, "string", `${what}: not a scalar`);
  return v as string;
};
/** Follow a path of keys (list indexes as digits); undefined when any step is missing. */
export function at(v: YamlValue | undefined, ...path: string[]): YamlValue | undefined {
  let cur = v;
  for (const key of path) {
    if (Array.isArray(cur)) cur = /^\d+$/.test(key) ? cur[Number(key)] : undefined;
    else if (cur !== null && cur !== undefined && typeof cur === "object") cur = cur[key];
    else return undefined;
  }
  return cur;
}

export interface K8sObject {
  file: string;
  kind: string;
  name: string;
  doc: YamlMap;
}

export const K8S_DIR = "infra/k8s/";
export const k8sFiles = listDir(K8S_DIR).filter((f) => f.endsWith(".yaml"));
export const k8sObjects: K8sObject[] = k8sFiles.filter((f) => f !== "kustomization.yaml").flatMap((
  f,
) =>
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
export const ofKind = (kind: string) => k8sObjects.filter((o) => o.kind === kind);
export const deployments = ofKind("Deployment");
export const routerDeployment = deployments.find((d) => d.file === "router.yaml");
export const workerDeployments = deployments.filter((d) => /^worker-.*\.yaml$/.test(d.file));

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: YamlMap;
}

export function podSpec(o: K8sObject): YamlMap {
  return asMap(at(o.doc, "spec", "template", "spec"), `${o.file} pod spec`);
}
export function containers(o: K8sObject): YamlMap[] {
  return asList(podSpec(o).containers, `${o.file} containers`).map((c) => asMap(c, o.file));
}
export function envOf(container: YamlMap, what: string): EnvVar[] {
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
export function resolvedEnv(o: K8sObject, container: YamlMap): Record<string, string> {
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

export const WORKER_UNIT = "infra/systemd/svc-worker.service";
export const ROUTER_UNIT = "infra/systemd/svc-router.service";
export const WORKER_ENV_FILE = "infra/systemd/worker.env.example";
export const ROUTER_ENV_FILE = "infra/systemd/router.env.example";

/** A unit's environment: EnvironmentFile= entries override Environment= ones. */
export function serviceEnv(unit: string, file: string): Record<string, string> {
  return { ...unitEnvironment(unit), ...envFile(file) };
}

/** The environment each deployment file gives a component, by file. */
export function workerEnvironments(): [string, Record<string, string>][] {
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
export function routerEnvironments(): [string, Record<string, string>][] {
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
export const settingsOnly = (env: Record<string, string>) =>
  Object.keys(env).filter((k) => IS_SETTING_NAME.test(k));

// ------------------------------------------------------------------------------------------
