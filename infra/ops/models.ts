/** `deno task models`: the catalog with live states (GET /v1/models), one model per line. */
import { callRouter, COMMON_HELP, type OpsOptions, runOpsTask, table } from "./cli.ts";

const HELP = `usage: npx deno task models [options]

Every model the router can route (GET /v1/models): family, bundle, state (available, loading,
loaded, failed...) and what it outputs. Listing never loads a model.

${COMMON_HELP}`;

/** The fields of a /v1/models entry this task shows. */
interface ListedModel {
  name: string;
  family?: string;
  bundle?: string;
  state?: string;
  loaded: boolean;
  outputs?: string[];
  last_error?: { message?: string } | string | null;
}

/** The table of a /v1/models body: loaded first, then by name. */
export function formatModels(models: readonly ListedModel[]): string {
  const rank = (m: ListedModel) => (m.loaded ? 0 : m.state === "failed" ? 1 : 2);
  const sorted = [...models].sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
  const loaded = models.filter((m) => m.loaded).length;
  return table([
    ["MODEL", "FAMILY", "BUNDLE", "STATE", "OUTPUTS"],
    ...sorted.map((m) => [
      m.name,
      m.family ?? "-",
      m.bundle ?? "-",
      m.state ?? (m.loaded ? "loaded" : "-"),
      (m.outputs ?? []).join(","),
    ]),
  ]) + `\n${models.length} models, ${loaded} loaded`;
}

/** Fetch /v1/models and format it (or pass its JSON through). */
export async function models(opts: OpsOptions): Promise<string> {
  const body = await callRouter(opts, "GET", "/v1/models") as { models: ListedModel[] };
  return opts.json ? JSON.stringify(body, null, 2) : formatModels(body.models);
}

if (import.meta.main) Deno.exit(await runOpsTask(Deno.args, HELP, models));
