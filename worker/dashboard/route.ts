/** The worker's own live page at GET `/` (fed by /ws/status; no build step, no assets). */
import type { Hono } from "hono";
import { WORKER_DASHBOARD_HTML } from "./page.ts";
import { dashboardResponse } from "@svc/shared/dashboard";

/** Serve the worker dashboard at `/`. */
export function mountWorkerDashboard(app: Hono): void {
  app.get("/", () => dashboardResponse(WORKER_DASHBOARD_HTML));
}
