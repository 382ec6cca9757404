/**
 * Real router and worker processes for the end-to-end tests: spawned with the same permission
 * sets as `deno task router` / `deno task worker`, bound to 127.0.0.1, their output captured
 * (to find the port they bound and to check what they log), always killed in `finally`.
 */
import { ensureFixtures } from "@svc/fixture-models";

/** Repository root (cwd of every child: deno.json and its permission sets live there). */
export const ROOT = new URL("../../", import.meta.url).pathname;

/** Worker token of the e2e fleet. */
export const E2E_TOKEN = "e2e-worker-token-9f8e7d6c5b4a3210";

/** A child process with captured output lines. */
export class Proc {
  readonly name: string;
  readonly child: Deno.ChildProcess;
  readonly lines: string[] = [];
  readonly status: Promise<Deno.CommandStatus>;
  /** Directories removed once the process has exited (its private caches). */
  readonly tempDirs: string[] = [];
  #waiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  #pumps: Promise<void>[];

  /** `command`: the program (default: this deno; the start tests run `npm`). */
  constructor(
    name: string,
    args: string[],
    env: Record<string, string>,
    command = Deno.execPath(),
  ) {
    this.name = name;
    this.child = new Deno.Command(command, {
      args,
      cwd: ROOT,
      env: { NO_COLOR: "1", ...env },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#pumps = [this.#pump(this.child.stdout), this.#pump(this.child.stderr)];
    this.status = this.child.status;
  }

  async #pump(stream: ReadableStream<Uint8Array>): Promise<void> {
    let buf = "";
    const dec = new TextDecoder();
    for await (const chunk of stream) {
      buf += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        this.#line(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
    }
    if (buf) this.#line(buf);
  }

  #line(line: string): void {
    this.lines.push(line);
    if (Deno.env.get("E2E_VERBOSE")) console.log(`[${this.name}] ${line}`);
    this.#waiters = this.#waiters.filter((w) => {
      const m = line.match(w.re);
      if (m) w.resolve(m);
      return !m;
    });
  }

  /** Resolve with the first output line (past or future) matching `re`; reject after `ms`. */
  waitForLine(re: RegExp, ms = 20_000): Promise<RegExpMatchArray> {
    for (const l of this.lines) {
      const m = l.match(re);
      if (m) return Promise.resolve(m);
    }
    return new Promise((resolve, reject) => {
      const entry = {
        re,
        resolve: (m: RegExpMatchArray) => {
          clearTimeout(t);
          resolve(m);
        },
      };
      const t = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== entry);
        reject(new Error(`${this.name}: no line matching ${re} within ${ms} ms\n${this.tail()}`));
      }, ms);
      this.#waiters.push(entry);
    });
  }

  /** Last lines of output, for failure messages. */
  tail(n = 30): string {
    return this.lines.slice(-n).join("\n");
  }

  /** Send a signal (ignored when the process is gone). */
  signal(sig: Deno.Signal): void {
    try {
      this.child.kill(sig);
    } catch {
      // already exited
    }
  }

  /** Stop: SIGTERM, then SIGKILL after `graceMs`; waits for exit and output. */
  async stop(graceMs = 5000): Promise<Deno.CommandStatus> {
    this.signal("SIGTERM");
    let t: ReturnType<typeof setTimeout> | undefined;
    const killed = new Promise<void>((r) => {
      t = setTimeout(() => {
        this.signal("SIGKILL");
        r();
      }, graceMs);
    });
    await Promise.race([this.status, killed]);
    clearTimeout(t);
    const st = await this.status;
    await Promise.all(this.#pumps);
    await this.#removeTempDirs();
    return st;
  }

  /** SIGKILL and wait. */
  async kill(): Promise<void> {
    this.signal("SIGKILL");
    await this.status;
    await Promise.all(this.#pumps);
    await this.#removeTempDirs();
  }

  async #removeTempDirs(): Promise<void> {
    for (const dir of this.tempDirs.splice(0)) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  }
}

/** Start a router process; resolves once it listens, with its URL. */
export async function startRouterProc(
  name: string,
  env: Record<string, string>,
  extraFlags: string[] = [],
): Promise<{ proc: Proc; url: string; port: number }> {
  const proc = new Proc(name, ["run", "-P=router", ...extraFlags, "router/main.ts"], {
    SVC_HOST: "127.0.0.1",
    SVC_PORT: "0",
    SVC_WORKER_TOKEN: E2E_TOKEN,
    // Pools without workers answer 202 at once (tests of the start-up hold set it).
    SVC_STARTUP_HOLD_MS: "0",
    ...env,
  });
  try {
    const m = await proc.waitForLine(/router listening .*port=(\d+)/);
    const port = Number(m[1]);
    return { proc, url: `http://127.0.0.1:${port}`, port };
  } catch (err) {
    await proc.kill();
    throw err;
  }
}

/** Start a worker process that dials `routerUrl` (it registers asynchronously). */
export async function startWorkerProc(
  name: string,
  routerUrl: string,
  env: Record<string, string> = {},
): Promise<Proc> {
  const fixtures = await ensureFixtures();
  const cacheDir = await Deno.makeTempDir({ prefix: `e2e-${name}-` });
  const proc = new Proc(name, ["run", "-P=worker", "worker/main.ts"], {
    SVC_HOST: "127.0.0.1",
    SVC_PORT: "0",
    SVC_MODELS_DIR: `${fixtures}/models`,
    SVC_CLUSTER_CACHE: `${fixtures}/cache`,
    SVC_CACHE_DIR: cacheDir,
    SVC_ROUTER_URL: routerUrl,
    SVC_WORKER_TOKEN: E2E_TOKEN,
    SVC_WORKER_ID: name,
    ...env,
  });
  proc.tempDirs.push(cacheDir);
  return proc;
}

/** The base URL of a worker process's own HTTP server (from its "worker listening" line). */
export async function listeningUrl(proc: Proc): Promise<string> {
  const port = (await proc.waitForLine(/worker listening .*port=(\d+)/, 60_000))[1];
  return `http://127.0.0.1:${port}`;
}

/** Stop every process, ignoring failures (for `finally`). */
export async function stopAll(procs: (Proc | undefined)[]): Promise<void> {
  await Promise.all(procs.map((p) => p?.stop().catch(() => {})));
}

/** GET a JSON document. */
export async function json(
  url: string,
  init?: RequestInit,
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text);
  } catch {
    body = { text };
  }
  return { status: res.status, headers: res.headers, body };
}

/** Ids of the workers in the router's /health (`apiKey`: a router with SVC_API_KEYS). */
export async function workerIds(routerUrl: string, apiKey?: string): Promise<string[]> {
  const headers: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  const h = await json(`${routerUrl}/health`, { headers });
  return ((h.body.workers ?? []) as { id: string }[]).map((w) => w.id).sort();
}

/** POST a JSON encode request through the router. */
export function encode(
  routerUrl: string,
  model: string,
  headers: Record<string, string>,
  texts = ["hello world"],
): Promise<Response> {
  return fetch(`${routerUrl}/v1/encode/${encodeURIComponent(model)}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: JSON.stringify({ items: texts.map((text, i) => ({ id: `i${i}`, text })) }),
    signal: AbortSignal.timeout(60_000),
  });
}

/** A metric sample's value from an exposition text (0 when absent). */
export function metricValue(text: string, series: string): number {
  for (const line of text.split("\n")) {
    if (line.startsWith(series + " ")) return Number(line.slice(series.length + 1));
  }
  return 0;
}
