/** The CPU line numeric tests put in their failure messages (tests/helpers/cpu_features.ts). */
import assert from "node:assert/strict";
import { cpuFeatures, INT8_FLAGS, int8FlagsOf } from "./cpu_features.ts";

Deno.test("int8FlagsOf: the flags that pick ONNX Runtime's int8 kernels, from /proc/cpuinfo", () => {
  const epyc = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\n" +
    "flags\t\t: fpu sse4_2 avx avx2 fma bmi2\nprocessor\t: 1\nflags\t\t: avx2\n";
  assert.deepEqual(int8FlagsOf(epyc), ["avx2"]);
  const xeon = "flags : avx2 avx512f avx512bw avx512_vnni amx_int8\n";
  assert.deepEqual(int8FlagsOf(xeon), ["avx2", "avx512f", "avx512_vnni", "amx_int8"]);
  assert.deepEqual(int8FlagsOf("flags : avx2 avx_vnni\n"), ["avx2", "avx_vnni"]);
  assert.deepEqual(int8FlagsOf("no flags line"), []);
  assert.ok(INT8_FLAGS.includes("avx512_vnni"));
});

Deno.test("cpuFeatures: one line naming the architecture and what it knows of the flags", () => {
  const line = cpuFeatures();
  assert.ok(line.startsWith(`${Deno.build.arch} `), line);
  assert.match(line, /; flags /);
});
