/** Writing results.json and chart.svg, and the one-screen summary printed at the end. */
import { join } from "node:path";
import type { BenchResults } from "./results.ts";
import { formatNumber, renderChart } from "./svg.ts";

/** JSON with numbers rounded to 4 significant decimals and NaN/Infinity as null. */
export function resultsJson(r: BenchResults): string {
  return JSON.stringify(
    r,
    (_k, v) => typeof v === "number" ? (Number.isFinite(v) ? Math.round(v * 1e4) / 1e4 : null) : v,
    2,
  ) + "\n";
}

/**
 * Write `results.json` and `chart.svg` into `dir` (created when missing), then, when `format`,
 * run `deno fmt` on them: the repository's `deno fmt --check` covers docs/ (SVG included), so
 * committed output must already be in its canonical layout (bench/results/ is excluded from fmt).
 */
export async function writeReport(
  dir: string,
  r: BenchResults,
  format: boolean,
): Promise<string[]> {
  await Deno.mkdir(dir, { recursive: true });
  const files = [join(dir, "results.json"), join(dir, "chart.svg")];
  await Deno.writeTextFile(files[0], resultsJson(r));
  await Deno.writeTextFile(files[1], renderChart(r));
  if (!format) return files;
  const fmt = await new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--quiet", ...files],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!fmt.success) {
    console.error(`deno fmt on the report failed: ${new TextDecoder().decode(fmt.stderr)}`);
  }
  return files;
}

/** Plain-text summary: the machine, one line per target and per scenario. */
export function summaryText(r: BenchResults): string {
  const m = r.machine;
  const perRound = m.threads.rawThreadsPerRound.map((t) => t === 0 ? "default" : t).join(", ");
  const lines = [
    `machine: ${m.cpuModel}, ${m.cores} cores; ORT intra-op threads: worker ${m.threads.worker} ` +
    `(its default), raw ceiling the fastest of ORT default/1/…/${m.cores} each round ` +
    `(won: ${perRound}); load average ` +
    `${m.loadAvgStart.join(" ")} → ${m.loadAvgEnd.join(" ")}`,
    "targets:",
  ];
  for (const t of r.targets) {
    const unit = t.unit === "ms" ? "ms" : t.unit === "share" ? "share" : "";
    const verdict = t.pass === null ? "not measured" : t.pass ? "PASS" : "FAIL";
    lines.push(
      `  ${t.id.padEnd(18)} ${formatNumber(t.value, unit).padStart(9)}  ` +
        `(${t.comparison} ${formatNumber(t.target, unit)})  ${verdict}` +
        (t.perRound.length > 1
          ? `  rounds: ${t.perRound.map((v) => formatNumber(v)).join(", ")}`
          : "") +
        (t.value === null && t.note ? `  ${t.note}` : ""),
    );
  }
  lines.push("scenarios (medians):");
  for (const s of r.scenarios) {
    if (!s.measured) {
      lines.push(`  ${s.id.padEnd(22)} not measured${s.note ? `: ${s.note}` : ""}`);
      continue;
    }
    const m = s.median;
    lines.push(
      `  ${s.id.padEnd(22)} ${formatNumber(m.tokensPerS).padStart(7)} tok/s ` +
        `${formatNumber(m.requestsPerS).padStart(7)} req/s  p50 ${formatNumber(m.p50Ms, "ms")}  ` +
        `p99 ${formatNumber(m.p99Ms, "ms")}`,
    );
  }
  const d = r.diagnostics;
  const us = (v: number | null | undefined) => v == null ? "–" : `${Math.round(v)} µs`;
  lines.push(
    `CPU per concurrency-1 request: worker main thread ${
      us(d.workerC1MainThreadCpuUsPerRequest)
    }, router process ${us(d.routerC1ProcessCpuUsPerRequest)}`,
  );
  const ms = (v: number | null | undefined) => v == null ? "–" : `${v.toFixed(2)} ms`;
  lines.push(
    `floors at concurrency 1: a bare server with one inference thread adds ${
      ms(d.floorC1OverRawP50Ms)
    } to a raw run (the worker ${ms(d.workerC1OverFloorP50Ms)} more, paired ${
      ms(d.workerC1OverFloorPairedP50Ms)
    }); a bare proxy adds ${ms(d.floorProxyAddedP50PairedMs)} (the router ${
      ms(d.routerOverFloorProxyP50Ms)
    } more)`,
  );
  return lines.join("\n");
}
