/** Facts about the machine and software that produced the numbers. */
import { fileURLToPath } from "node:url";
import type { MachineInfo, ThreadChoice } from "./results.ts";

/** Collect cores, CPU model, OS, Deno/V8/onnxruntime-node versions and the load average. */
export async function machineInfo(
  loadAvgStart: number[],
  threads: ThreadChoice,
): Promise<MachineInfo> {
  return {
    cores: navigator.hardwareConcurrency,
    cpuModel: await cpuModel(),
    os: `${Deno.build.os} ${Deno.osRelease()} ${Deno.build.arch}`,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    onnxruntimeNode: await packageVersion("onnxruntime-node"),
    loadAvgStart,
    loadAvgEnd: loadAvg(),
    threads,
  };
}

/** 1/5/15-minute load averages, or [] where the platform has none. */
export function loadAvg(): number[] {
  try {
    return Deno.loadavg();
  } catch {
    return [];
  }
}

/** The first `model name` of /proc/cpuinfo ("unknown" elsewhere). */
export function cpuModelOf(cpuinfo: string): string {
  const m = /^model name\s*:\s*(.+)$/m.exec(cpuinfo);
  return m ? m[1].trim() : "unknown";
}

/** /proc/cpuinfo through `cat`: Deno only lets a process read /proc files with --allow-all. */
async function cpuModel(): Promise<string> {
  try {
    const out = await new Deno.Command("cat", { args: ["/proc/cpuinfo"], stderr: "null" }).output();
    return cpuModelOf(new TextDecoder().decode(out.stdout));
  } catch {
    return "unknown";
  }
}

async function packageVersion(name: string): Promise<string> {
  const path = fileURLToPath(new URL(`../../node_modules/${name}/package.json`, import.meta.url));
  try {
    return (JSON.parse(await Deno.readTextFile(path)) as { version: string }).version;
  } catch {
    return "unknown";
  }
}
