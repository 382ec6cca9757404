/**
 * The fleet page in headless Chromium against a real test cluster (router + 2 workers): it
 * renders the workers with their models, states and request rate, and updates live when a
 * worker leaves (killed). The worker's own page renders from /ws/status. Skipped, with the
 * reason, when Debian's chromium or playwright-core is not installed.
 */
import assert from "node:assert/strict";
import { browserUnavailable, launchBrowser, type Page } from "./helpers/browser.ts";
import {
  fleetEnv,
  type Service,
  startRouterProcess,
  startWorkerProcess,
} from "./helpers/process.ts";
import { encode, items } from "./helpers/traffic.ts";
import { waitFor } from "../helpers/wait.ts";

const skipReason = await browserUnavailable();
if (skipReason) console.warn(`dashboard browser test skipped: ${skipReason}`);

const MODEL = "fixture/dense";

/** The bit of the DOM the in-page predicates use (Deno's type checker has no DOM library). */
interface MiniDocument {
  querySelector(sel: string): { textContent: string | null } | null;
  querySelectorAll(sel: string): ArrayLike<{ dataset: Record<string, string | undefined> }>;
}

/** Wait (in the page) until a selector's text matches `re`. */
async function waitForText(page: Page, selector: string, re: RegExp, timeout = 10_000) {
  await page.waitForFunction(
    ({ selector, source, flags }) => {
      const e = (globalThis as unknown as { document: MiniDocument }).document
        .querySelector(selector);
      return !!e && new RegExp(source, flags).test(e.textContent ?? "");
    },
    { selector, source: re.source, flags: re.flags },
    { timeout, polling: 100 },
  );
}

/** Requests every 50 ms through the router until `stop` is set. */
async function trafficUntil(router: string, stop: { done: boolean }): Promise<void> {
  const headers = { "x-svc-machine-profile": "cpu" };
  while (!stop.done) {
    await encode(router, MODEL, { items: items(1) }, headers).catch(() => {});
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test({
  name: "dashboard (browser): fleet page shows the workers live and drops one that leaves",
  ignore: skipReason !== undefined,
  sanitizeResources: false, // playwright's pipes to the browser outlive individual awaits
  sanitizeOps: false,
  async fn() {
    const router = await startRouterProcess();
    const workers: Service[] = [];
    let browser;
    try {
      const [w1, w2] = await Promise.all([
        startWorkerProcess({ ...fleetEnv(router.url, "dash-w1"), SVC_PRELOAD_MODELS: MODEL }),
        startWorkerProcess(fleetEnv(router.url, "dash-w2")),
      ]);
      workers.push(w1, w2);
      await waitFor(async () => {
        const h = await (await fetch(`${router.url}/health`)).json();
        return h.worker_count === 2;
      }, "both workers registered");

      browser = await launchBrowser();
      const page = await browser.newPage();
      const outside: string[] = [];
      const problems: string[] = [];
      page.on("request", (r) => {
        if (!r.url().startsWith(router.url) && !r.url().startsWith(w1.url)) outside.push(r.url());
      });
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(m.text());
      });
      page.on("pageerror", (e) => problems.push(String(e)));

      await page.goto(`${router.url}/`);
      await waitForText(page, "[data-testid=connection]", /live/);
      await waitForText(page, "[data-testid=worker-count]", /^2$/);
      await waitForText(page, 'tr[data-worker-id="dash-w1"]', /fixture\/dense · loaded/);
      await waitForText(page, 'tr[data-worker-id="dash-w2"]', /serving/);
      await waitForText(page, "[data-testid=pools]", /cpu\s*default\s*2\s*2/);
      await waitForText(page, "[data-testid=fleet-status]", /healthy/);

      // Live request rate: traffic through the router shows up within a few frames.
      const stop = { done: false };
      const traffic = trafficUntil(router.url, stop);
      try {
        await waitForText(page, "#rate", /^(?!0\.0$)\d+\.\d$/, 10_000);
      } finally {
        stop.done = true;
        await traffic;
      }

      // A worker leaves (killed, no goodbye): its row disappears, the count drops.
      await w2.proc.stop();
      await waitForText(page, "[data-testid=worker-count]", /^1$/, 10_000);
      const rows = await page.evaluate(() =>
        Array.from(
          (globalThis as unknown as { document: MiniDocument }).document
            .querySelectorAll("tr[data-worker-id]"),
          (r) => r.dataset.workerId,
        )
      );
      assert.deepEqual(rows, ["dash-w1"]);

      // The worker's own page, from its /ws/status stream.
      await page.goto(`${w1.url}/`);
      await waitForText(page, "[data-testid=connection]", /live/);
      await waitForText(page, `tr[data-model="${MODEL}"]`, /loaded/);
      assert.match((await page.textContent("#gpu")) ?? "", /cpu/);

      assert.deepEqual(outside, [], "the pages load nothing from elsewhere");
      assert.deepEqual(problems, [], "no console errors (CSP violations, script errors)");
    } finally {
      await browser?.close();
      for (const w of workers) await w.proc.stop();
      await router.proc.stop();
    }
  },
});
