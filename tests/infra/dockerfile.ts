/** Reading the images' Dockerfiles as Docker does (tests of the deployment files). */
import assert from "node:assert/strict";

/** The repository root, as a path. */
export const ROOT_PATH: string = decodeURIComponent(new URL("../../", import.meta.url).pathname);
/** The worker's and the router's image definitions, relative to the repository root. */
export const WORKER_DOCKERFILE = "infra/docker/worker.Dockerfile";
export const ROUTER_DOCKERFILE = "infra/docker/router.Dockerfile";

/** A repository file's text. */
export const readRepoFile = (rel: string): string => Deno.readTextFileSync(`${ROOT_PATH}${rel}`);

/** One Dockerfile instruction: its keyword (upper case) and the rest of its line. */
export interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile instructions, continuation lines joined, comments dropped. */
export function dockerfile(rel: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = "";
  for (const raw of readRepoFile(rel).split("\n")) {
    if (/^\s*#/.test(raw) || (pending === "" && raw.trim() === "")) continue;
    const line = raw.replace(/\s+$/, "");
    if (line.endsWith("\\")) {
      pending += line.slice(0, -1) + " ";
      continue;
    }
    const full = (pending + line).trim();
    pending = "";
    const m = /^([A-Za-z]+)\s+([\s\S]*)$/.exec(full);
    assert.ok(m, `${rel}: cannot read instruction: ${full}`);
    out.push({ op: m[1].toUpperCase(), args: m[2].trim() });
  }
  assert.equal(pending, "", `${rel}: dangling line continuation`);
  return out;
}

/** `NAME=value` pairs of a Dockerfile's ENV (or ARG) instructions, `${ARG}` left as written. */
export function dockerAssignments(ins: Instruction[], op: "ENV" | "ARG"): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of ins.filter((i) => i.op === op)) {
    for (const m of i.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) {
      out[m[1]] = m[2].replace(/^"(.*)"$/, "$1");
    }
  }
  return out;
}

/** The exec-form (JSON array) arguments of an instruction; fails if it is not valid JSON. */
export function execForm(rel: string, args: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    // Docker would silently fall back to the shell form, which a distroless image cannot run.
    assert.fail(`${rel}: not a valid JSON exec form: ${args}`);
  }
  assert.ok(Array.isArray(parsed) && parsed.every((a) => typeof a === "string"), args);
  return parsed as string[];
}
