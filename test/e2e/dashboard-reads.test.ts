/**
 * The dashboard only looks: `zkq dashboard` on a namespace that does not
 * exist lists no queues and creates nothing, on existing queues it changes
 * no znode, and the board follows queues made and deleted while it runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { createZooKeeperDashboard } from '@zkq/cli';
import { Session } from '@zkq/core';
import { withBackend } from 'bullmq';
import { waitFor } from '../helpers/zk.js';
import { type CliEnv, cliEnv, within, ZkqProcess, zkq } from './cli.js';

/** Runs `fn` with a session at the ZooKeeper root (it creates nothing). */
async function atRoot<T>(env: CliEnv, fn: (root: Session) => Promise<T>): Promise<T> {
  const root = await Session.connect({ connectionString: env.zk });
  try {
    return await fn(root);
  } finally {
    await root.close();
  }
}

/** Every node under the namespace with the zxids of its last change and of its children's. */
function tree(env: CliEnv): Promise<string[]> {
  return atRoot(env, async (root) => {
    const lines: string[] = [];
    const walk = async (path: string) => {
      const stat = await root.exists(path);
      if (!stat) return;
      lines.push(`${path} mzxid=${stat.mzxid} pzxid=${stat.pzxid}`);
      for (const child of (await root.getChildren(path)).sort()) await walk(`${path}/${child}`);
    };
    await walk(`/${env.namespace}`);
    return lines;
  });
}

/** Starts `zkq dashboard` on any free port; resolves with its address. */
async function startDashboard(
  t: { after(fn: () => unknown): void },
  env: CliEnv,
  queues = 0,
): Promise<ZkqProcess & { base: string }> {
  const dashboard = new ZkqProcess(['dashboard', ...env.global, '--port', '0']);
  t.after(() => dashboard.dispose());
  const line = await dashboard.waitForLine(/^dashboard is serving at http:\/\/127\.0\.0\.1:\d+\/ /, 60_000);
  assert.match(line, new RegExp(` \\(${queues} queues? under /${env.namespace}\\)$`));
  return Object.assign(dashboard, { base: /(http:\S+)/.exec(line)?.[1] ?? '' });
}

async function getJson(url: string): Promise<any> {
  const res = await fetch(url);
  assert.equal(res.status, 200, `${url} answered ${res.status}`);
  return res.json();
}

async function stop(dashboard: ZkqProcess): Promise<void> {
  dashboard.kill('SIGTERM');
  const r = await within(dashboard.exited, 60_000, 'dashboard exit');
  assert.equal(r.code, 0, r.stderr);
}

test('dashboard on a namespace that does not exist lists no queues and creates nothing', async (t) => {
  const env = await cliEnv(t);
  const dashboard = await startDashboard(t, env, 0);

  assert.deepEqual((await getJson(`${dashboard.base}api/queues`)).queues, []);
  assert.deepEqual(await getJson(`${dashboard.base}api/redis/stats`), {});
  // (the server's figures come from four-letter words, which a loaded machine may let fail once)
  const zk = await waitFor(
    async () => {
      const json = await getJson(`${dashboard.base}zookeeper.json`);
      return json.server ? json : undefined;
    },
    { what: "the server's figures without a namespace" },
  );
  assert.deepEqual([zk.namespace, zk.queues], [env.namespace, []]);
  assert.ok(zk.server.znodeCount > 0);
  assert.equal((await fetch(dashboard.base)).status, 200, 'the page itself');

  assert.equal(await atRoot(env, (root) => root.exists(`/${env.namespace}`)), null, 'no namespace node');
  await stop(dashboard);
  assert.equal(await atRoot(env, (root) => root.exists(`/${env.namespace}`)), null, 'none after it stopped either');
});

test('dashboard on existing queues changes no znode while it shows them', async (t) => {
  const env = await cliEnv(t);
  for (const args of [
    ['add', 'mail', 'x'],
    ['add', 'mail', 'y', '--delay', '3600000'],
    ['add', 'audit', 'z'],
  ]) {
    const r = await zkq([...args, ...env.global]);
    assert.equal(r.code, 0, r.stderr);
  }
  const before = await tree(env);

  const dashboard = await startDashboard(t, env, 2);
  const { queues } = await getJson(`${dashboard.base}api/queues`);
  assert.deepEqual(
    queues.map((q: { name: string; counts: Record<string, number> }) => [q.name, q.counts.waiting, q.counts.delayed]),
    [
      ['audit', 1, 0],
      ['mail', 1, 1],
    ],
  );
  // What the page asks for besides: every GET route it uses for a queue, a job and the server.
  for (const path of [
    'api/queues?activeQueue=mail&status=delayed&page=1&jobsPerPage=10',
    'api/queues/mail/1',
    'api/queues/mail/1/logs',
    'api/queues/mail/workers',
    'api/queues/mail/metrics',
    'api/queues/mail/rate-limit',
    'api/queues/mail/default-job-options',
    'api/job-schedulers',
    'api/redis/stats',
    'zookeeper.json',
  ]) {
    // answered, not failed (the server's figures may be missing once: four-letter words)
    const res = await fetch(`${dashboard.base}${path}`);
    assert.ok(res.status === 200 || (path === 'api/redis/stats' && res.status === 404), `${path}: ${res.status}`);
  }
  await stop(dashboard); // after every Queue it built has closed

  assert.deepEqual(await tree(env), before, 'not one node created, written or deleted');
});

test('the board shows a queue made after it started, in a namespace made after it, and drops a deleted one', async (t) => {
  const env = await cliEnv(t);
  const connection = { connectionString: env.zk, namespace: env.namespace };
  const dashboard = await createZooKeeperDashboard({ connection, discoveryMs: 50 });
  t.after(() => dashboard.close());
  assert.deepEqual(dashboard.queues(), []);

  const { Queue } = withBackend(createZooKeeperBackend);
  const queue = new Queue('mail', { connection });
  t.after(() => queue.close());
  await queue.add('x', {});
  await waitFor(() => dashboard.queues().includes('mail'), { what: 'the board to find the new queue' });

  await queue.obliterate({ force: true });
  await waitFor(() => dashboard.queues().length === 0, { what: 'the board to drop the obliterated queue' });
  assert.equal(
    await atRoot(env, (root) => root.exists(`/${env.namespace}/mail/meta`)),
    null,
    'the board did not make it again',
  );
});
