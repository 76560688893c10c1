import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { spawnFixture } from '../helpers/process.js';
import { queueEnv } from '../helpers/queue.js';
import { waitFor } from '../helpers/zk.js';

const WORKER = fileURLToPath(new URL('../fixtures/queue/worker-process.ts', import.meta.url));

test('a worker process killed with SIGKILL mid-job: its jobs complete on another worker, none lost', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('kill', env);
  t.after(() => queue.close());
  const jobs = await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'k', data: i })));
  const victim = spawnFixture(WORKER, [
    JSON.stringify({ ...env.connection, sessionTimeout: 2000, prefix: env.prefix, queue: 'kill', mode: 'hang' }),
  ]);
  t.after(() => victim.child.kill('SIGKILL'));
  await victim.waitForLine(/^ready$/);
  await victim.waitForLine(/^started /);
  const inVictim = victim.lines.filter((l) => l.startsWith('started ')).map((l) => l.slice(8));
  assert.ok(inVictim.length > 0);
  victim.child.kill('SIGKILL');
  await victim.exited;

  const completedBy = new Map<string, number>();
  const survivor = new Worker(
    'kill',
    async (job) => {
      completedBy.set(job.id, (completedBy.get(job.id) ?? 0) + 1);
      return 'ok';
    },
    { ...env, concurrency: 5 },
  );
  t.after(() => survivor.close());
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === jobs.length, {
    timeoutMs: 60_000,
    what: 'every job completed',
  });
  for (const j of jobs) {
    const stored = await queue.getJob(j.id);
    assert.equal(stored?.returnvalue, 'ok', `job ${j.id} completed`);
    assert.equal(completedBy.get(j.id), 1, `job ${j.id} completed once`);
  }
  for (const id of inVictim) {
    const stored = await queue.getJob(id);
    assert.equal(stored?.attemptsStarted, 2, `job ${id} was started by the victim, then again`);
    assert.equal(stored?.stalledCounter, 1, `the dead attempt of job ${id} counts as a stall`);
  }
});
