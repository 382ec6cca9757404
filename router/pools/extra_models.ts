/**
 * `SVC_EXTRA_MODELS`: model → bundle pairs the router is told by its operator, for models that
 * only workers know (their `SVC_MODELS_DIR`). A router with no file system (Deno Deploy) reads
 * them from the environment, so a pool scaled to zero answers 202 for them even before any
 * worker has reported them. Two spellings: `org/a=default,org/b=extract`, or a JSON object
 * `{"org/a":"default"}`.
 */
import { isSafeModelId } from "@svc/shared/catalog/schema";
import { SLUG_RE } from "@svc/shared/fleet/protocol";

/** Most pairs the setting may hold (it is read into memory whole). */
export const MAX_EXTRA_MODELS = 10_000;

/** Parsed pairs, or the problem with the text (phrased to follow the variable's name). */
export type ExtraModels =
  | { ok: true; bundles: ReadonlyMap<string, string> }
  | { ok: false; problem: string };

/** Parse the setting's text (undefined: no pairs). */
export function parseExtraModels(text: string | undefined): ExtraModels {
  if (text === undefined) return { ok: true, bundles: new Map() };
  let pairs: [string, unknown][];
  if (text.startsWith("{")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { ok: false, problem: "is not a valid JSON object" };
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      return { ok: false, problem: "must be a JSON object of model id → bundle" };
    }
    pairs = Object.entries(parsed);
  } else {
    pairs = [];
    for (const entry of text.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
      const eq = entry.indexOf("=");
      if (eq < 0) return { ok: false, problem: `entries must be model=bundle, got "${entry}"` };
      pairs.push([entry.slice(0, eq).trim(), entry.slice(eq + 1).trim()]);
    }
  }
  if (pairs.length > MAX_EXTRA_MODELS) {
    return { ok: false, problem: `holds more than ${MAX_EXTRA_MODELS} models` };
  }
  const bundles = new Map<string, string>();
  for (const [model, bundle] of pairs) {
    if (!isSafeModelId(model)) {
      return { ok: false, problem: `names an invalid model id "${model.slice(0, 100)}"` };
    }
    if (typeof bundle !== "string" || !SLUG_RE.test(bundle)) {
      return { ok: false, problem: `gives model "${model}" a bundle that is not a slug` };
    }
    bundles.set(model, bundle);
  }
  return { ok: true, bundles };
}
