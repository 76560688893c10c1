/**
 * add, add-bulk, stats, jobs, job, pause, resume, retry, obliterate through
 * the built binary; every command that writes to a queue refuses one that
 * does not exist (exit 8) and creates nothing, but for add and add-bulk and
 * pause/resume --create.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { waitFor } from '../helpers/zk.js';
import { type CliEnv, cliEnv, FIXTURES, within, ZkqProcess, zkq, zkqJson } from './cli.js';

test('add prints the job id; job and jobs show it; --json is machine-readable', async (t) => {
  const env = await cliEnv(t);
  const plain = await zkq(['add', 'mail', 'welcome', '--data', '{"to":"ada@example.com"}', ...env.global]);
  assert.equal(plain.code, 0, plain.stderr);
  const id = plain.stdout.trim();
  assert.match(id, /^\d+$/);

  const added = await zkqJson([
    'add',
    'mail',
    'digest',
    '--data',
    '[1,2]',
    '--delay',
    '600000',
    '--attempts',
    '3',
    '--job-id',
    'digest-1',
    ...env.global,
  ]);
  assert.equal(added.id, 'digest-1');
  assert.deepEqual(added.data, [1, 2]);
  assert.equal(added.opts.attempts, 3);

  const job = await zkqJson(['job', 'mail', id, ...env.global]);
  assert.equal(job.id, id);
  assert.equal(job.name, 'welcome');
  assert.deepEqual(job.data, { to: 'ada@example.com' });
  assert.equal(job.state, 'waiting');
  assert.equal((await zkqJson(['job', 'mail', 'digest-1', ...env.global])).state, 'delayed');

  const waiting = await zkqJson(['jobs', 'mail', '--state', 'waiting', ...env.global]);
  assert.deepEqual(
    waiting.map((j: { id: string }) => j.id),
    [id],
  );
  const delayed = await zkqJson(['jobs', 'mail', '--state', 'delayed', ...env.global]);
  assert.deepEqual(
    delayed.map((j: { id: string }) => j.id),
    ['digest-1'],
  );

  const table = await zkq(['jobs', 'mail', ...env.global]);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^ID\s+NAME\s+STATE/m);
  assert.match(table.stdout, new RegExp(`^${id}\\s+welcome\\s+waiting`, 'm'));

  const missing = await zkq(['job', 'mail', 'nope', ...env.global]);
  assert.equal(missing.code, 5);
  assert.equal(missing.stderr, 'zkq: job nope not found in queue mail\n');
});

test('add-bulk reads NDJSON from a file or stdin and stats counts every state', async (t) => {
  const env = await cliEnv(t);
  const fromFile = await zkqJson(['add-bulk', 'bulk', '--file', join(FIXTURES, 'jobs.ndjson'), ...env.global]);
  assert.equal(fromFile.added, 4);
  const lines = Array.from({ length: 2500 }, (_, i) => JSON.stringify({ name: 'n', data: { i } })).join('\n');
  const fromStdin = await zkq(['add-bulk', 'bulk', '--batch', '1000', ...env.global], { input: `${lines}\n` });
  assert.equal(fromStdin.code, 0, fromStdin.stderr);
  assert.match(fromStdin.stdout, /^added 2500 jobs to bulk in [\d.]+ s \(\d+ jobs\/s\)$/m);

  const stats = await zkqJson(['stats', 'bulk', ...env.global]);
  assert.equal(stats.queue, 'bulk');
  assert.equal(stats.paused, false);
  assert.equal(stats.leader, null);
  assert.deepEqual(stats.workers, []);
  assert.equal(stats.counts.waiting, 2502);
  assert.equal(stats.counts.prioritized, 1);
  assert.equal(stats.counts.delayed, 1);
  assert.equal(stats.counts.active, 0);
  assert.equal((await zkqJson(['job', 'bulk', 'my-job-4', ...env.global])).name, 'custom');

  const bad = await zkq(['add-bulk', 'bulk', ...env.global], { input: '{"name":"ok","data":{}}\n{"data":{}}\n' });
  assert.equal(bad.code, 2);
  assert.equal(bad.stderr, 'zkq: line 2: expected {"name": string, "data": any, "opts": object}\n');
  assert.equal((await zkqJson(['stats', 'bulk', ...env.global])).counts.waiting, 2502, 'a bad line adds nothing');
});

test('stats lists live workers; pause and resume stop and restart claiming', async (t) => {
  const env = await cliEnv(t);
  const paused = await zkqJson(['pause', 'pp', '--create', ...env.global]);
  assert.deepEqual(paused, { queue: 'pp', paused: true });
  const add = await zkq(['add', 'pp', 'nap', '--data', '{"ms":10}', ...env.global]);
  assert.equal(add.code, 0, add.stderr);
  const worker = new ZkqProcess([
    'worker',
    'pp',
    '--processor',
    'examples/processors/sleep.js',
    '--name',
    'pp-worker',
    '--concurrency',
    '2',
    ...env.global,
  ]);
  t.after(() => worker.dispose());
  await worker.waitForLine(/worker ready/);
  const stats = await zkqJson(['stats', 'pp', ...env.global]);
  assert.equal(stats.paused, true);
  assert.equal(stats.counts.paused, 1, 'the job waits while paused');
  assert.equal(stats.workers.length, 1);
  assert.equal(stats.workers[0].id, 'pp-worker');
  assert.equal(stats.workers[0].concurrency, 2);
  assert.equal(stats.workers[0].pid, worker.child.pid);
  const table = await zkq(['stats', 'pp', ...env.global]);
  assert.match(table.stdout, /^paused\s+yes$/m);
  assert.match(table.stdout, /^pp-worker\s+\S+\s+\d+\s+2\s+/m);

  assert.equal((await zkq(['resume', 'pp', ...env.global])).stdout, 'resumed pp\n');
  await worker.waitForLine(/"msg":"job completed"/);
  assert.equal((await zkqJson(['stats', 'pp', ...env.global])).counts.completed, 1);
  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
});

test('retry moves failed jobs back to waiting', async (t) => {
  const env = await cliEnv(t);
  for (let i = 0; i < 3; i++) assert.equal((await zkq(['add', 'rt', 'x', ...env.global])).code, 0);
  const worker = new ZkqProcess(['worker', 'rt', '--processor', join(FIXTURES, 'always-fail.js'), ...env.global]);
  t.after(() => worker.dispose());
  await waitFor(async () => (await zkqJson(['stats', 'rt', ...env.global])).counts.failed === 3, {
    timeoutMs: 60_000,
    what: '3 failed jobs',
  });
  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
  const failed = await zkqJson(['jobs', 'rt', '--state', 'failed', ...env.global]);
  assert.equal(failed.length, 3);
  assert.match(failed[0].failedReason, /failed on purpose/);

  const r = await zkq(['retry', 'rt', '--json', ...env.global]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).retried, 3);
  const stats = await zkqJson(['stats', 'rt', ...env.global]);
  assert.equal(stats.counts.failed, 0);
  assert.equal(stats.counts.waiting, 3);
});

test('obliterate refuses without --yes off a terminal, and deletes the queue with it', async (t) => {
  const env = await cliEnv(t);
  assert.equal((await zkq(['add', 'gone', 'x', ...env.global])).code, 0);
  const refused = await zkq(['obliterate', 'gone', ...env.global]);
  assert.equal(refused.code, 2);
  assert.equal(refused.stderr, 'zkq: refusing to obliterate without --yes when not run from a terminal\n');
  assert.equal((await zkqJson(['stats', 'gone', ...env.global])).counts.waiting, 1, 'nothing was deleted');

  const r = await zkq(['obliterate', 'gone', '--yes', '--json', ...env.global]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { queue: 'gone', obliterated: true });
  const stats = await zkq(['stats', 'gone', ...env.global]);
  assert.equal(stats.code, 8, 'the queue is gone');
});

test('drain removes waiting jobs; clean runs', async (t) => {
  const env = await cliEnv(t);
  for (let i = 0; i < 3; i++) assert.equal((await zkq(['add', 'dr', 'x', ...env.global])).code, 0);
  const drained = await zkq(['drain', 'dr', '--json', ...env.global]);
  assert.equal(drained.code, 0, drained.stderr);
  assert.equal(JSON.parse(drained.stdout).removed, 3);
  const cleaned = await zkq(['clean', 'dr', '--grace', '0', '--state', 'completed', '--json', ...env.global]);
  assert.equal(cleaned.code, 0, cleaned.stderr);
});

test('promote, remove and retry --job act on single jobs', async (t) => {
  const env = await cliEnv(t);
  const later = await zkqJson(['add', 'one', 'later', '--delay', '600000', ...env.global]);
  const r = await zkq(['promote', 'one', '--json', ...env.global]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).promoted, 1);
  assert.equal((await zkqJson(['job', 'one', later.id, ...env.global])).state, 'waiting');

  const delayed = await zkqJson(['add', 'one', 'later', '--delay', '600000', ...env.global]);
  assert.deepEqual(await zkqJson(['promote', 'one', '--job', delayed.id, ...env.global]), {
    queue: 'one',
    promoted: [delayed.id],
  });
  assert.equal((await zkqJson(['job', 'one', delayed.id, ...env.global])).state, 'waiting');

  assert.equal((await zkq(['remove', 'one', later.id, ...env.global])).stdout, `removed job ${later.id}\n`);
  assert.equal((await zkq(['job', 'one', later.id, ...env.global])).code, 5);
  assert.equal((await zkq(['remove', 'one', 'nope', ...env.global])).code, 5);

  const worker = new ZkqProcess(['worker', 'one', '--processor', join(FIXTURES, 'always-fail.js'), ...env.global]);
  t.after(() => worker.dispose());
  await waitFor(async () => (await zkqJson(['job', 'one', delayed.id, ...env.global])).state === 'failed', {
    timeoutMs: 60_000,
    what: 'the job to fail',
  });
  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
  assert.equal((await zkq(['retry', 'one', '--job', delayed.id, ...env.global])).code, 0);
  assert.equal((await zkqJson(['job', 'one', delayed.id, ...env.global])).state, 'waiting');
});

/** Whether `path` exists on the server, asked from a session at the root. */
async function nodeExists(env: CliEnv, path: string): Promise<boolean> {
  const session = await Session.connect({ connectionString: env.zk });
  try {
    return (await session.exists(path)) !== null;
  } finally {
    await session.close();
  }
}

/** Every command that writes to a queue, on the queue `typo`. */
const WRITES = [
  ['pause', 'typo'],
  ['resume', 'typo'],
  ['retry', 'typo'],
  ['retry', 'typo', '--job', '1'],
  ['promote', 'typo'],
  ['promote', 'typo', '--job', '1'],
  ['remove', 'typo', '1'],
  ['clean', 'typo', '--grace', '0'],
  ['drain', 'typo'],
  ['obliterate', 'typo', '--yes'],
  ['migrate', 'typo'],
  ['cancel', 'typo', '1'],
];

test('write commands on a queue that does not exist create nothing and exit 8', async (t) => {
  const env = await cliEnv(t);
  const missing = `zkq: queue typo does not exist under /${env.namespace} (zkq queues lists its queues)\n`;
  const refuseEvery = async () => {
    for (const args of WRITES) {
      const r = await zkq([...args, ...env.global]);
      assert.equal(r.code, 8, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr, missing, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
    }
  };
  await refuseEvery();
  assert.equal(await nodeExists(env, `/${env.namespace}`), false, 'not even the namespace was created');

  // In an existing namespace, the queue's tree is not created either, and no command lists it.
  assert.equal((await zkq(['add', 'real', 'x', ...env.global])).code, 0);
  await refuseEvery();
  assert.equal(await nodeExists(env, `/${env.namespace}/typo`), false);
  assert.deepEqual(
    (await zkqJson(['queues', ...env.global])).map((q: { queue: string }) => q.queue),
    ['real'],
  );
});

test('pause --create sets the flag of a new queue before its first job; resume --create too', async (t) => {
  const env = await cliEnv(t);
  assert.equal((await zkq(['pause', 'early', '--create', ...env.global])).stdout, 'paused early\n');
  const queues = await zkqJson(['queues', ...env.global]);
  assert.deepEqual(
    queues.map((q: { queue: string; paused: boolean }) => [q.queue, q.paused]),
    [['early', true]],
  );
  assert.equal((await zkq(['resume', 'fresh', '--create', ...env.global])).stdout, 'resumed fresh\n');
  assert.equal((await zkqJson(['stats', 'fresh', ...env.global])).paused, false);
});
