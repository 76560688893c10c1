/// <reference lib="dom" />
// The functions handed to page.evaluate run in the page.
/**
 * No other origin can drive `zkq dashboard`. Each attack here worked on 0.2:
 * a cross-site `text/plain` POST (a "simple" request, no CORS preflight)
 * added a job, and a request under a rebound host name (DNS rebinding)
 * paused the queue. Tried from raw HTTP requests, whose headers are the
 * attacker's to choose, and from a page served on another origin in a real
 * headless Chromium. The board's own writes still work; credentials and the
 * read-only default beyond loopback are checked too.
 */
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { ensureChromium } from '@zkq/testing';
import { withBackend } from 'bullmq';
import puppeteer from 'puppeteer-core';
import { type CliEnv, cliEnv, ZkqProcess } from './cli.js';

interface Reply {
  status: number;
  body: string;
}

/** One HTTP request with exactly the headers given (Host included): what curl or a rebinding page sends. */
function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Reply> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: url.pathname,
        headers: {
          host: url.host,
          ...headers,
          ...(body !== undefined ? { 'content-length': Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function queueOf(t: { after(fn: () => unknown): void }, env: CliEnv, name: string) {
  const { Queue } = withBackend(createZooKeeperBackend);
  const queue = new Queue(name, { connection: { connectionString: env.zk, namespace: env.namespace } });
  t.after(() => queue.close());
  await queue.add('seed', { n: 0 }); // the queue exists before the board looks
  return queue;
}

async function startDashboard(
  t: { after(fn: () => unknown): void },
  args: string[],
  envVars: NodeJS.ProcessEnv = {},
): Promise<{ base: string; mode: string }> {
  const dashboard = new ZkqProcess(['dashboard', '--port', '0', ...args], { env: envVars });
  t.after(() => dashboard.dispose());
  const line = await dashboard.waitForLine(/^dashboard is serving at http:\/\/\S+ /, 60_000);
  const mode = await dashboard.waitForLine(/^read-(only|write)/, 10_000);
  const port = /:(\d+)\//.exec(line)?.[1];
  return { base: `http://127.0.0.1:${port}/`, mode };
}

const ADD = '/api/queues/mail/add';
const PAUSE = '/api/queues/mail/pause';
const JOB = JSON.stringify({ name: 'planted', data: { by: 'attacker' }, options: {} });

test('requests from another origin or under another host name change nothing; the board itself still writes', async (t) => {
  const env = await cliEnv(t);
  const queue = await queueOf(t, env, 'mail');
  const { base, mode } = await startDashboard(t, env.global);
  assert.match(mode, /^read-write; answers to localhost, 127\.0\.0\.1, \[::1\]$/);
  const evil = 'http://attacker.example';

  // A cross-site form POST: text/plain, the attacker's Origin.
  const form = await send(base, 'POST', ADD, { 'content-type': 'text/plain', origin: evil }, JOB);
  assert.equal(form.status, 403, form.body);
  assert.equal(JSON.parse(form.body).error, 'cross_origin');
  // The same without an Origin (an old browser, a stripped header): not JSON, refused.
  const plain = await send(base, 'POST', ADD, { 'content-type': 'text/plain' }, JOB);
  assert.equal(plain.status, 415, plain.body);
  const urlencoded = await send(base, 'POST', ADD, { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1');
  assert.equal(urlencoded.status, 415, urlencoded.body);
  // JSON from another site (it would need a preflight, but a rebinding or misconfigured proxy is not a browser).
  const crossJson = await send(base, 'POST', ADD, { 'content-type': 'application/json', origin: evil }, JOB);
  assert.equal(crossJson.status, 403, crossJson.body);
  const crossSite = await send(base, 'PUT', PAUSE, { 'sec-fetch-site': 'cross-site' });
  assert.equal(crossSite.status, 403, crossSite.body);

  // DNS rebinding: the browser thinks it is on attacker.example, so the request is "same-origin" and its Host is that name.
  const rebound = { host: `attacker.example:${new URL(base).port}` };
  const pause = await send(base, 'PUT', PAUSE, { ...rebound, origin: `http://${rebound.host}` });
  assert.equal(pause.status, 421, pause.body);
  assert.equal(JSON.parse(pause.body).error, 'bad_host');
  const read = await send(base, 'GET', '/api/queues', rebound);
  assert.equal(read.status, 421, 'reads too: a rebound page must not read the jobs either');
  assert.equal((await send(base, 'GET', '/', { host: 'localhost.attacker.example' })).status, 421);

  assert.equal(await queue.isPaused(), false);
  assert.deepEqual(
    (await queue.getJobs(['waiting'])).map((j) => j.name),
    ['seed'],
    'no job was planted',
  );

  // The board's own requests: same origin, JSON body (POST) or none (PUT).
  const own = { origin: base.replace(/\/$/, ''), 'sec-fetch-site': 'same-origin' };
  const added = await send(base, 'POST', ADD, { ...own, 'content-type': 'application/json' }, JOB);
  assert.equal(added.status, 200, added.body);
  const paused = await send(base, 'PUT', PAUSE, own);
  assert.equal(paused.status, 200, paused.body);
  assert.equal(await queue.isPaused(), true);
  // A client that is no browser (curl) sends no Origin: JSON is accepted.
  const resumed = await send(base, 'PUT', '/api/queues/mail/resume');
  assert.equal(resumed.status, 200, resumed.body);
  assert.equal(await queue.isPaused(), false);
});

test('a page on another origin in Chromium cannot add a job or pause the queue', async (t) => {
  const chromium = ensureChromium();
  const env = await cliEnv(t);
  const queue = await queueOf(t, env, 'mail');
  const { base } = await startDashboard(t, env.global);

  // The attacker's page, on another origin (another port of the same machine).
  const target = base.replace(/\/$/, '');
  const page = `<!doctype html><html><body>
<form id="f" method="POST" action="${target}${ADD}" enctype="text/plain" target="sink">
<input name='{"name":"planted","data":{},"x":"' value='"}'></form>
<iframe name="sink"></iframe>
<script>
window.attempts = Promise.allSettled([
  fetch('${target}${ADD}', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: '${JOB}' }),
  fetch('${target}${PAUSE}', { method: 'PUT', mode: 'no-cors' }),
  fetch('${target}${ADD}', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '${JOB}' }),
]).then((r) => r.map((x) => x.status));
document.getElementById('f').submit();
</script></body></html>`;
  const site = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => site.close(() => resolve())));
  // localhost, not 127.0.0.1: another origin even on the same port numbering
  const attacker = `http://localhost:${(site.address() as AddressInfo).port}/`;

  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  t.after(() => browser.close());
  const tab = await browser.newPage();
  const seen: string[] = [];
  tab.on('response', (r) => {
    if (r.url().startsWith(target)) seen.push(`${r.request().method()} ${new URL(r.url()).pathname} ${r.status()}`);
  });
  await tab.goto(attacker, { waitUntil: 'domcontentloaded', timeout: 60_000 });
  await tab.waitForFunction('window.attempts !== undefined', { timeout: 30_000 });
  await tab.evaluate('window.attempts');
  // the form's navigation in the iframe: wait until the dashboard answered it
  const deadline = Date.now() + 30_000;
  while (!seen.some((s) => s.startsWith(`POST ${ADD}`)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.diagnostic(`dashboard answered the page: ${seen.join('; ')}`);
  assert.ok(
    seen.some((s) => s.startsWith(`POST ${ADD}`)),
    'the cross-site POST reached the dashboard',
  );
  for (const s of seen.filter((x) => !x.startsWith('OPTIONS '))) {
    assert.doesNotMatch(s, / 200$/, `${s}: the dashboard accepted a cross-site write`);
  }

  assert.equal(await queue.isPaused(), false);
  assert.deepEqual(
    (await queue.getJobs(['waiting'])).map((j) => j.name),
    ['seed'],
  );
});

test('with credentials every request needs them; beyond loopback without them the board is read-only', async (t) => {
  const env = await cliEnv(t);
  const queue = await queueOf(t, env, 'mail');

  const bearer = await startDashboard(t, env.global, { ZKQ_HTTP_AUTH: 'bearer:s3cret-token' });
  assert.match(bearer.mode, /^read-write, bearer auth;/);
  assert.equal((await send(bearer.base, 'GET', '/api/queues')).status, 401);
  assert.equal((await send(bearer.base, 'GET', '/api/queues', { authorization: 'Bearer wrong-token!' })).status, 401);
  assert.equal((await send(bearer.base, 'GET', '/api/queues', { authorization: 'Bearer s3cret-token' })).status, 200);

  const basic = await startDashboard(t, [...env.global, '--http-auth', 'basic:ops:pa:ss']);
  const good = `Basic ${Buffer.from('ops:pa:ss').toString('base64')}`;
  assert.equal((await send(basic.base, 'PUT', PAUSE)).status, 401);
  assert.equal(
    (await send(basic.base, 'PUT', PAUSE, { authorization: `Basic ${Buffer.from('ops:nope').toString('base64')}` }))
      .status,
    401,
  );
  assert.equal(await queue.isPaused(), false);
  assert.equal((await send(basic.base, 'PUT', PAUSE, { authorization: good })).status, 200);
  assert.equal(await queue.isPaused(), true);

  // Every interface, no credentials: it looks only, and says so.
  const open = await startDashboard(t, [...env.global, '--host', '0.0.0.0', '--allowed-host', 'jobs.example.com']);
  assert.match(open.mode, /^read-only; answers to localhost, 127\.0\.0\.1, \[::1\], jobs\.example\.com$/);
  const refused = await send(open.base, 'PUT', '/api/queues/mail/resume');
  assert.equal(refused.status, 403);
  assert.equal(JSON.parse(refused.body).error, 'read_only');
  assert.equal(await queue.isPaused(), true);
  const named = await send(open.base, 'GET', '/api/queues', { host: 'jobs.example.com' });
  assert.equal(named.status, 200, 'an allowed host name is served');
});
