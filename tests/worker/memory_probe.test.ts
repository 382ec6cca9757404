import assert from "node:assert/strict";
import { cgroupMemoryProbe, memoryProbeFor, systemMemoryProbe } from "#worker/registry/memory.ts";
import { chooseDevice } from "#worker/bootstrap.ts";
import { loadWorkerSettings } from "@svc/worker/settings";

Deno.test("memory probe: a cgroup v2 limit is the budget; no limit falls back to system RAM", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const files = { max: `${dir}/memory.max`, current: `${dir}/memory.current` };
    await Deno.writeTextFile(files.max, "1000\n");
    await Deno.writeTextFile(files.current, "250\n");
    const probe = cgroupMemoryProbe(files)!;
    assert.deepEqual(probe(), { usedPercent: 25, usedBytes: 250, totalBytes: 1000 });
    await Deno.writeTextFile(files.current, "900\n");
    assert.equal(probe().usedPercent, 90, "read afresh each time");
    await Deno.writeTextFile(files.max, "max\n");
    assert.equal(cgroupMemoryProbe(files), undefined);
    assert.equal(memoryProbeFor(files), systemMemoryProbe);
    assert.equal(memoryProbeFor({ max: `${dir}/none`, current: `${dir}/none` }), systemMemoryProbe);
    const sys = systemMemoryProbe();
    assert.ok(sys.totalBytes > 0 && sys.usedPercent > 0 && sys.usedPercent <= 100);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("device: auto picks CUDA only when a GPU was detected", () => {
  const auto = loadWorkerSettings({}).device;
  assert.equal(chooseDevice(auto, 0), "cpu");
  assert.equal(chooseDevice(auto, 2), "cuda");
  assert.equal(chooseDevice(loadWorkerSettings({ SVC_DEVICE: "cpu" }).device, 4), "cpu");
  assert.equal(chooseDevice(loadWorkerSettings({ SVC_DEVICE: "cuda" }).device, 0), "cuda");
});
