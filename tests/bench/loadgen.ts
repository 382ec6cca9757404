/** Parent side of the load-generator process: send a job, wait for its result. */
import type { LoadJob, LoadResult } from "./load_types.ts";
import { type Proc, spawnDeno } from "./procs.ts";

/** A running load-generator process. */
export interface LoadGen {
  /** Run one job in the child; rejects when the child dies or exceeds the job's bounds. */
  run(job: LoadJob): Promise<LoadResult>;
  /** Kill the child (also fine after a failure). */
  close(): Promise<void>;
}

/** Slack beyond a job's own bounds before the parent gives up on the child. */
const JOB_SLACK_MS = 30_000;

/** Start the child with network access to loopback only. */
export function startLoadGen(): LoadGen {
  const proc: Proc = spawnDeno(
    ["--allow-net=127.0.0.1", "tests/bench/loadgen_main.ts"],
    {},
    true,
  );
  const writer = proc.child.stdin.getWriter();
  const lines = readLines(proc.child.stdout);
  const encoder = new TextEncoder();
  return {
    async run(job) {
      await writer.write(encoder.encode(JSON.stringify(job) + "\n"));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const limit = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`load generator gave no answer in time\n${proc.tail()}`)),
          job.maxMs + job.timeoutMs + JOB_SLACK_MS,
        );
      });
      try {
        const line = await Promise.race([lines.next(), limit]);
        if (line.done) throw new Error(`load generator exited\n${proc.tail()}`);
        return JSON.parse(line.value) as LoadResult;
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      await writer.close().catch(() => {});
      await proc.kill();
    },
  };
}

async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of stream) {
    buffered += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      yield buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
    }
  }
}
