/** `zkq worker`: processes jobs, logs each event, drains on SIGTERM, serves metrics. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitFor } from '../helpers/zk.js';
import { cliEnv, EXAMPLES, within, ZkqProcess, zkq, zkqJson } from './cli.js';

const SLEEP = join(EXAMPLES, 'sleep.js');

async function addSleepJobs(global: string[], queue: string, count: number, ms: number): Promise<void> {
  const lines = Array.from({ length: count }, (_, i) => JSON.stringify({ name: 'nap', data: { ms, i } })).join('\n');
  const r = await zkq(['add-bulk', queue, ...global], { input: lines });
  assert.equal(r.code, 0, r.stderr);
}

test('the worker daemon runs jobs, logs each event, and drains in-flight jobs on SIGTERM (exit 0, none lost)', async (t) => {
  const env = await cliEnv(t);
  await addSleepJobs(env.global, 'naps', 12, 400);
  const worker = new ZkqProcess(['worker', 'naps', '--processor', SLEEP, '--concurrency', '3', ...env.global]);
  t.after(() => worker.dispose());
  await worker.waitForLine(/"msg":"job completed"/, 60_000);
  worker.kill('SIGTERM');
  const result = await within(worker.exited, 60_000, 'worker exit after SIGTERM');
  assert.equal(result.code, 0, result.stderr);

  const logs = worker.logs();
  const active = new Set(logs.filter((l) => l.msg === 'job active').map((l) => l.jobId));
  const completed = new Set(logs.filter((l) => l.msg === 'job completed').map((l) => l.jobId));
  assert.ok(active.size >= 1);
  assert.deepEqual([...active].sort(), [...completed].sort(), 'every started job finished before exit');
  for (const l of logs) {
    assert.equal(l.queue, 'naps');
    assert.equal(typeof l.worker, 'string');
  }
  assert.ok(logs.some((l) => l.msg === 'shutting down: finishing running jobs (signal again to abort them)'));

  const stats = await zkqJson(['stats', 'naps', ...env.global]);
  assert.equal(stats.counts.active, 0);
  assert.equal(stats.counts.completed, completed.size);
  assert.equal(stats.counts.completed + stats.counts.waiting, 12, 'no job lost');
  assert.deepEqual(stats.workers, [], 'the worker left the workers/ group');
});

test('a second signal aborts running jobs, exits 130, and leaves the job for other workers', async (t) => {
  const env = await cliEnv(t);
  await addSleepJobs(env.global, 'long', 1, 120_000);
  const worker = new ZkqProcess(['worker', 'long', '--processor', SLEEP, ...env.global]);
  t.after(() => worker.dispose());
  await worker.waitForLine(/"msg":"job active"/, 60_000);
  worker.kill('SIGTERM');
  await worker.waitForLine(/shutting down/, 30_000);
  worker.kill('SIGTERM');
  const result = await within(worker.exited, 30_000, 'worker exit after the second signal');
  assert.equal(result.code, 130, result.stderr);
  await waitFor(async () => (await zkqJson(['stats', 'long', ...env.global])).counts.active === 0, {
    timeoutMs: 30_000,
    what: 'the claim to go with the session',
  });
  const stats = await zkqJson(['stats', 'long', ...env.global]);
  assert.equal(stats.counts.completed, 0);
  assert.equal(stats.counts.waiting, 1, 'the aborted job is waiting again');
});

test('--metrics-port serves the Prometheus metrics', async (t) => {
  const env = await cliEnv(t);
  await addSleepJobs(env.global, 'metered', 4, 50);
  const worker = new ZkqProcess([
    'worker',
    'metered',
    '--processor',
    SLEEP,
    '--metrics-port',
    '0',
    '--name',
    'metered-1',
    ...env.global,
  ]);
  t.after(() => worker.dispose());
  const listening = JSON.parse(await worker.waitForLine(/metrics server listening/)) as { port: number };
  const url = `http://127.0.0.1:${listening.port}`;
  const metric = (text: string, name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const text = await waitFor(
    async () => {
      const body = await (await fetch(`${url}/metrics`)).text();
      // the depth comes from the queue's leader: this worker, once elected
      return metric(body, 'zkq_jobs_completed_total') === 4 && body.includes('zkq_queue_depth{') ? body : undefined;
    },
    { timeoutMs: 60_000, what: '4 completed jobs in the metrics' },
  );
  for (const name of [
    'zkq_jobs_completed_total',
    'zkq_jobs_failed_total',
    'zkq_jobs_stalled_total',
    'zkq_jobs_lost_total',
    'zkq_job_duration_seconds_count',
    'zkq_jobs_active',
    'zkq_queue_depth',
    'zkq_zookeeper_connected',
    'process_cpu_seconds_total',
  ]) {
    assert.notEqual(metric(text, name), undefined, `${name} is served`);
  }
  assert.equal(metric(text, 'zkq_jobs_failed_total'), 0);
  assert.equal(metric(text, 'zkq_job_duration_seconds_count'), 4);
  // the queue's depth per state, from its leader (this lone worker), without a worker label
  assert.match(text, /zkq_queue_depth\{queue="metered",state="waiting"\} 0/);
  assert.match(text, /zkq_queue_depth\{queue="metered",state="completed"\} 4/);
  assert.equal(metric(text, 'zkq_zookeeper_connected'), 1);
  assert.match(text, /zkq_jobs_completed_total\{queue="metered",worker="metered-1"\} 4/);
  assert.equal((await fetch(`${url}/healthz`)).status, 200);
  assert.equal((await fetch(`${url}/nothing`)).status, 404);
  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
});

test('failed jobs are logged with their reason', async (t) => {
  const env = await cliEnv(t);
  const add = await zkq(['add', 'broken', 'x', '--json', ...env.global]);
  assert.equal(add.code, 0, add.stderr);
  const worker = new ZkqProcess(['worker', 'broken', '--processor', 'test/fixtures/cli/always-fail.js', ...env.global]);
  t.after(() => worker.dispose());
  const line = JSON.parse(await worker.waitForLine(/"msg":"job failed"/)) as Record<string, unknown>;
  assert.equal(line.jobId, JSON.parse(add.stdout).id);
  assert.match(String(line.reason), /failed on purpose/);
  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
});

test("the help says its exit codes are zkq's own, and how to get them without npm's wrapper", async () => {
  const r = await zkq(['--help']);
  assert.equal(r.code, 0);
  const epilogue = r.stdout.slice(r.stdout.indexOf('Exit codes:')).replace(/\s+/g, ' ');
  assert.match(epilogue, /130 worker stopped by a second signal/);
  assert.match(epilogue, /through npx or npm exec, a Ctrl-C also ends npm, by the signal, whatever zkq's code/);
  assert.match(epilogue, /run node_modules\/\.bin\/zkq, or zkq on the PATH, to get zkq's/);
});
