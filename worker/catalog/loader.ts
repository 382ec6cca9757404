/** The worker's catalog: built-in entries plus `SVC_MODELS_DIR` files, minus `SVC_MODEL_FILTER`. */
import { BUILTIN_CATALOG } from "@svc/shared/catalog";
import { type ModelConfig, parseModelConfig } from "@svc/shared/catalog/schema";

/** Read every `*.json` model config of a directory (sorted by file name). */
export async function readModelsDir(dir: string): Promise<ModelConfig[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && e.name.endsWith(".json")) names.push(e.name);
  }
  names.sort();
  const out: ModelConfig[] = [];
  for (const name of names) {
    const path = `${dir}/${name}`;
    let raw: unknown;
    try {
      raw = JSON.parse(await Deno.readTextFile(path));
    } catch (err) {
      throw new Error(`cannot read model config ${path}: ${(err as Error).message}`);
    }
    out.push(parseModelConfig(raw, path));
  }
  return out;
}

/** Turn filter patterns (`org/name`, `org/*`) into a predicate on model ids. */
export function modelFilter(patterns: string[] | undefined): (id: string) => boolean {
  if (!patterns || patterns.length === 0) return () => true;
  const res = patterns.map((p) =>
    new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`)
  );
  return (id) => res.some((r) => r.test(id));
}

/** Built-in catalog, then directory entries (which replace built-ins of the same id), filtered. */
export async function loadCatalog(opts: {
  modelsDir?: string;
  filter?: string[];
  builtin?: readonly ModelConfig[];
}): Promise<Map<string, ModelConfig>> {
  const byId = new Map<string, ModelConfig>();
  for (const c of opts.builtin ?? BUILTIN_CATALOG) byId.set(c.id, c);
  if (opts.modelsDir) { for (const c of await readModelsDir(opts.modelsDir)) byId.set(c.id, c); }
  const keep = modelFilter(opts.filter);
  for (const id of [...byId.keys()]) if (!keep(id)) byId.delete(id);
  return byId;
}
