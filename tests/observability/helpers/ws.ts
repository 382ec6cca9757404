/** WebSocket helpers for the status-stream tests. */

/** A client that records every text frame with its arrival time. */
export interface FrameRecorder {
  socket: WebSocket;
  frames: { at: number; data: string }[];
  /** Resolves once open (rejects on error or after `timeoutMs`). */
  opened: Promise<void>;
  /** Close and wait (bounded) for the close event. */
  close(): Promise<void>;
}

/** Connect to `url` and record its frames. */
export function recordFrames(url: string, timeoutMs = 10_000): FrameRecorder {
  const socket = new WebSocket(url);
  const frames: { at: number; data: string }[] = [];
  let closed = false;
  const closedP = new Promise<void>((r) =>
    socket.addEventListener("close", () => {
      closed = true;
      r();
    })
  );
  const opened = new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no open within ${timeoutMs} ms`)), timeoutMs);
    socket.addEventListener("open", () => {
      clearTimeout(t);
      resolve();
    });
    socket.addEventListener("error", () => {
      clearTimeout(t);
      reject(new Error(`cannot connect to ${url}`));
    });
  });
  opened.catch(() => {});
  socket.addEventListener("message", (e) => {
    frames.push({ at: performance.now(), data: String(e.data) });
  });
  return {
    socket,
    frames,
    opened,
    async close() {
      if (!closed) socket.close();
      let t: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([closedP, new Promise((r) => t = setTimeout(r, 2000))]);
      clearTimeout(t);
    },
  };
}

/** `http://h:p` → `ws://h:p` + path. */
export function wsUrl(httpUrl: string, path: string): string {
  return httpUrl.replace(/^http/, "ws") + path;
}
