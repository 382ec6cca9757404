/** The router's live fleet page and its status stream. */
export {
  CLUSTER_STATUS_INTERVAL_MS,
  CLUSTER_STATUS_PATH,
  type DashboardDeps,
  mountDashboard,
} from "./mount.ts";
export type { ClusterPool, ClusterStatus, ClusterWorker } from "./cluster_status.ts";
