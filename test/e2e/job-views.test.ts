/** What `zkq jobs` and `zkq job` show: `--state wait`, due times, the paused state, live progress, flows. */
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
