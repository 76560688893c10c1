/**
 * Looking at queues through the built binary: read-only commands create
 * nothing, `zkq queues`, `--state wait`, due times, live progress, the
 * paused state, an existing jobId, and job ids that count 1, 2, 3.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { waitFor } from '../helpers/zk.js';
import { type CliEnv, cliEnv, FIXTURES, within, ZkqProcess, zkq, zkqJson } from './cli.js';

/** Whether `path` exists on the server, asked from a session at the root. */
async function nodeExists(env: CliEnv, path: string): Promise<boolean> {
  const session = await Session.connect({ connectionString: env.zk });
  try {
    return (await session.exists(path)) !== null;
  } finally {
    await session.close();
  }
}

test('read-only commands on a queue that does not exist create nothing and exit 8', async (t) => {
  const env = await cliEnv(t);
  const missing = `zkq: queue typo does not exist under /${env.namespace} (zkq queues lists its queues)\n`;
  for (const args of [
    ['stats', 'typo'],
    ['jobs', 'typo'],
    ['job', 'typo', '1'],
    ['leader', 'typo'],
    ['events', 'typo'],
  ]) {
    const r = await zkq([...args, ...env.global]);
    assert.equal(r.code, 8, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, missing, args.join(' '));
    assert.equal(r.stdout, '');
  }
  assert.equal(await nodeExists(env, `/${env.namespace}`), false, 'not even the namespace was created');

  // In an existing namespace, the queue's tree is not created either.
  assert.equal((await zkq(['add', 'real', 'x', ...env.global])).code, 0);
  const r = await zkq(['stats', 'typo', ...env.global]);
  assert.equal(r.code, 8, r.stderr);
  assert.equal(await nodeExists(env, `/${env.namespace}/typo`), false);
});

test('queues lists the queues under the namespace with their counts', async (t) => {
  const env = await cliEnv(t);
  assert.equal((await zkq(['queues', ...env.global])).stdout, '(none)\n', 'an empty namespace has none');
  assert.equal((await zkq(['add', 'mail', 'x', ...env.global])).code, 0);
  assert.equal((await zkq(['add', 'mail', 'y', '--delay', '600000', ...env.global])).code, 0);
  assert.equal((await zkq(['add', 'audit', 'x', ...env.global])).code, 0);
  assert.equal((await zkq(['pause', 'audit', ...env.global])).code, 0);
  assert.equal((await zkq(['lock', 'l', ...env.global, '--', process.execPath, '-e', '0'])).code, 0);

  const list = await zkqJson(['queues', ...env.global]);
  assert.deepEqual(
    list.map((q: { queue: string; paused: boolean }) => [q.queue, q.paused]),
    [
      ['audit', true],
      ['mail', false],
    ],
    'sorted, without the lock root',
  );
  assert.equal(list[1].counts.waiting, 1);
  assert.equal(list[1].counts.delayed, 1);
  assert.equal(list[0].counts.paused, 1);

  const table = await zkq(['queues', ...env.global]);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^QUEUE\s+PAUSED\s+WAITING\s+PRIORITIZED\s+DELAYED\s+ACTIVE\s+COMPLETED\s+FAILED$/m);
  assert.match(table.stdout, /^audit\s+yes\s+1\s+0\s+0\s+0\s+0\s+0$/m);
  assert.match(table.stdout, /^mail\s+no\s+1\s+0\s+1\s+0\s+0\s+0$/m);
});

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

test('adding an existing jobId says so on stderr and exits 0', async (t) => {
  const env = await cliEnv(t);
  const first = await zkq(['add', 'dup', 'x', '--job-id', 'once', ...env.global]);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stderr, '');
  const again = await zkq(['add', 'dup', 'x', '--job-id', 'once', ...env.global]);
  assert.equal(again.code, 0);
  assert.equal(again.stdout, 'once\n');
  assert.equal(again.stderr, 'zkq: job once already exists in queue dup; it was not added again\n');
  const json = await zkq(['add', 'dup', 'x', '--job-id', 'once', '--json', ...env.global]);
  assert.equal(JSON.parse(json.stdout).existed, true);
  assert.equal((await zkqJson(['add', 'dup', 'x', '--job-id', 'other', ...env.global])).existed, false);

  const lines = ['{"name":"a","opts":{"jobId":"once"}}', '{"name":"b","opts":{"jobId":"fresh"}}'].join('\n');
  const bulk = await zkq(['add-bulk', 'dup', '--json', ...env.global], { input: lines });
  assert.equal(bulk.code, 0, bulk.stderr);
  assert.equal(JSON.parse(bulk.stdout).added, 1);
  assert.equal(JSON.parse(bulk.stdout).existed, 1);
  assert.equal(
    bulk.stderr,
    'zkq: 1 of the jobs already existed in queue dup (same jobId); they were not added again\n',
  );
});

test('job ids count up from 1 across processes, without gaps', async (t) => {
  const env = await cliEnv(t);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await zkq(['add', 'seq', 'x', ...env.global]);
    assert.equal(r.code, 0, r.stderr);
    ids.push(r.stdout.trim());
  }
  assert.deepEqual(ids, ['1', '2', '3']);
  const lines = Array.from({ length: 5 }, () => '{"name":"b"}').join('\n');
  assert.equal((await zkq(['add-bulk', 'seq', ...env.global], { input: lines })).code, 0);
  const waiting = await zkqJson(['jobs', 'seq', '--end', '-1', ...env.global]);
  assert.deepEqual(
    waiting.map((j: { id: string }) => j.id),
    ['1', '2', '3', '4', '5', '6', '7', '8'],
  );
});
