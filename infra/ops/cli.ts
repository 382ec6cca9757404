/**
 * What the ops tasks (`deno task status|models|drain`) share: the command line (router URL, API
 * key, --json, --help), one bounded call to the router, and plain-text tables.
 */
import { parseArgs } from "node:util";

/** Options every ops task takes. */
export interface OpsOptions {
  /** Router base URL without a trailing slash. */
  url: string;
  apiKey: string | undefined;
  json: boolean;
  help: boolean;
  positionals: string[];
}

/** Bound on one call to the router. */
export const OPS_TIMEOUT_MS = 10_000;

/** The options part of every task's --help. */
export const COMMON_HELP = `options:
  --url URL       the router (default: the first of SVC_ROUTER_URL, else
                  http://127.0.0.1:$SVC_PORT, port 8080)
  --api-key KEY   the router's key: an admin key (SVC_ADMIN_KEYS) for status and drain, a client
                  key (SVC_API_KEYS) is enough for models (default: the first of SVC_ADMIN_KEYS,
                  else of SVC_API_KEYS, when set in this environment)
  --json          print the router's JSON answer instead of a table
  --help          this text`;

/** Parse argv with the common options; throws with a short message on anything unknown. */
export function parseOpsArgs(argv: readonly string[], env: Record<string, string | undefined>) {
  const { values, positionals } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      url: { type: "string" },
      "api-key": { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  const port = env.SVC_PORT?.trim() || "8080";
  const first = (list: string | undefined) =>
    list?.split(",").map((k) => k.trim()).find((k) => k.length > 0);
  // An empty SVC_ROUTER_URL is unset (a template's `SVC_ROUTER_URL=`); of a worker's list of
  // router instances the first (every instance answers the same).
  const url = (values.url ?? (first(env.SVC_ROUTER_URL) || `http://127.0.0.1:${port}`))
    .replace(/^ws(s?):/, "http$1:").replace(/\/+$/, "");
  const firstKey = first(env.SVC_ADMIN_KEYS) ?? first(env.SVC_API_KEYS);
  return {
    url,
    apiKey: values["api-key"] ?? firstKey,
    json: values.json,
    help: values.help,
    positionals,
  } satisfies OpsOptions;
}

/** A failure to show as one line (exit code 1), never a stack trace. */
export class OpsError extends Error {}

/** One call to the router: its JSON body on 2xx, else an OpsError with the router's message. */
export async function callRouter(
  opts: OpsOptions,
  method: "GET" | "POST",
  path: string,
): Promise<unknown> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  let res: Response;
  try {
    res = await fetch(opts.url + path, {
      method,
      headers,
      signal: AbortSignal.timeout(OPS_TIMEOUT_MS),
    });
  } catch (err) {
    throw new OpsError(
      `cannot reach the router at ${opts.url} (${(err as Error).message}); ` +
        "is it running? set --url or SVC_ROUTER_URL",
    );
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new OpsError(`${method} ${path}: ${res.status}, not JSON: ${text.slice(0, 200)}`);
  }
  if (!res.ok) {
    const d = (body as { detail?: { code?: string; message?: string } }).detail;
    // The router's own answer says what to do when it already names the option.
    const hint = d?.message?.includes("--api-key")
      ? ""
      : res.status === 401
      ? " (pass --api-key or set SVC_API_KEYS)"
      : res.status === 403
      ? " (pass --api-key with an admin key, or set SVC_ADMIN_KEYS)"
      : "";
    throw new OpsError(
      `${method} ${path}: ${res.status} ${d?.code ?? ""} ${d?.message ?? text}${hint}`.trim(),
    );
  }
  return body;
}

/** Columns padded to their widest cell, two spaces apart; the first row is the header. */
export function table(rows: readonly (readonly (string | number)[])[]): string {
  const cells = rows.map((r) => r.map(String));
  const widths: number[] = [];
  for (const r of cells) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return cells.map((r) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd()).join("\n");
}

/** Bytes as MB with one decimal ("-" for unknown). */
export function mb(bytes: number): string {
  return bytes > 0 ? `${(bytes / 1e6).toFixed(1)} MB` : "-";
}

/**
 * Run a task: parse, print --help, run, and turn failures into one line on stderr. Returns the
 * exit code (0 ok, 1 failure, 2 bad command line).
 */
export async function runOpsTask(
  argv: readonly string[],
  help: string,
  run: (opts: OpsOptions) => Promise<string>,
  env: Record<string, string | undefined> = Deno.env.toObject(),
): Promise<number> {
  let opts: OpsOptions;
  try {
    opts = parseOpsArgs(argv, env);
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${help}`);
    return 2;
  }
  if (opts.help) {
    console.log(help);
    return 0;
  }
  try {
    console.log(await run(opts));
    return 0;
  } catch (err) {
    if (err instanceof OpsError) {
      console.error(err.message);
      return err instanceof UsageError ? 2 : 1;
    }
    throw err;
  }
}

/** A command-line mistake found by a task itself (exit code 2). */
export class UsageError extends OpsError {}
