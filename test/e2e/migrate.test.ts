/**
 * `zkq migrate <queue>` through the built binary: a queue of layout 2 (its
 * clients refuse it, naming the command) is migrated, then a Worker runs
 * every job, the one a dead layout-2 worker left active with its stall
 * counted; refused (exit 1) while a worker is registered, and with --wait
 * it goes on once the worker is gone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { layoutOf, leaveActive, setLayout2 } from '../helpers/layout-2.js';
import { waitFor } from '../helpers/zk.js';
import { type CliEnv, cliEnv, ZkqProcess, zkq, zkqJson } from './cli.js';

async function namespaceSession(t: { after(fn: () => unknown): void }, env: CliEnv): Promise<Session> {
  const session = await Session.connect({ connectionString: env.zk, namespace: `/${env.namespace}` });
  t.after(() => session.close());
  return session;
}

test('zkq migrate moves a layout-2 queue to layout 3; a Worker then runs every job, the once-active one with one stall', async (t) => {
  const env = await cliEnv(t);
  const connection = { connectionString: env.zk };
  const maker = new Queue('mail', { connection, prefix: env.namespace });
  const jobs = await maker.addBulk(Array.from({ length: 5 }, (_, n) => ({ name: 'send', data: { n } })));
  await maker.close();
  const session = await namespaceSession(t, env);
  const once = jobs[1]!.id;
  await leaveActive(session, 'mail', [once]);
  await setLayout2(session, 'mail');

  const refused = await zkq(['add', 'mail', 'send', ...env.global]);
  assert.equal(refused.code, 1, refused.stderr);
  assert.equal(
    refused.stderr,
    "zkq: queue 'mail' has znode layout 2, this zkq needs layout 3: run `zkq migrate mail` (no layout-2 worker may run on it)\n",
  );

  const migrated = await zkqJson(['migrate', 'mail', ...env.global]);
  assert.deepEqual(migrated, { queue: 'mail', migrated: true, from: 2, to: 3, jobsFixed: 1 });
  assert.equal(await layoutOf(session, 'mail'), 3);
  const again = await zkq(['migrate', 'mail', ...env.global]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, 'mail has layout 3 already: nothing to migrate\n');

  const queue = new Queue('mail', { connection, prefix: env.namespace });
  t.after(() => queue.close());
  const runs = new Map<string, number>();
  const worker = new Worker('mail', async (job) => void runs.set(job.id, (runs.get(job.id) ?? 0) + 1), {
    connection,
    prefix: env.namespace,
    concurrency: 2,
  });
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 5, { what: 'five completed' });
  assert.deepEqual([...runs.values()], [1, 1, 1, 1, 1]);
  assert.equal((await queue.getJob(once))?.stalledCounter, 1);
  assert.equal((await queue.getJob(jobs[0]!.id))?.stalledCounter, 0);
});

test('zkq migrate refuses while a worker is registered (exit 1); with --wait it migrates once the worker is gone', async (t) => {
  const env = await cliEnv(t);
  const maker = new Queue('busy', { connection: { connectionString: env.zk }, prefix: env.namespace });
  await maker.add('a', {});
  await maker.close();
  const session = await namespaceSession(t, env);
  await setLayout2(session, 'busy');
  const old = await Session.connect({ connectionString: env.zk, namespace: `/${env.namespace}` });
  t.after(() => old.close());
  await old.create(new QueueLayout('busy').worker('host-1'), Buffer.from('{}'), 'ephemeral');

  const refused = await zkq(['migrate', 'busy', ...env.global]);
  assert.equal(refused.code, 1);
  assert.equal(
    refused.stderr,
    "zkq: queue 'busy' was not migrated: 1 worker registered (stop its workers first, or let the migration wait for them)\n",
  );
  assert.equal(await layoutOf(session, 'busy'), 2);

  const timedOut = await zkq(['migrate', 'busy', '--wait', '--timeout', '200', ...env.global]);
  assert.equal(timedOut.code, 7, timedOut.stderr);
  assert.match(timedOut.stderr, /waiting to migrate queue 'busy' \(1 worker registered\) timed out after 200 ms/);

  const waiting = new ZkqProcess(['migrate', 'busy', '--wait', ...env.global]);
  t.after(() => waiting.dispose());
  waiting.child.stdin?.end();
  await waiting.waitForLine(/^zkq: waiting for 1 worker registered to go$/);
  await old.close();
  const done = await waiting.exited;
  assert.equal(done.code, 0, done.stderr);
  assert.equal(
    done.stdout,
    'migrated busy from layout 2 to layout 3 (0 jobs of dead attempts back to waiting, a stall counted)\n',
  );
  assert.equal(await layoutOf(session, 'busy'), 3);
});
