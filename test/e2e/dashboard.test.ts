/// <reference lib="dom" />
// The functions handed to page.evaluate/waitForFunction run in the page.
/**
 * `zkq dashboard` in a real headless Chromium: bull-board lists the queue,
 * shows the counts the Queue API gives, its retry button moves a failed
 * job back to waiting, and its server panel is titled "ZooKeeper details";
 * pause, resume, promote and remove through the board's API reach the queue.
 * Writes screenshots under test/artifacts/.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { ensureChromium } from '@zkq/testing';
import { withBackend } from 'bullmq';
import puppeteer, { type Page } from 'puppeteer-core';
import { waitFor } from '../helpers/zk.js';
import { cliEnv, within, ZkqProcess } from './cli.js';

const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
/** Generous: a loaded 2-core machine renders slowly. */
const UI_TIMEOUT_MS = 60_000;
const SHOWN_STATES = ['waiting', 'delayed', 'completed', 'failed'] as const;

/** The badge count of each status tab of the open queue (a tab without a badge counts 0). */
function tabCounts(page: Page): Promise<Record<string, number>> {
  return page.$$eval('ul[class*="statusTabs"] li a', (links) =>
    Object.fromEntries(
      links.map((a) => {
        const status = new URL((a as HTMLAnchorElement).href).searchParams.get('status') ?? 'latest';
        const badge = a.querySelector('span[class*="badge"]');
        return [status, Number(badge?.textContent?.trim() || 0)];
      }),
    ),
  );
}

test('dashboard shows a queue in Chromium with its counts, and its retry button retries a failed job', async (t) => {
  const chromium = ensureChromium();
  const env = await cliEnv(t);
  const { Queue, Worker } = withBackend(createZooKeeperBackend);
  const connection = { connectionString: env.zk, namespace: env.namespace };
  const name = 'mail';
  const queue = new Queue(name, { connection });
  t.after(() => queue.close());

  // A completed and a failed job, made by a worker; then jobs left waiting and delayed.
  await queue.add('ok', { n: 1 });
  const bad = await queue.add('bad', { n: 2 });
  const worker = new Worker(
    name,
    async (job) => {
      if (job.name === 'bad') throw new Error('boom');
      return 'sent';
    },
    { connection },
  );
  await waitFor(
    async () => {
      const c = await queue.getJobCounts('completed', 'failed');
      return c.completed === 1 && c.failed === 1;
    },
    { timeoutMs: 60_000, intervalMs: 100, what: 'one completed and one failed job' },
  );
  await worker.close();
  const later = await queue.add('later', { n: 3 }, { delay: 3_600_000 });
  await queue.add('queued', { n: 4 });
  await queue.add('queued', { n: 5 });
  const expected = await queue.getJobCounts(...SHOWN_STATES);
  assert.deepEqual(expected, { waiting: 2, delayed: 1, completed: 1, failed: 1 });

  const dashboard = new ZkqProcess(['dashboard', ...env.global, '--port', '0', '--host', '127.0.0.1']);
  t.after(() => dashboard.dispose());
  const line = await dashboard.waitForLine(/^dashboard is serving at http:\/\/127\.0\.0\.1:\d+\/ /, 60_000);
  const base = /(http:\S+)/.exec(line)?.[1] ?? '';

  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  t.after(() => browser.close());
  const page = await browser.newPage();
  page.setDefaultTimeout(UI_TIMEOUT_MS);
  await page.setViewport({ width: 1400, height: 1000 });
  const screenshot = async (label: string) => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const path = join(ARTIFACTS, `dashboard-${label}.png`);
    await page.screenshot({ path });
    t.diagnostic(`screenshot: ${path}`);
    console.log(`dashboard screenshot: ${path}`);
  };

  try {
    // The page loads and lists the queue, with ZooKeeper's facts as its description.
    await page.goto(base, { waitUntil: 'domcontentloaded', timeout: UI_TIMEOUT_MS });
    await page.waitForSelector(`nav a[title="${name}"]`);
    await page.click(`nav a[title="${name}"]`);
    // (a poll whose four-letter words failed, on a loaded machine, says "figures unavailable"
    // until the next one: wait for the description, then check the text it had)
    const described = await page.waitForFunction(
      (n) => {
        const text = document.querySelector('p[class*="description"]')?.textContent ?? '';
        return document.querySelector('h1')?.textContent === n && /znodes; /.test(text) && text;
      },
      {},
      name,
    );
    const description = String(await described.jsonValue());
    assert.match(
      description,
      /^leader: \S+ · \d+ live workers? · ZooKeeper [\d.]+ standalone, \d+ znodes; 127\.0\.0\.1:\d+ standalone$/,
    );

    // The counts shown are the Queue's.
    await page.waitForFunction(
      (want: Record<string, number>) => {
        const links = Array.from(document.querySelectorAll('ul[class*="statusTabs"] li a'));
        const shown = Object.fromEntries(
          links.map((a) => [
            new URL((a as HTMLAnchorElement).href).searchParams.get('status'),
            Number(a.querySelector('span[class*="badge"]')?.textContent?.trim() || 0),
          ]),
        );
        return Object.entries(want).every(([state, n]) => shown[state] === n);
      },
      { timeout: UI_TIMEOUT_MS },
      expected,
    );
    const shown = await tabCounts(page);
    for (const state of SHOWN_STATES) assert.equal(shown[state], expected[state], state);
    // The latest jobs are listed (the failed one among them) before the picture is taken.
    await page.waitForSelector(`ul[class*="statusTabs"]`);
    await page.waitForSelector(`div[class*="card"] a[href*="/queue/${name}/${bad.id}"]`);
    await screenshot(env.namespace);

    // Retry the failed job from its card.
    await page.click(`a[href$="?status=failed"]`);
    const card = `div[class*="card"]:has(a[href*="/queue/${name}/${bad.id}?"])`;
    await page.waitForSelector(`${card} ul[class*="jobActions"] button`);
    await page.click(`${card} ul[class*="jobActions"] li:first-child button`);
    // bull-board asks first; the question names what the button does.
    await page.waitForSelector('::-p-text(want to retry this job)');
    const retried = page.waitForResponse((r) => r.request().method() !== 'GET' && /\/retry/.test(r.url()));
    await page.locator('button::-p-text(Confirm)').click();
    const response = await retried;
    assert.match(response.url(), new RegExp(`/api/queues/${name}/${bad.id}/retry`));
    assert.ok(response.ok(), `retry answered ${response.status()}`);

    // The job moved: the Queue API says waiting (no worker runs), and the board follows.
    const state = await waitFor(
      async () => {
        const s = await queue.getJobState(bad.id ?? '');
        return s === 'failed' ? undefined : s;
      },
      { timeoutMs: UI_TIMEOUT_MS, intervalMs: 100, what: 'the retried job leaving failed' },
    );
    assert.equal(state, 'waiting');
    assert.deepEqual(await queue.getJobCounts('waiting', 'failed'), { waiting: 3, failed: 0 });
    await page.waitForFunction(
      () =>
        !document.querySelector('a[href$="?status=failed"] span[class*="badge"]') ||
        document.querySelector('a[href$="?status=failed"] span[class*="badge"]')?.textContent?.trim() === '0',
      { timeout: UI_TIMEOUT_MS },
    );

    // The header's server panel names ZooKeeper (bull-board's own title is "Redis details"), and so does the page.
    // (once the retry's question has gone: a click while a dialog closes is taken as a click outside it)
    await page.waitForFunction(() => !document.querySelector('[role="dialog"], [role="alertdialog"]'));
    await page.click('header ul[class*="actions"] > li:first-child > button');
    await page.waitForSelector('[role="dialog"] ul[class*="redisStats"] li');
    assert.equal(await page.$eval('[role="dialog"] h2', (h) => h.textContent), 'ZooKeeper details');
    const rows = await page.$$eval('[role="dialog"] ul[class*="redisStats"] li', (items) =>
      Object.fromEntries(items.map((li) => [li.children[0]?.textContent, li.children[1]?.textContent])),
    );
    assert.match(rows.Version ?? '', /^ZooKeeper \d+\.\d+/);
    assert.equal(rows.Mode, 'standalone');
    assert.match(rows.Server ?? '', /^127\.0\.0\.1:\d+, \d+ znodes, \d+ watches; 127\.0\.0\.1:\d+ standalone$/);
    assert.match(rows['Outstanding requests'] ?? '', /^\d+$/);
    assert.doesNotMatch(await page.evaluate(() => document.body.innerText), /Redis/);
    await page.waitForFunction(() =>
      document
        .querySelector('[role="dialog"]')
        ?.getAnimations({ subtree: true })
        .every((a) => a.playState !== 'running'),
    );
    await screenshot(`${env.namespace}-zookeeper`);
  } catch (err) {
    await screenshot(`${env.namespace}-failure`).catch(() => {});
    throw err;
  }

  // ZooKeeper's figures where bull-board shows Redis's, and the JSON route linked from the board.
  const stats = await waitFor(
    async () => {
      const r = await fetch(`${base}api/redis/stats`);
      return r.ok ? ((await r.json()) as Record<string, any>) : undefined;
    },
    { what: "the server's figures (a failed four-letter word is asked again after 2 s)" },
  );
  assert.match(stats.version, /^ZooKeeper \d/);
  assert.equal(stats.mode, 'standalone');
  const zk = (await (await fetch(`${base}zookeeper.json`)).json()) as Record<string, any>;
  assert.equal(zk.namespace, env.namespace);
  assert.ok(zk.server.znodeCount > 0);
  assert.deepEqual(
    zk.queues.map((q: { queue: string }) => q.queue),
    [name],
  );

  // The board's other actions reach the queue too, through the API its buttons call.
  const put = async (path: string) => {
    const r = await fetch(`${base}api/queues/${name}/${path}`, { method: 'PUT' });
    assert.ok(r.ok, `${path} answered ${r.status}`);
  };
  await put('pause');
  await waitFor(() => queue.isPaused(), { what: 'the queue paused from the board' });
  await put('resume');
  await waitFor(async () => !(await queue.isPaused()), { what: 'the queue resumed from the board' });
  await put(`${later.id}/promote`);
  assert.equal(await queue.getJobState(later.id ?? ''), 'waiting');
  await put(`${later.id}/clean`);
  assert.equal(await queue.getJob(later.id ?? ''), undefined, 'removed');

  dashboard.kill('SIGTERM');
  const r = await within(dashboard.exited, 60_000, 'dashboard exit');
  assert.equal(r.code, 0, r.stderr);
});
