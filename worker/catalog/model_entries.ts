/**
 * `SVC_MODELS`: models to serve besides the catalog, each configured from its own files. An entry
 * is a hub repository `org/name` or `org/name@REVISION` (served under that id, through the weight
 * store), or `ID=DIRECTORY` (a local directory laid out like a hub repository, read in place and
 * served under ID). Either may end with `;key=value` settings that say what its files do not
 * (`acme/e5=/srv/e5;pooling=mean`), spelled like the catalog descriptor's fields.
 */
import { isAbsolute, resolve } from "node:path";
import { FAMILIES, isFamily, POOLINGS } from "@svc/shared/catalog/schema";
import { SLUG_RE } from "@svc/shared/fleet/protocol";
import { isSafeRepo, isSafeRevision } from "../weights/paths.ts";

/** Most entries one worker takes from the setting. */
export const MAX_MODEL_ENTRIES = 256;

/** Settings an entry may give explicitly (descriptor field → value). */
export type EntryOptions = Record<string, string | number | boolean>;

/** One parsed entry. */
export type ModelEntry =
  | {
    kind: "hub";
    /** Served id: the repository. */
    id: string;
    repo: string;
    revision: string;
    options: EntryOptions;
  }
  | {
    kind: "directory";
    id: string;
    /** Absolute path of the directory. */
    path: string;
    options: EntryOptions;
  };

/** How each entry setting is read: a phrase saying what it must be, or the value. */
const OPTION_READERS: Record<string, (v: string) => string | number | boolean | undefined> = {
  family: (v) => isFamily(v) ? v : undefined,
  pooling: (v) => (POOLINGS as readonly string[]).includes(v) ? v : undefined,
  normalize: (v) =>
    v === "true" || v === "1" ? true : v === "false" || v === "0" ? false : undefined,
  max_sequence_length: (v) =>
    /^[1-9]\d{0,5}$/.test(v) && Number(v) <= 131072 ? Number(v) : undefined,
  bundle: (v) => SLUG_RE.test(v) ? v : undefined,
  default_input_type: (v) => v === "query" || v === "document" ? v : undefined,
};

const OPTION_RULES: Record<string, string> = {
  family: `one of ${FAMILIES.join(", ")}`,
  pooling: `one of ${POOLINGS.join(", ")}`,
  normalize: "true or false",
  max_sequence_length: "an integer from 1 to 131072",
  bundle: "a lower-case slug",
  default_input_type: "query or document",
};

/** Keys an entry may set after `;`. */
export const ENTRY_OPTION_KEYS: readonly string[] = Object.keys(OPTION_READERS);

/** Why one entry's text is unusable (a phrase), or undefined when it parses. */
export function modelEntryProblem(text: string): string | undefined {
  const r = parseEntry(text, "/");
  return typeof r === "string" ? r : undefined;
}

/**
 * Parse the setting's entries (already split on commas); relative directories are resolved
 * against `baseDir` (where the user ran the command: npm and deno task set INIT_CWD to it).
 * Throws with the first problem.
 */
export function parseModelEntries(entries: readonly string[], baseDir: string): ModelEntry[] {
  if (entries.length > MAX_MODEL_ENTRIES) {
    throw new Error(`holds more than ${MAX_MODEL_ENTRIES} entries`);
  }
  const out: ModelEntry[] = [];
  const ids = new Set<string>();
  for (const text of entries) {
    const r = parseEntry(text, baseDir);
    if (typeof r === "string") throw new Error(`${r}, got "${text}"`);
    if (ids.has(r.id)) throw new Error(`names model ${r.id} twice`);
    ids.add(r.id);
    out.push(r);
  }
  return out;
}

function parseEntry(text: string, baseDir: string): ModelEntry | string {
  const [head, ...settings] = text.split(";").map((s) => s.trim());
  const options: EntryOptions = {};
  for (const s of settings) {
    if (s === "") continue;
    const eq = s.indexOf("=");
    const key = eq < 0 ? s : s.slice(0, eq).trim();
    const reader = OPTION_READERS[key];
    if (!reader) {
      return `entry settings are key=value with key one of ${ENTRY_OPTION_KEYS.join(", ")}` +
        ` ("${key.slice(0, 40)}" is not one)`;
    }
    const value = eq < 0 ? undefined : reader(s.slice(eq + 1).trim());
    if (value === undefined) return `entry setting ${key} must be ${OPTION_RULES[key]}`;
    options[key] = value;
  }
  const eq = head.indexOf("=");
  if (eq >= 0) {
    const id = head.slice(0, eq).trim();
    const dir = head.slice(eq + 1).trim();
    if (!isSafeRepo(id)) {
      return "entries ID=DIRECTORY need an id of the form org/name (letters, digits, '.', '_'," +
        " '-'; no '..')";
    }
    if (dir === "") return `entry ${id}= names no directory`;
    if (dir.includes("\0")) return `entry ${id} has an invalid directory`;
    return { kind: "directory", id, path: isAbsolute(dir) ? dir : resolve(baseDir, dir), options };
  }
  const at = head.indexOf("@");
  const repo = at < 0 ? head : head.slice(0, at);
  const revision = at < 0 ? "main" : head.slice(at + 1);
  if (!isSafeRepo(repo)) {
    return head.startsWith("/") || head.startsWith(".")
      ? "entries are org/name[@revision] or ID=DIRECTORY: give a directory an id, e.g." +
        " acme/my-model=DIRECTORY"
      : "entries are a hub repository org/name[@revision] (no URL, path or '..') or ID=DIRECTORY";
  }
  if (!isSafeRevision(revision)) {
    return `entry ${repo} has an invalid revision (a branch, tag or commit hash)`;
  }
  return { kind: "hub", id: repo, repo, revision, options };
}
