/**
 * 405 for a known path asked with a method it does not serve, found from the app's own routes
 * (so the answer cannot drift from them), with the `Allow` header HTTP asks for.
 */
import { errorResponse, ServiceError } from "../errors.ts";

/** A Hono route path (`/v1/models`, `/v1/encode/*`, `/x/:id`) as an anchored pattern. */
function pattern(path: string): RegExp {
  const body = path.split("/").map((part) =>
    part === "*"
      ? ".*"
      : part.startsWith(":")
      ? "[^/]+"
      : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")
  ).join("/");
  return new RegExp(`^${body}$`);
}

/** What is read of an app: its routes (a Hono app has them, whatever its environment type). */
export interface RoutedApp {
  readonly routes: readonly { method: string; path: string }[];
}

/** Methods the routes of `app` serve at `path` (HEAD wherever GET is); empty for unknown paths. */
export function allowedMethods(app: RoutedApp, path: string): string[] {
  const methods = new Set<string>();
  for (const r of app.routes) {
    if (r.method === "ALL" || methods.has(r.method)) continue;
    if (pattern(r.path).test(path)) methods.add(r.method);
  }
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods].sort();
}

/** The 405 answer for `method` at `path`, or undefined when the path is not one of ours. */
export function methodNotAllowed(
  app: RoutedApp,
  method: string,
  path: string,
): Response | undefined {
  const allowed = allowedMethods(app, path);
  if (allowed.length === 0 || allowed.includes(method)) return undefined;
  const shown = path.length > 200 ? `${path.slice(0, 200)}…` : path;
  return errorResponse(
    new ServiceError(
      "METHOD_NOT_ALLOWED",
      `${method} is not allowed on ${shown}; allowed: ${allowed.join(", ")}`,
    ),
    { allow: allowed.join(", ") },
  );
}
