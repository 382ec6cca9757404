/**
 * The images as far as they run here: the router image's npm packages against `deno info`, and
 * the images' health checks run for real against a server on 127.0.0.1.
 */
import assert from "node:assert/strict";
import {
  dockerAssignments,
  dockerfile,
  execForm,
  readRepoFile,
  ROOT_PATH,
  ROUTER_DOCKERFILE,
  WORKER_DOCKERFILE,
} from "../../infra/dockerfile.ts";

Deno.test("infra: the router image carries exactly the npm packages the router loads", async () => {
  const arg = dockerAssignments(dockerfile(ROUTER_DOCKERFILE), "ARG").ROUTER_NPM_PACKAGES;
  assert.ok(arg, "ROUTER_NPM_PACKAGES");
  const listed = arg.split(/\s+/).filter(Boolean).sort();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "router/main.ts"],
    cwd: ROOT_PATH,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string }[];
  };
  const loaded = new Set<string>();
  for (const { specifier } of info.modules) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(specifier);
    if (m) loaded.add(m[1]);
    assert.ok(!specifier.startsWith("npm:"), `unexpected npm: specifier ${specifier}`);
  }
  // What the image copies must include each loaded package's dependencies, transitively:
  // `deno info` does not follow CommonJS require() (prom-client → tdigest → bintrees).
  const needed = new Set(loaded);
  for (const p of needed) {
    const deps = JSON.parse(readRepoFile(`node_modules/${p}/package.json`)).dependencies ?? {};
    for (const dep of Object.keys(deps)) needed.add(dep);
  }
  assert.deepEqual(listed, [...needed].sort(), "ROUTER_NPM_PACKAGES vs deno info router/main.ts");
});

/** Serve `status` on a free loopback port; returns the port and a stopper. */
function statusServer(status: () => number): { port: number; stop: () => Promise<void> } {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) =>
      new URL(req.url).pathname === "/healthz"
        ? new Response("{}", { status: status() })
        : new Response(null, { status: 404 }),
  );
  return { port: server.addr.port, stop: () => server.shutdown() };
}

async function healthCheckExit(argv: string[], port: number): Promise<number> {
  const exe = argv[0] === "deno" ? Deno.execPath() : argv[0];
  const out = await new Deno.Command(exe, {
    args: argv.slice(1),
    env: { SVC_PORT: String(port), NO_COLOR: "1" },
    cwd: ROOT_PATH,
    stdout: "null",
    stderr: "null",
  }).output();
  return out.code;
}

function hasNode(): boolean {
  try {
    return new Deno.Command("node", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

Deno.test({
  name: "infra: the images' health checks pass on 200 and fail on 503 or no server",
  ignore: !hasNode(),
  fn: async () => {
    for (const rel of [WORKER_DOCKERFILE, ROUTER_DOCKERFILE]) {
      const hc = dockerfile(rel).find((i) => i.op === "HEALTHCHECK");
      assert.ok(hc);
      const argv = execForm(rel, hc.args.slice(hc.args.indexOf("CMD ") + 4));
      let status = 200;
      const { port, stop } = statusServer(() => status);
      try {
        assert.equal(await healthCheckExit(argv, port), 0, `${rel}: healthy`);
        status = 503;
        assert.notEqual(await healthCheckExit(argv, port), 0, `${rel}: 503`);
      } finally {
        await stop();
      }
      assert.notEqual(await healthCheckExit(argv, port), 0, `${rel}: nothing listening`);
    }
  },
});
