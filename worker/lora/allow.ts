/**
 * `SVC_LORA_ALLOW`: the adapter repositories clients may name, as `owner` (every repository of
 * that owner) or `owner/name` entries, compared without regard to case as the hub does. Unset:
 * any valid repository id. A client that names another adapter gets a 400 before anything is
 * fetched: with the allow-list, nobody can make the worker download an adapter they uploaded.
 */
import { loraIdProblem } from "./lora_id.ts";

/** Why `entry` cannot be an entry of `SVC_LORA_ALLOW` (a phrase), or undefined. */
export function loraAllowProblem(entry: string): string | undefined {
  const asRepo = entry.includes("/") ? entry : `${entry}/x`;
  return loraIdProblem(asRepo) === undefined
    ? undefined
    : "entries must be hub owners (`org`) or repositories (`org/name`)";
}

/** The check of an allow-list; undefined when the list is empty (every adapter allowed). */
export function loraAllowList(entries: readonly string[]): ((id: string) => boolean) | undefined {
  if (entries.length === 0) return undefined;
  const repos = new Set(entries.filter((e) => e.includes("/")).map((e) => e.toLowerCase()));
  const owners = new Set(entries.filter((e) => !e.includes("/")).map((e) => e.toLowerCase()));
  return (id) => {
    const lower = id.toLowerCase();
    return repos.has(lower) || owners.has(lower.slice(0, lower.indexOf("/")));
  };
}
