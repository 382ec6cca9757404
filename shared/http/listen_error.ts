/**
 * Start-up failures of a listening socket as one line a person can act on (which port or
 * address, and the setting that chose it) instead of a stack trace. Works for Deno.serve's
 * errors and node:http's alike: both carry the POSIX code.
 */

/** Where a server tried to listen, and the settings that chose the address. */
export interface ListenTarget {
  /** What was starting ("router", "worker"). */
  what: string;
  host: string;
  port: number;
  /** Default `SVC_PORT`. */
  portSetting?: string;
  /** Default `SVC_HOST`. */
  hostSetting?: string;
}

/** The one-line explanation of a listen failure, or undefined when `err` is something else. */
export function listenFailureLine(err: unknown, target: ListenTarget): string | undefined {
  const t = { portSetting: "SVC_PORT", hostSetting: "SVC_HOST", ...target };
  const code = (err as { code?: unknown } | null)?.code;
  switch (code) {
    case "EADDRINUSE":
      return `${t.what}: port ${t.port} is already in use (${t.portSetting}); stop what holds ` +
        `it or choose another port, e.g. ${t.portSetting}=${t.port === 8080 ? 8081 : 8080}`;
    case "EACCES":
      return `${t.what}: not allowed to listen on port ${t.port} (${t.portSetting}); ports ` +
        "below 1024 need privileges, choose a higher one";
    case "EADDRNOTAVAIL":
      return `${t.what}: cannot listen on ${t.host} (${t.hostSetting}): no interface of this ` +
        "machine has that address";
    default:
      return undefined;
  }
}

/** Print the line for a listen failure and exit 2; anything else is rethrown. */
export function exitOnListenFailure(err: unknown, target: ListenTarget): never {
  const line = listenFailureLine(err, target);
  if (!line) throw err;
  console.error(line);
  Deno.exit(2);
}
