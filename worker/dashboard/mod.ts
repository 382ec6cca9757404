/** The worker's own live page at GET `/`. */
export { mountWorkerDashboard } from "./route.ts";
export { WORKER_DASHBOARD_HTML } from "./page.ts";
