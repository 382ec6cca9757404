/**
 * Real worker and router processes for the process-level tests: `deno run -P=worker
 * worker/main.ts` / `-P=router router/main.ts` on 127.0.0.1 with SVC_PORT=0; the bound port is
 * read from the "listening" log line (JSON logs), so there is no free-port race.
 */
import { fileURLToPath } from "node:url";
import { ensureFixtures } from "@svc/fixture-models";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/** A spawned process with its output captured. */
export interface Proc {
  child: Deno.ChildProcess;
  /** Everything written so far, stdout and stderr interleaved by arrival. */
  output(): string;
  /** Everything written to stdout so far (the log lines). */
  stdout(): string;
  /** Resolves with the first JSON log line for which `match` is true. */
  waitForLog(
    what: string,
    match: (l: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** Exit status (resolves once the process ended). */
  status: Promise<Deno.CommandStatus>;
  /** Whether the process is still running (its exit has not been seen). */
  running(): boolean;
  /** Send a signal (ignored when the process already ended). */
  signal(sig: Deno.Signal): void;
  /** SIGKILL if still running, then wait for the exit and the output pipes. */
  stop(): Promise<void>;
}

/** Spawn `deno <args>` in the repository with `env` added to the current environment. */
export function spawnDeno(args: string[], env: Record<string, string>): Proc {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: REPO,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  let out = "";
  const listeners = new Set<() => void>();
  const pump = async (stream: ReadableStream<Uint8Array>, isStdout: boolean) => {
    const dec = new TextDecoder();
    for await (const chunk of stream) {
      const s = dec.decode(chunk, { stream: true });
      text += s;
      if (isStdout) out += s;
      for (const l of listeners) l();
    }
  };
  const pumps = Promise.all([pump(child.stdout, true), pump(child.stderr, false)]);
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    for (const l of listeners) l();
    return s;
  });
  const jsonLines = (): Record<string, unknown>[] =>
    text.split("\n").flatMap((line) => {
      if (!line.startsWith("{")) return [];
      try {
        return [JSON.parse(line)];
      } catch {
        return [];
      }
    });
  return {
    child,
    output: () => text,
    stdout: () => out,
    status,
    waitForLog(what, match, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = jsonLines().find(match);
          if (hit) done(() => resolve(hit));
          else if (exited) done(() => reject(new Error(`process exited before: ${what}\n${text}`)));
        };
        const timer = setTimeout(
          () => done(() => reject(new Error(`timed out waiting for: ${what}\n${text}`))),
          timeoutMs,
        );
        const done = (f: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          f();
        };
        listeners.add(check);
        check();
      });
    },
    running: () => !exited,
    signal(sig) {
      if (exited) return;
      try {
        child.kill(sig);
      } catch {
        // It ended in between.
      }
    },
    async stop() {
      if (!exited) this.signal("SIGKILL");
      await status;
      await pumps;
    },
  };
}

/** A running worker or router process and its base URL. */
export interface Service {
  proc: Proc;
  url: string;
}

/** The listening port from a "… listening" log line. */
function portOf(line: Record<string, unknown>): number {
  return Number(line.port);
}

/** Start a worker process over the test fixtures; resolves once it is ready. */
export async function startWorkerProcess(env: Record<string, string> = {}): Promise<Service> {
  const fx = await ensureFixtures();
  const cacheDir = await Deno.makeTempDir({ prefix: "svc-obs-cache-" });
  const proc = spawnDeno(["run", "-P=worker", "worker/main.ts"], {
    SVC_MODELS_DIR: `${fx}/models`,
    SVC_CLUSTER_CACHE: `${fx}/cache`,
    SVC_CACHE_DIR: cacheDir,
    SVC_HUB_DISABLED: "1",
    SVC_MODEL_FILTER: "fixture/*",
    SVC_HOST: "127.0.0.1",
    SVC_PORT: "0",
    SVC_DEVICE: "cpu",
    SVC_INTRA_OP_THREADS: "1",
    SVC_LOG_JSON: "1",
    ...env,
  });
  // The cache directory goes with the process.
  proc.status.finally(() => Deno.remove(cacheDir, { recursive: true }).catch(() => {}));
  try {
    const listening = await proc.waitForLog(
      "worker listening",
      (l) => l.msg === "worker listening",
    );
    await proc.waitForLog("worker ready", (l) => l.msg === "worker ready", 60_000);
    return { proc, url: `http://127.0.0.1:${portOf(listening)}` };
  } catch (err) {
    await proc.stop();
    throw err;
  }
}

/** Worker token shared by the test routers and workers (the router wants 16+ characters). */
export const FLEET_TOKEN = "obs-test-worker-token-5f1c2a9e";

/** Start a router process; resolves once it listens. */
export async function startRouterProcess(env: Record<string, string> = {}): Promise<Service> {
  const proc = spawnDeno(["run", "-P=router", "router/main.ts"], {
    SVC_HOST: "127.0.0.1",
    SVC_PORT: "0",
    SVC_WORKER_TOKEN: FLEET_TOKEN,
    SVC_HEARTBEAT_INTERVAL_MS: "200",
    SVC_STATUS_INTERVAL_MS: "200",
    SVC_WORKER_STALE_MS: "10000", // a busy machine must not make a live worker look silent
    // Pools without workers answer 202 at once (the start-up hold has tests of its own).
    SVC_STARTUP_HOLD_MS: "0",
    SVC_LOG_JSON: "1",
    ...env,
  });
  try {
    const line = await proc.waitForLog("router listening", (l) => l.msg === "router listening");
    return { proc, url: `http://127.0.0.1:${portOf(line)}` };
  } catch (err) {
    await proc.stop();
    throw err;
  }
}

/** Env that makes a worker dial `routerUrl` with the test token. */
export function fleetEnv(routerUrl: string, workerId: string): Record<string, string> {
  return {
    SVC_ROUTER_URL: routerUrl,
    SVC_WORKER_TOKEN: FLEET_TOKEN,
    SVC_WORKER_ID: workerId,
    SVC_MACHINE_PROFILE: "cpu",
  };
}
