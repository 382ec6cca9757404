/** The worker's own live page at GET `/` (fed by /ws/status; no build step, no assets). */
import type { Hono } from "hono";
import { WORKER_DASHBOARD_HTML } from "./page.ts";

/** Serve the worker dashboard at `/`. */
export function mountWorkerDashboard(app: Hono): void {
  app.get("/", () =>
    new Response(WORKER_DASHBOARD_HTML, {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-cache",
        // Everything is inline; forbid anything else (no third-party requests, no framing).
        "content-security-policy":
          "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
      },
    }));
}
