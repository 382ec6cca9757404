/**
 * The request streams of a worker's connection, as the router opens them (connection transport,
 * shared/fleet/streams/): windows and caps from the settings, and a worker that breaks the
 * protocol closed, which fails its own streams only (502).
 */
import { CLOSE_CODES, type StreamGrant, type StreamOffer } from "@svc/shared/fleet/protocol";
import { MAX_STREAM_FRAME_BYTES, StreamMux } from "@svc/shared/fleet/streams/mux";
import type { StreamCaps } from "../settings.ts";
import type { FleetSocket } from "./options.ts";

/** Defaults of the stream caps (SVC_WORKER_MAX_STREAMS and the two window settings). */
export const DEFAULT_STREAM_CAPS: StreamCaps = {
  maxStreams: 1024,
  streamWindowBytes: 256 * 1024,
  connectionWindowBytes: 8 * 1024 * 1024,
};

/** What the router tells a worker it grants the connection transport to. */
export function streamGrant(caps: StreamCaps): StreamGrant {
  return {
    window: caps.streamWindowBytes,
    connection_window: caps.connectionWindowBytes,
    max_streams: caps.maxStreams,
  };
}

/** The streams over `socket`, within `caps` and the worker's `offer`. */
export function openStreams(
  socket: FleetSocket,
  offer: StreamOffer,
  caps: StreamCaps,
  onViolation: (reason: string) => void,
): StreamMux {
  let closing = false;
  return new StreamMux({
    role: "opener",
    receive: { stream: caps.streamWindowBytes, connection: caps.connectionWindowBytes },
    send: { stream: offer.window, connection: offer.connection_window },
    maxStreams: caps.maxStreams,
    maxFrameBytes: MAX_STREAM_FRAME_BYTES,
    sink: {
      send: (frame) => socket.send(frame),
      get bufferedAmount() {
        return socket.bufferedAmount ?? 0;
      },
    },
    onViolation,
    // The worker dials again at once after a going-away close of a registered socket.
    onIdsUsedUp: () => {
      if (closing) return;
      closing = true;
      try {
        socket.close(CLOSE_CODES.goingAway, "request stream ids used up: dial again");
      } catch {
        // Already closing.
      }
    },
  });
}
