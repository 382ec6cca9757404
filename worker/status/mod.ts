/** The worker's status stream (`/ws/status`) and the message it sends. */
export {
  mountStatusStream,
  STATUS_INTERVAL_MS,
  STATUS_PATH,
  type StatusStream,
  type StatusStreamOptions,
} from "./stream.ts";
export { buildStatusMessage, type WorkerStatusMessage } from "./message.ts";
export { GpuReadings } from "./gpu_readings.ts";
