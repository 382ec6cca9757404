/** The worker's link to the router (fleet membership). */
export { startFleetLink } from "./start.ts";
export type { FleetLink, WorkerStatusSnapshot } from "./link.ts";
