/**
 * The fleet page in headless Chromium against a real test cluster (router + 2 workers): it
 * renders the workers with their models, states and request rate, and updates live when a
 * worker leaves (killed). The worker's own page renders from /ws/status. Skipped, with the
 * reason, when Debian's chromium or playwright-core is not installed.
 */
import assert from "node:assert/strict";
import { browserUnavailable, launchBrowser, type Page } from "./browser.ts";
import {
  fleetEnv,
  type Service,
  startRouterProcess,
  startWorkerProcess,
} from "../../observability/helpers/process.ts";
import { encode, items } from "../../observability/helpers/traffic.ts";
import { waitFor } from "../../helpers/wait.ts";

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
  await waitForTextOnce(page, selector, re, timeout).catch(async (err) => {
    const now = await page.textContent(selector).catch(() => null);
    throw new Error(`${selector} never matched ${re} (it reads ${JSON.stringify(now)}): ${err}`);
  });
}

async function waitForTextOnce(page: Page, selector: string, re: RegExp, timeout: number) {
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
  async fn() {
    const router = await startRouterProcess();
    const workers: Service[] = [];
    let browser;
    try {
      const [w1, w2] = await Promise.all([
        // One worker reached over HTTP (its advertised URL is its page's link), one over its
        // own connection (no URL to link to).
        startWorkerProcess({
          ...fleetEnv(router.url, "dash-w1"),
          SVC_PRELOAD_MODELS: MODEL,
          SVC_WORKER_TRANSPORT: "http",
        }),
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
      // Each worker links to its own page.
      assert.equal(
        await page.getAttribute('tr[data-worker-id="dash-w1"] [data-testid=worker-link]', "href"),
        `${w1.url}/`,
      );

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

/** Chrome's own console lines for a refused handshake or check (expected while no key is set). */
const REFUSAL =
  /status of 40[13]|Unexpected response code: 40[13]|WebSocket connection to .* failed/;

Deno.test({
  name: "dashboard (browser): with API keys, the pages take a key into sessionStorage, never a URL",
  ignore: skipReason !== undefined,
  async fn() {
    const CLIENT_KEY = "dash-client-key-4f2a9c";
    // The fleet page's data is fleet detail: an admin key opens it, a client key does not.
    const KEY = "dash-admin-key-0c61d8e2";
    const WORKER_KEY = "dash-worker-key-7e1b03d5";
    const router = await startRouterProcess({
      SVC_API_KEYS: CLIENT_KEY,
      SVC_ADMIN_KEYS: KEY,
      SVC_WORKER_API_KEY: WORKER_KEY,
    });
    let worker: Service | undefined;
    let browser;
    try {
      worker = await startWorkerProcess({
        ...fleetEnv(router.url, "dash-key-w1"),
        SVC_WORKER_API_KEY: WORKER_KEY,
      });
      await waitFor(async () => {
        const h = await fetch(`${router.url}/health`, {
          headers: { authorization: `Bearer ${KEY}` },
        });
        return (await h.json()).worker_count === 1;
      }, "the worker registered");

      browser = await launchBrowser();
      const page = await browser.newPage();
      const urls: string[] = [];
      const problems: string[] = [];
      page.on("request", (r) => urls.push(r.url()));
      page.on("websocket", (ws) => urls.push(ws.url()));
      page.on("console", (m) => {
        if (m.type() === "error" && !REFUSAL.test(m.text())) problems.push(m.text());
      });
      page.on("pageerror", (e) => problems.push(String(e)));

      // No key yet: the page says so and shows no fleet.
      await page.goto(`${router.url}/`);
      await waitForText(page, "[data-testid=connection]", /key needed/);
      await waitForText(page, "#keymsg", /needs a key .*SVC_ADMIN_KEYS/);
      assert.equal(await page.textContent("[data-testid=worker-count]"), "–");
      // A wrong key is refused and forgotten.
      await page.fill("[data-testid=key-input]", "not-the-key-0000");
      await page.click("[data-testid=key-submit]");
      await waitForText(page, "#keymsg", /refused/);
      // A client key is a key, but not for this page: refused, with the server's reason.
      await page.fill("[data-testid=key-input]", CLIENT_KEY);
      await page.click("[data-testid=key-submit]");
      await waitForText(page, "#keymsg", /refused.*not an admin key/);
      assert.equal(await page.textContent("[data-testid=worker-count]"), "–");
      // The right key: live, the key kept in this tab's sessionStorage.
      await page.fill("[data-testid=key-input]", KEY);
      await page.click("[data-testid=key-submit]");
      await waitForText(page, "[data-testid=connection]", /live/);
      await waitForText(page, "[data-testid=worker-count]", /^1$/);
      await waitForText(page, 'tr[data-worker-id="dash-key-w1"]', /serving/);
      const stored = await page.evaluate(() =>
        (globalThis as unknown as { sessionStorage: { getItem(k: string): string | null } })
          .sessionStorage.getItem("svc.api-key")
      );
      assert.equal(stored, KEY);
      // A reload keeps it (same tab): live without asking again.
      await page.reload();
      await waitForText(page, "[data-testid=connection]", /live/);

      // The worker's own page asks for the worker's key (another origin: another storage).
      await page.goto(`${worker.url}/`);
      await waitForText(page, "[data-testid=connection]", /key needed/);
      await page.fill("[data-testid=key-input]", WORKER_KEY);
      await page.click("[data-testid=key-submit]");
      await waitForText(page, "[data-testid=connection]", /live/);
      await waitForText(page, 'tr[data-model="fixture/dense"]', /available/);

      for (const k of [KEY, CLIENT_KEY, WORKER_KEY]) {
        assert.ok(!urls.some((u) => u.includes(k)), "a key never goes in a URL");
        assert.ok(!router.proc.output().includes(k), "nor in the router's log");
        assert.ok(!worker.proc.output().includes(k), "nor in the worker's log");
      }
      assert.deepEqual(problems, [], "no console errors besides the refused handshakes");
    } finally {
      await browser?.close();
      await worker?.proc.stop();
      await router.proc.stop();
    }
  },
});
