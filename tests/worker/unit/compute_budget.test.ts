/**
 * The worker's compute budget: CPU counts from cgroup quotas and the affinity mask, the smallest
 * limit winning, and the gate that makes runs of different models take turns on the cores.
 */
import assert from "node:assert/strict";
import {
  affinityCpus,
  cgroupV1Cpus,
  cgroupV2Cpus,
  ComputeGate,
  computeThreads,
  usableCpus,
} from "#worker/inference/compute_budget.ts";

Deno.test("cgroup v2 cpu.max: no quota, whole and fractional quotas", () => {
  assert.equal(cgroupV2Cpus("max 100000\n"), null);
  assert.equal(cgroupV2Cpus("200000 100000\n"), 2);
  assert.equal(cgroupV2Cpus("150000 100000"), 1);
  assert.equal(cgroupV2Cpus("50000 100000"), 1);
  assert.equal(cgroupV2Cpus("garbage"), null);
});

Deno.test("cgroup v1 quota: -1 is none", () => {
  assert.equal(cgroupV1Cpus("-1\n", "100000\n"), null);
  assert.equal(cgroupV1Cpus("400000\n", "100000\n"), 4);
});

Deno.test("affinity: ranges and single CPUs of Cpus_allowed_list", () => {
  const status = (list: string) => `Name:\tdeno\nCpus_allowed:\tff\nCpus_allowed_list:\t${list}\n`;
  assert.equal(affinityCpus(status("0-1")), 2);
  assert.equal(affinityCpus(status("0-3,8,10-11")), 7);
  assert.equal(affinityCpus(status("5")), 1);
  assert.equal(affinityCpus(status("3-1")), null);
  assert.equal(affinityCpus("Name:\tdeno\n"), null);
});

Deno.test("usable CPUs: the narrowest of runtime, affinity and cgroup quota", () => {
  const files = (m: Record<string, string>) => (p: string) => m[p] ?? null;
  const status = "Cpus_allowed_list:\t0-3\n";
  assert.deepEqual(usableCpus(files({}), 8), { cpus: 8, source: "runtime" });
  assert.deepEqual(usableCpus(files({ "/proc/self/status": status }), 8), {
    cpus: 4,
    source: "affinity",
  });
  assert.deepEqual(
    usableCpus(
      files({ "/proc/self/status": status, "/sys/fs/cgroup/cpu.max": "200000 100000" }),
      8,
    ),
    { cpus: 2, source: "cgroup" },
  );
  // cgroup v1 files are read only when there is no v2 cpu.max.
  assert.deepEqual(
    usableCpus(
      files({
        "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "100000",
        "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000",
      }),
      8,
    ),
    { cpus: 1, source: "cgroup" },
  );
  // A quota larger than the machine does not raise the count.
  assert.deepEqual(usableCpus(files({ "/sys/fs/cgroup/cpu.max": "1600000 100000" }), 8), {
    cpus: 8,
    source: "runtime",
  });
});

Deno.test("computeThreads: a positive setting wins, 0 detects", () => {
  const detect = () => ({ cpus: 3, source: "affinity" as const });
  assert.deepEqual(computeThreads(5, detect), { cpus: 5, source: "setting" });
  assert.deepEqual(computeThreads(0, detect), { cpus: 3, source: "affinity" });
  // On this machine detection gives at least one CPU and never more than the runtime reports.
  const here = computeThreads(0);
  assert.ok(here.cpus >= 1 && here.cpus <= navigator.hardwareConcurrency, JSON.stringify(here));
});

Deno.test("compute gate: a second holder starts only after the first releases", async () => {
  const gate = new ComputeGate(undefined, 1);
  const other = new ComputeGate(gate.cell, 2);
  const order: string[] = [];
  let releaseFirst!: () => void;
  const firstHeld = new Promise<void>((r) => releaseFirst = r);
  const first = gate.hold(async () => {
    order.push("first start");
    await firstHeld;
    order.push("first end");
  });
  const second = other.hold(() => {
    order.push("second start");
    return Promise.resolve();
  });
  // Let the second holder reach its wait; it must not have started.
  for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(order, ["first start"]);
  releaseFirst();
  await Promise.all([first, second]);
  assert.deepEqual(order, ["first start", "first end", "second start"]);
  assert.equal(Atomics.load(gate.cell, 0), 0);
});

Deno.test("compute gate: released when the run throws", async () => {
  const gate = new ComputeGate();
  await assert.rejects(gate.hold(() => Promise.reject(new Error("boom"))), /boom/);
  assert.equal(Atomics.load(gate.cell, 0), 0);
  assert.equal(await gate.hold(() => Promise.resolve(7)), 7);
});

Deno.test("compute gate: a dead holder's gate is freed by its id only", async () => {
  const a = new ComputeGate(undefined, 3);
  const b = new ComputeGate(a.cell, 4);
  await a.acquire();
  assert.equal(Atomics.load(a.cell, 0), 3);
  ComputeGate.releaseFor(a.cell, 4); // not the holder: no effect
  assert.equal(Atomics.load(a.cell, 0), 3);
  let started = false;
  const waiting = b.hold(() => {
    started = true;
    return Promise.resolve();
  });
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
  assert.equal(started, false);
  ComputeGate.releaseFor(a.cell, 3); // the main thread frees a terminated thread's hold
  await waiting;
  assert.equal(started, true);
  await b.acquire();
  a.release(); // a late release of the freed thread cannot free someone else's hold
  assert.equal(Atomics.load(a.cell, 0), 4);
  b.release();
  assert.equal(Atomics.load(a.cell, 0), 0);
  assert.throws(() => new ComputeGate(a.cell, 0), RangeError);
});
