import assert from "node:assert/strict";
import { machineProfileOfGpus, normaliseGpuType, parseNvidiaSmiCsv } from "@svc/worker/gpu";

const GIB = 1024 ** 3;

Deno.test("gpu: normaliseGpuType maps real nvidia-smi names", () => {
  const cases: [string, string, number?][] = [
    ["NVIDIA H100 80GB HBM3", "h100"],
    ["NVIDIA H100 PCIe", "h100"],
    ["NVIDIA H100 NVL", "h100"],
    ["NVIDIA H200", "h200"],
    ["NVIDIA GH200 480GB", "gh200"],
    ["NVIDIA B200", "b200"],
    ["NVIDIA A100-SXM4-80GB", "a100-80gb"],
    ["NVIDIA A100 80GB PCIe", "a100-80gb"],
    ["NVIDIA A100-SXM4-40GB", "a100-40gb"],
    ["NVIDIA A100-PCIE-40GB", "a100-40gb"],
    ["NVIDIA A100-SXM4", "a100-80gb", 81920 * 1024 * 1024],
    ["NVIDIA A100-SXM4", "a100-40gb", 40 * GIB],
    ["NVIDIA A100-SXM4", "a100"],
    ["NVIDIA A10G", "a10g"],
    ["NVIDIA A10", "a10"],
    ["NVIDIA L4", "l4"],
    ["NVIDIA L40S", "l40s"],
    ["NVIDIA L40", "l40"],
    ["Tesla T4", "t4"],
    ["Tesla V100-SXM2-16GB", "v100"],
    ["NVIDIA GeForce RTX 4090", "rtx4090"],
    ["NVIDIA GeForce RTX 3080 Ti", "rtx3080ti"],
    ["NVIDIA RTX A6000", "rtx-a6000"],
    ["Some Future GPU X9", "some-future-gpu-x9"],
    ["NVIDIA", "unknown-gpu"],
  ];
  for (const [name, want, mem] of cases) assert.equal(normaliseGpuType(name, mem), want, name);
});

Deno.test("gpu: parses noheader,nounits output", () => {
  const out =
    "0, NVIDIA H100 80GB HBM3, 35, 1024, 81559, 41\n1, NVIDIA H100 80GB HBM3, 0, 4, 81559, 30\n";
  const g = parseNvidiaSmiCsv(out);
  assert.equal(g.length, 2);
  assert.deepEqual(g[0], {
    index: 0,
    name: "NVIDIA H100 80GB HBM3",
    gpu_type: "h100",
    utilization_percent: 35,
    memory_used_bytes: 1024 * 1024 * 1024,
    memory_total_bytes: 81559 * 1024 * 1024,
    temperature_c: 41,
  });
  assert.equal(machineProfileOfGpus(g), "h100");
});

Deno.test("gpu: parses the default csv format with header, units and N/A", () => {
  const out = [
    "index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB], temperature.gpu",
    "0, NVIDIA A10G, 12 %, 300 MiB, 23028 MiB, 33",
    "1, NVIDIA A100-SXM4-40GB, [N/A], 0 MiB, 40960 MiB, [Not Supported]",
    "garbage line",
    "",
  ].join("\r\n");
  const g = parseNvidiaSmiCsv(out);
  assert.equal(g.length, 2);
  assert.equal(g[0].gpu_type, "a10g");
  assert.equal(g[0].utilization_percent, 12);
  assert.equal(g[0].memory_used_bytes, 300 * 1024 * 1024);
  assert.equal(g[1].gpu_type, "a100-40gb");
  assert.equal(g[1].utilization_percent, null);
  assert.equal(g[1].temperature_c, null);
});

Deno.test("gpu: no GPUs means the cpu profile", () => {
  assert.deepEqual(parseNvidiaSmiCsv(""), []);
  assert.equal(machineProfileOfGpus([]), "cpu");
});
