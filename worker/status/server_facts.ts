/** Facts about the worker process reported in `server` of the status message. */
import { userInfo } from "node:os";
import { VERSION } from "@svc/shared/version";
import type { ServerFacts } from "./message.ts";

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
