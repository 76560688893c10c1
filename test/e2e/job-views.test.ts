/**
 * What `zkq jobs` and `zkq job` show: `--state wait`, due times, the paused state, live progress,
 * the attempt a running job is on, which page of how many jobs, `job --follow`, flows.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FlowProducer } from '@zkq/producer';
import { waitFor } from '../helpers/zk.js';
import { cliEnv, FIXTURES, within, ZkqProcess, zkq, zkqJson } from './cli.js';

test('jobs --state wait is accepted as waiting; delayed jobs show when they are due', async (t) => {
  const env = await cliEnv(t);
  const waiting = await zkqJson(['add', 'w', 'now', ...env.global]);
  const before = Date.now();
  const delayed = await zkqJson(['add', 'w', 'later', '--delay', '600000', ...env.global]);
  const after = Date.now();

  const wait = await zkq(['jobs', 'w', '--state', 'wait', '--json', ...env.global]);
  assert.equal(wait.code, 0, wait.stderr);
  assert.deepEqual(
    JSON.parse(wait.stdout).map((j: { id: string; state: string }) => [j.id, j.state]),
    [[waiting.id, 'waiting']],
  );

  const [listed] = await zkqJson(['jobs', 'w', '--state', 'delayed', ...env.global]);
  assert.equal(listed.id, delayed.id);
  assert.ok(listed.due >= before + 600_000 && listed.due <= after + 600_000, `due ${listed.due}`);
  const table = await zkq(['jobs', 'w', '--state', 'delayed', ...env.global]);
  assert.match(table.stdout, /^ID\s+NAME\s+STATE\s+ATTEMPTS\s+CREATED\s+DUE\s+DATA$/m);
  assert.ok(table.stdout.includes(new Date(listed.due).toISOString()), table.stdout);
  const one = await zkqJson(['job', 'w', delayed.id, ...env.global]);
  assert.equal(one.due, listed.due);
  const shown = await zkq(['job', 'w', delayed.id, ...env.global]);
  assert.match(shown.stdout, new RegExp(`^due\\s+${new Date(listed.due).toISOString()}$`, 'm'));
});

test('on a paused queue a waiting job is paused in every view', async (t) => {
  const env = await cliEnv(t);
  const job = await zkqJson(['add', 'pz', 'x', ...env.global]);
  assert.equal((await zkq(['pause', 'pz', ...env.global])).code, 0);

  assert.equal((await zkqJson(['job', 'pz', job.id, ...env.global])).state, 'paused');
  assert.deepEqual(await zkqJson(['jobs', 'pz', '--state', 'waiting', ...env.global]), []);
  const paused = await zkqJson(['jobs', 'pz', '--state', 'paused', ...env.global]);
  assert.deepEqual(
    paused.map((j: { id: string; state: string }) => [j.id, j.state]),
    [[job.id, 'paused']],
  );
  const counts = (await zkqJson(['stats', 'pz', ...env.global])).counts;
  assert.equal(counts.paused, 1);
  assert.equal(counts.waiting, 0);

  assert.equal((await zkq(['resume', 'pz', ...env.global])).code, 0);
  assert.equal((await zkqJson(['job', 'pz', job.id, ...env.global])).state, 'waiting');
  assert.deepEqual(await zkqJson(['jobs', 'pz', '--state', 'paused', ...env.global]), []);
});

test('job shows the live progress of an active job', async (t) => {
  const env = await cliEnv(t);
  const release = join(mkdtempSync(join(tmpdir(), 'zkq-hold-')), 'release');
  const added = await zkqJson([
    'add',
    'live',
    'hold',
    '--data',
    JSON.stringify({ progress: { step: 3, of: 5 }, release }),
    ...env.global,
  ]);
  const worker = new ZkqProcess(['worker', 'live', '--processor', join(FIXTURES, 'hold.js'), ...env.global]);
  t.after(() => worker.dispose());
  const active = await waitFor(
    async () => {
      const job = await zkqJson(['job', 'live', added.id, ...env.global]);
      return job.state === 'active' && job.progress?.step === 3 ? job : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 200, what: 'the job to be active with its progress' },
  );
  assert.deepEqual(active.progress, { step: 3, of: 5 });
  const table = await zkq(['job', 'live', added.id, ...env.global]);
  assert.match(table.stdout, /^progress\s+\{"step":3,"of":5\}$/m);
  const [listed] = await zkqJson(['jobs', 'live', '--state', 'active', ...env.global]);
  assert.deepEqual(listed.progress, { step: 3, of: 5 });

  writeFileSync(release, '');
  await worker.waitForLine(/"msg":"job completed"/, 60_000);
  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
});

test('stats counts parents waiting for their children; jobs --state waiting-children lists them; job names a parent', async (t) => {
  const env = await cliEnv(t);
  const flows = new FlowProducer({ connection: { connectionString: env.zk }, prefix: env.namespace });
  t.after(() => flows.close());
  const tree = await flows.add({
    name: 'parent',
    queueName: 'fl',
    children: [{ name: 'child', queueName: 'fl', data: { n: 1 } }],
  });
  const child = tree.children?.[0]?.job;

  const counts = (await zkqJson(['stats', 'fl', ...env.global])).counts;
  assert.equal(counts['waiting-children'], 1);
  assert.equal(counts.waiting, 1);
  const listed = await zkqJson(['jobs', 'fl', '--state', 'waiting-children', ...env.global]);
  assert.deepEqual(
    listed.map((j: { id: string; state: string }) => [j.id, j.state]),
    [[tree.job.id, 'waiting-children']],
  );
  assert.equal((await zkqJson(['job', 'fl', tree.job.id, ...env.global])).state, 'waiting-children');
  const shown = await zkq(['job', 'fl', child?.id as string, ...env.global]);
  assert.match(shown.stdout, new RegExp(`^parent\\s+${env.namespace}:fl:${tree.job.id}$`, 'm'));
  assert.equal((await zkqJson(['job', 'fl', child?.id as string, ...env.global])).parentKey, child?.parentKey);
});

test('jobs says which page it shows of how many; counts are said in the singular for one', async (t) => {
  const env = await cliEnv(t);
  const one = await zkq(['add-bulk', 'pages', ...env.global], { input: '{"name":"n","data":{}}\n' });
  assert.match(one.stdout, /^added 1 job to pages in /);
  const lines = Array.from({ length: 24 }, (_, i) => JSON.stringify({ name: 'n', data: { i } })).join('\n');
  assert.match((await zkq(['add-bulk', 'pages', ...env.global], { input: lines })).stdout, /^added 24 jobs to pages/);

  const first = await zkq(['jobs', 'pages', ...env.global]);
  assert.equal(first.code, 0, first.stderr);
  const rows = first.stdout.trimEnd().split('\n');
  assert.equal(rows.length, 1 + 20 + 1, 'a header, 20 jobs and the note');
  assert.equal(
    rows.at(-1),
    'showing 1-20 of 25 waiting jobs (--start 20 --end 39 for the next page, --end -1 for all)',
  );
  const next = await zkq(['jobs', 'pages', '--start', '20', '--end', '39', ...env.global]);
  assert.equal(next.stdout.trimEnd().split('\n').at(-1), 'showing 21-25 of 25 waiting jobs (--end -1 for all)');
  const all = await zkq(['jobs', 'pages', '--end', '-1', ...env.global]);
  assert.equal(all.stdout.trimEnd().split('\n').length, 1 + 25, 'every job, no note');
  assert.equal((await zkqJson(['jobs', 'pages', ...env.global])).length, 20, 'JSON has no note');

  assert.equal((await zkq(['drain', 'pages', ...env.global])).stdout, 'drained 25 jobs from pages\n');
  assert.equal((await zkq(['add', 'pages', 'x', ...env.global])).code, 0);
  assert.equal((await zkq(['drain', 'pages', ...env.global])).stdout, 'drained 1 job from pages\n');
});

test('a running job shows the attempt it runs; job --follow prints its progress until it completes', async (t) => {
  const env = await cliEnv(t);
  const release = join(mkdtempSync(join(tmpdir(), 'zkq-hold-')), 'release');
  const data = JSON.stringify({ progress: { step: 3, of: 5 }, release });
  const added = await zkqJson(['add', 'followed', 'hold', '--data', data, '--attempts', '3', ...env.global]);
  const follow = new ZkqProcess(['job', 'followed', added.id, '--follow', ...env.global]);
  t.after(() => follow.dispose());
  await follow.waitForLine(/following the job until it finishes/);
  assert.match(follow.lines.join('\n'), /^state\s+waiting$/m, 'the job first');

  const worker = new ZkqProcess(['worker', 'followed', '--processor', join(FIXTURES, 'hold.js'), ...env.global]);
  t.after(() => worker.dispose());
  await follow.waitForLine(new RegExp(`active\\s+job ${added.id}\\b`), 60_000);
  await follow.waitForLine(new RegExp(`progress\\s+job ${added.id} data=\\{"step":3,"of":5\\}$`), 60_000);
  const table = await zkq(['jobs', 'followed', '--state', 'active', ...env.global]);
  assert.match(table.stdout, new RegExp(`^${added.id}\\s+hold\\s+active\\s+1/3\\s`, 'm'), 'the attempt that runs');
  const shown = await zkq(['job', 'followed', added.id, ...env.global]);
  assert.match(shown.stdout, /^attempts\s+1\/3, running \(0 finished before it\)$/m);

  writeFileSync(release, '');
  const ended = await within(follow.exited, 60_000, 'follow to end');
  assert.equal(ended.code, 0, ended.stderr);
  assert.match(ended.stdout, new RegExp(`completed job ${added.id} returnvalue=\\{"released":true\\}\\n$`));
  const done = await zkq(['job', 'followed', added.id, ...env.global]);
  assert.match(done.stdout, /^attempts\s+1\/3 made \(1 started\)$/m);

  // A job that finished already: --follow says how it ended, at once.
  const again = await zkq(['job', 'followed', added.id, '--follow', '--json', ...env.global]);
  assert.equal(again.code, 0, again.stderr);
  const [job, last] = again.stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(job.state, 'completed');
  assert.deepEqual(last, { event: 'completed', jobId: added.id, returnvalue: { released: true } });
  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
});

test('job --follow exits 1 when the job fails for good', async (t) => {
  const env = await cliEnv(t);
  const added = await zkqJson(['add', 'doomed', 'x', ...env.global]);
  const follow = new ZkqProcess(['job', 'doomed', added.id, '--follow', '--json', ...env.global]);
  t.after(() => follow.dispose());
  await follow.waitForLine(/following the job until it finishes/);
  const worker = new ZkqProcess(['worker', 'doomed', '--processor', join(FIXTURES, 'always-fail.js'), ...env.global]);
  t.after(() => worker.dispose());
  const ended = await within(follow.exited, 60_000, 'follow to end');
  assert.equal(ended.code, 1, ended.stderr);
  assert.match(ended.stderr, new RegExp(`^zkq: job ${added.id} failed: job ${added.id} failed on purpose$`, 'm'));
  const last = JSON.parse(ended.stdout.trimEnd().split('\n').at(-1) as string);
  assert.deepEqual(last, { event: 'failed', jobId: added.id, failedReason: `job ${added.id} failed on purpose` });
  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
});
