/** Shared pieces of the hardening tests (issue 16): raw sockets, process memory, probe latency. */
import net from "node:net";

/** Resident memory of process `pid`, in MiB (read with `ps`, which every test machine has). */
export async function rssMiB(pid: number): Promise<number> {
  const out = await new Deno.Command("ps", { args: ["-o", "rss=", "-p", String(pid)] }).output();
  return Number(new TextDecoder().decode(out.stdout).trim()) / 1024;
}

/** A raw client socket: what it received, and when (ms after open) it was closed. */
export interface RawSocket {
  socket: net.Socket;
  received(): string;
  /** Resolves with the milliseconds from connect to close. */
  closed: Promise<number>;
}

/** Connect to `url`'s port and write `text` (request line, headers and any body bytes). */
export function rawRequest(url: string, text: string | Uint8Array): RawSocket {
  const { hostname, port } = new URL(url);
  const started = performance.now();
  let got = "";
  const socket = net.connect(Number(port), hostname, () => socket.write(text));
  socket.on("data", (d: Uint8Array) => got += new TextDecoder().decode(d));
  socket.on("error", () => {});
  const closed = new Promise<number>((resolve) =>
    socket.on("close", () => resolve(performance.now() - started))
  );
  return { socket, received: () => got, closed };
}

/** Milliseconds one GET of `url` took (its body read). */
export async function timeGet(url: string): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  await res.body?.cancel();
  return { ms: performance.now() - t0, status: res.status };
}

/** Resolve `p` or fail after `ms`, naming `what`. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
