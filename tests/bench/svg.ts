// Own code: one small static chart; chart packages need a DOM or bring a large dependency.
/**
 * docs/bench/chart.svg, written by hand (no libraries): one bar per target against its bound,
 * then median throughput per scenario and the latency figures. Self-contained: inline styles,
 * no fonts or scripts to fetch.
 */
import type { BenchResults, ScenarioResult, TargetResult } from "./results.ts";

const WIDTH = 760;
const LABEL_X = 16;
const BAR_X = 300;
const BAR_W = 300;
const VALUE_X = BAR_X + BAR_W + 12;
const ROW_H = 40;
const COLOURS = { pass: "#2e7d32", fail: "#c62828", none: "#9e9e9e", bar: "#1565c0" };

/** Escape text for SVG content and attribute values. */
export function escapeXml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(
    /"/g,
    "&quot;",
  );
}

/** A number for people: 3 significant digits below 100, whole numbers above. */
export function formatNumber(x: number | null, unit = ""): string {
  if (x === null || !Number.isFinite(x)) return "–";
  const s = Math.abs(x) >= 100 ? Math.round(x).toLocaleString("en-US") : x.toPrecision(3);
  return unit === "share" ? `${(x * 100).toFixed(1)}%` : unit ? `${s} ${unit}` : s;
}

function text(x: number, y: number, s: string, attrs = ""): string {
  return `<text x="${x}" y="${y}" ${attrs}>${escapeXml(s)}</text>`;
}

const SYMBOLS: Record<TargetResult["comparison"], string> = { ">=": "≥", "<=": "≤", "<": "<" };

function boundText(t: TargetResult): string {
  const unit = t.unit === "ms" ? "ms" : t.unit === "share" ? "share" : "";
  const rounds = t.perRound.length > 1 ? ` · ${t.perRound.length} rounds` : "";
  return `target ${SYMBOLS[t.comparison]} ${formatNumber(t.target, unit)}${rounds}`;
}

/** One target row: bar of the value, dashed line at the bound, verdict on the right. */
function targetRow(t: TargetResult, y: number): string {
  const parts = [text(LABEL_X, y + 16, t.label, 'font-size="12"')];
  if (t.value === null) {
    parts.push(
      text(BAR_X, y + 16, t.note ?? "not measured", `font-size="11" fill="${COLOURS.none}"`),
    );
    return parts.join("");
  }
  // Each row has its own scale so that a 2 ms bound and a 0.9 ratio are both readable.
  const max = Math.max(t.value, t.target) * 1.25 || 1;
  const w = Math.max(0, Math.min(1, t.value / max)) * BAR_W;
  const tx = BAR_X + (t.target / max) * BAR_W;
  const colour = t.pass ? COLOURS.pass : COLOURS.fail;
  const unit = t.unit === "ms" ? "ms" : t.unit === "share" ? "share" : "";
  parts.push(
    `<rect x="${BAR_X}" y="${y + 4}" width="${BAR_W}" height="16" fill="#f0f0f0"/>`,
    `<rect x="${BAR_X}" y="${y + 4}" width="${w.toFixed(1)}" height="16" fill="${colour}"/>`,
    `<line x1="${tx.toFixed(1)}" y1="${y}" x2="${tx.toFixed(1)}" y2="${y + 24}" ` +
      `stroke="#212121" stroke-width="2" stroke-dasharray="4 2"/>`,
    text(
      VALUE_X,
      y + 16,
      `${formatNumber(t.value, unit)} ${t.pass ? "✓" : "✗"}`,
      `font-size="12" font-weight="bold" fill="${colour}"`,
    ),
    text(LABEL_X, y + 30, boundText(t), `font-size="10" fill="#616161"`),
  );
  return parts.join("");
}

/** Horizontal throughput bars (median tokens/s) with requests/s alongside. */
function throughputRows(scenarios: ScenarioResult[], y0: number): { svg: string; height: number } {
  const rows = scenarios.filter((s) => s.median.tokensPerS !== null);
  const max = Math.max(1, ...rows.map((s) => s.median.tokensPerS ?? 0));
  const parts = rows.map((s, i) => {
    const y = y0 + i * 26;
    const tps = s.median.tokensPerS ?? 0;
    const w = (tps / max) * BAR_W;
    const rps = s.median.requestsPerS;
    return [
      text(LABEL_X, y + 13, s.id, 'font-size="12"'),
      `<rect x="${BAR_X}" y="${y + 2}" width="${w.toFixed(1)}" height="14" fill="${COLOURS.bar}"/>`,
      text(
        VALUE_X,
        y + 13,
        `${formatNumber(tps)} tok/s · ${formatNumber(rps)} req/s`,
        'font-size="11"',
      ),
    ].join("");
  });
  return { svg: parts.join(""), height: rows.length * 26 };
}

/** Latency lines (p50/p99) of every measured scenario that has them. */
function latencyRows(scenarios: ScenarioResult[], y0: number): { svg: string; height: number } {
  const rows = scenarios.filter((s) => s.median.p50Ms !== null);
  const parts = rows.map((s, i) =>
    text(
      LABEL_X,
      y0 + i * 18 + 12,
      `${s.id}: p50 ${formatNumber(s.median.p50Ms, "ms")} · p99 ${
        formatNumber(s.median.p99Ms, "ms")
      }`,
      'font-size="11"',
    )
  );
  return { svg: parts.join(""), height: rows.length * 18 };
}

/** The whole chart for a results file. */
export function renderChart(r: BenchResults): string {
  const m = r.machine;
  const head = [
    text(
      LABEL_X,
      24,
      `Benchmark: ${r.date.slice(0, 10)}${r.quick ? " (quick)" : ""}`,
      'font-size="16" font-weight="bold"',
    ),
    text(
      LABEL_X,
      42,
      `${m.cores} cores · ${m.cpuModel} · Deno ${m.deno} · onnxruntime-node ${m.onnxruntimeNode} · ` +
        `threads: worker ${m.threads.worker}, raw ${m.threads.raw || "default"} · load avg ${
          m.loadAvgStart.map((x) => x.toFixed(1)).join("/")
        }`,
      'font-size="11" fill="#616161"',
    ),
    text(
      LABEL_X,
      68,
      "Targets (median over rounds; dashed line = bound)",
      'font-size="13" font-weight="bold"',
    ),
  ];
  let y = 78;
  const targets = r.targets.map((t, i) => targetRow(t, y + i * ROW_H));
  y += r.targets.length * ROW_H + 16;
  const tpTitle = text(
    LABEL_X,
    y,
    "Throughput (median tokens/s)",
    'font-size="13" font-weight="bold"',
  );
  const tp = throughputRows(r.scenarios, y + 8);
  y += 8 + tp.height + 20;
  const latTitle = text(
    LABEL_X,
    y,
    "Latency per request (median of rounds)",
    'font-size="13" font-weight="bold"',
  );
  const lat = latencyRows(r.scenarios, y + 6);
  const height = y + 6 + lat.height + 16;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" ` +
    `viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...head,
    ...targets,
    tpTitle,
    tp.svg,
    latTitle,
    lat.svg,
    "</svg>",
    "",
  ].join("\n");
}
