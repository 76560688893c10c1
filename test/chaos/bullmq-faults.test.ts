/**
 * BullMQ Workers on the ZooKeeper backend under faults: a process killed or
 * frozen mid-job loses nothing, and a frozen worker that wakes up late
 * cannot complete a job that ran elsewhere.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { spawnFixture } from '../helpers/process.js';
import { queueEnv } from '../helpers/queue.js';
import { waitFor } from '../helpers/zk.js';

const WORKER = fileURLToPath(new URL('../fixtures/bullmq/worker-process.ts', import.meta.url));
const { Queue, Worker } = withBackend(createZooKeeperBackend);

async function setup(t: { name?: string; after: (fn: () => unknown) => void }, name: string) {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue(name, { connection });
  t.after(() => queue.close());
  const args = (mode: string) =>
    JSON.stringify({ connectionString: env.connection.connectionString, namespace: env.prefix, queue: name, mode });
  return { connection, queue, args };
}

/** A survivor in this process that counts how often it runs each job. */
function survivor(name: string, connection: object, t: { after: (fn: () => unknown) => void }) {
  const runs = new Map<string, number>();
  const worker = new Worker(
    name,
    async (job) => {
      runs.set(job.id as string, (runs.get(job.id as string) ?? 0) + 1);
      return 'survivor';
    },
    { connection: connection as never, concurrency: 5, lockDuration: 2000, stalledInterval: 500 },
  );
  t.after(() => worker.close());
  return runs;
}

test('a BullMQ Worker process killed with SIGKILL mid-job: its jobs complete elsewhere, each once', async (t) => {
  const { connection, queue, args } = await setup(t, 'killed');
  const jobs = await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'k', data: { i } })));
  const victim = spawnFixture(WORKER, [args('hang')]);
  t.after(() => victim.child.kill('SIGKILL'));
  await victim.waitForLine(/^started /);
  const inVictim = victim.lines.filter((l) => l.startsWith('started ')).map((l) => l.slice(8));
  victim.child.kill('SIGKILL');
  await victim.exited;

  const runs = survivor('killed', connection, t);
  const done = async () => Promise.all(jobs.map((j) => queue.getJob(j.id as string)));
  await waitFor(async () => (await done()).every((j) => j?.returnvalue === 'survivor'), {
    timeoutMs: 60_000,
    what: 'every job completed',
  });
  for (const j of jobs) {
    const stored = await queue.getJob(j.id as string);
    assert.equal(stored?.returnvalue, 'survivor');
    assert.equal(runs.get(j.id as string), 1, `job ${j.id} ran once in the survivor`);
  }
  for (const id of inVictim) {
    const stored = await queue.getJob(id);
    assert.equal(stored?.attemptsStarted, 2, `job ${id} was started by the victim, then again`);
  }
});

test('a frozen BullMQ Worker: its jobs run elsewhere, and its late completions are refused', async (t) => {
  const { connection, queue, args } = await setup(t, 'frozen');
  const job = await queue.add('slow', { i: 1 });
  const victim = spawnFixture(WORKER, [
    JSON.stringify({ ...JSON.parse(args('sleep')), sleepMs: 4000, sessionTimeout: 2000 }),
  ]);
  t.after(() => victim.child.kill('SIGKILL'));
  await victim.waitForLine(new RegExp(`^started ${job.id}$`));
  victim.child.kill('SIGSTOP');

  const runs = survivor('frozen', connection, t);
  await waitFor(async () => (await queue.getJob(job.id as string))?.returnvalue === 'survivor', {
    timeoutMs: 60_000,
    what: 'the job completed by the survivor',
  });
  victim.child.kill('SIGCONT');
  // the victim's processor ends 4 s after it started; its completion must be refused
  await victim.waitForLine(/^(error|failed|completed) /, 30_000);
  assert.ok(!victim.lines.includes(`completed ${job.id}`), `victim lines: ${victim.lines.join(' | ')}`);
  const stored = await queue.getJob(job.id as string);
  assert.equal(stored?.returnvalue, 'survivor');
  assert.equal(runs.get(job.id as string), 1);
  assert.equal(await stored?.getState(), 'completed');
});
