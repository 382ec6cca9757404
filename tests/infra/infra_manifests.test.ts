/**
 * Consistency of the deployment files with the code they deploy (infra_helpers.ts reads them):
 * KEDA queries against the router's metrics, names, labels and selectors, kustomization,
 * Dockerfiles, image users, and the manifest reader itself.
 */
import assert from "node:assert/strict";
import { VERSION } from "@svc/shared/version";
import { createRouterMetrics } from "#router/metrics/router_metrics.ts";
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
  envOf,
  exists,
  K8S_DIR,
  k8sFiles,
  K8sObject,
  k8sObjects,
  ofKind,
  parseYamlDocuments,
  podSpec,
  read,
  resolvedEnv,
  ROUTER_ENV_FILE,
  ROUTER_UNIT,
  routerDeployment,
  serviceEnv,
  unitValue,
  WORKER_ENV_FILE,
  WORKER_UNIT,
  workerDeployments,
  YamlMap,
} from "./infra_helpers.ts";

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
    assert.ok(from.some((s) => selects(s, podLabels(routerDeployment!))), "router admitted");
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
