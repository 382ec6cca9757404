/** Facts about a process (worker or router) reported in `server` of the status message. */
import { userInfo } from "node:os";
import { VERSION } from "../version.ts";
import type { ServerInfo } from "../schemas/status.ts";

/** Facts about the process that do not change while it runs. */
export interface ServerFacts {
  version: string;
  startedAtMs: number;
  user: string;
  workingDir: string;
  pid: number;
}

/** The `server` field of a status message at `nowMs`. */
export function serverInfo(facts: ServerFacts, nowMs: number): ServerInfo {
  return {
    version: facts.version,
    uptime_seconds: Math.max(0, Math.floor((nowMs - facts.startedAtMs) / 1000)),
    user: facts.user,
    working_dir: facts.workingDir,
    pid: facts.pid,
  };
}

/** The user the process runs as: the OS account, else $USER/$LOGNAME, else `unknown`. */
function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    // No sys permission or no passwd entry (containers with arbitrary uids).
  }
  try {
    return Deno.env.get("USER") ?? Deno.env.get("LOGNAME") ?? "unknown";
  } catch {
    return "unknown";
  }
}

/** Working directory, or empty when it was removed or may not be read. */
function workingDir(): string {
  try {
    return Deno.cwd();
  } catch {
    return "";
  }
}

/** Read the process facts once (they do not change while it runs). */
export function readServerFacts(startedAtMs: number): ServerFacts {
  return {
    version: VERSION,
    startedAtMs,
    user: currentUser(),
    workingDir: workingDir(),
    pid: Deno.pid,
  };
}
